//! What every eBPF collector shares: libbpf log capture (so libbpf never writes over the
//! TUI), turning load/attach errors into one actionable sentence, and map read helpers.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;

use libbpf_rs::PrintLevel;

static LOG: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const LOG_LINES: usize = 400;

thread_local! {
    /// This thread's share of the log: the collectors load side by side on threads of
    /// their own, and an error is explained from its own object's messages.
    static THREAD_LOG: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
    /// Lines ever pushed to THREAD_LOG (it keeps the last LOG_LINES).
    static THREAD_PUSHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn push_lines(log: &mut VecDeque<String>, msg: &str) {
    for line in msg.lines() {
        if log.len() == LOG_LINES {
            log.pop_front();
        }
        log.push_back(line.to_string());
    }
}

fn capture(level: PrintLevel, msg: String) {
    if matches!(level, PrintLevel::Debug) {
        return;
    }
    if let Ok(mut log) = LOG.lock() {
        push_lines(&mut log, &msg);
    }
    THREAD_LOG.with(|l| push_lines(&mut l.borrow_mut(), &msg));
    THREAD_PUSHED.with(|c| c.set(c.get() + msg.lines().count()));
}

/// Route libbpf's messages into an in-memory log instead of stderr.
pub fn capture_libbpf_log() {
    libbpf_rs::set_print(Some((PrintLevel::Info, capture)));
}

/// The captured libbpf log (for `--debug-bpf` and error messages).
pub fn libbpf_log() -> Vec<String> {
    LOG.lock()
        .map(|l| l.iter().cloned().collect())
        .unwrap_or_default()
}

/// Raise RLIMIT_MEMLOCK for kernels before 5.11 that charge BPF maps to it.
pub fn raise_memlock() {
    let lim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain syscall on a struct we own; failure is harmless (newer kernels ignore it).
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) };
}

/// Why eBPF cannot run at all, checked before trying, in words a user can act on.
pub fn preflight() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 && !has_bpf_caps() {
        return Some(
            "eBPF off: not root and no CAP_BPF+CAP_PERFMON; run with sudo for the kernel's view"
                .to_string(),
        );
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some(
            "eBPF off: this kernel has no BTF (/sys/kernel/btf/vmlinux); it needs CONFIG_DEBUG_INFO_BTF=y"
                .to_string(),
        );
    }
    None
}

fn has_bpf_caps() -> bool {
    // CapEff bits: CAP_PERFMON = 38, CAP_BPF = 39, CAP_SYS_ADMIN = 21.
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let Some(hex) = status.lines().find_map(|l| l.strip_prefix("CapEff:")) else {
        return false;
    };
    let Ok(caps) = u64::from_str_radix(hex.trim(), 16) else {
        return false;
    };
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    has(21) || (has(38) && has(39))
}

/// One line that says what failed and how to fix it.
pub fn explain(what: &str, err: &libbpf_rs::Error) -> String {
    let text = err.to_string();
    let log: Vec<String> = THREAD_LOG.with(|l| l.borrow().iter().cloned().collect());
    let verifier = log.iter().rev().find(|l| {
        l.contains("invalid")
            || l.contains("unknown func")
            || l.contains("R0 ")
            || l.contains("failed")
    });
    let hint = if text.contains("Operation not permitted") || text.contains("EPERM") {
        "permission denied: run as root or grant CAP_BPF+CAP_PERFMON"
    } else if text.contains("No such file") || text.contains("ENOENT") {
        "this kernel lacks the tracepoint or BTF type it needs"
    } else if text.contains("Invalid argument") || text.contains("Permission denied") {
        "the kernel's verifier rejected the program"
    } else {
        "unexpected error"
    };
    match verifier {
        Some(v) => format!("{what}: {hint} ({text}; libbpf: {})", v.trim()),
        None => format!("{what}: {hint} ({text})"),
    }
}

/// This thread's captured libbpf lines pushed since `mark` (a `log_mark()`), as far as
/// the log still holds them.
fn thread_log_since(mark: usize) -> Vec<String> {
    let n = THREAD_PUSHED.with(|c| c.get()).saturating_sub(mark);
    THREAD_LOG.with(|l| {
        let l = l.borrow();
        l.iter().skip(l.len().saturating_sub(n)).cloned().collect()
    })
}

/// Lines pushed to this thread's log so far.
fn log_mark() -> usize {
    THREAD_PUSHED.with(|c| c.get())
}

/// A program the kernel would not take, and the verifier's last words on it (the whole
/// log stays in libbpf's, which `ttop probe -v` prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub prog: String,
    pub why: String,
}

/// The program libbpf says failed to load, and the line of its log that says why.
pub fn failed_program(log: &[String]) -> Option<(String, String)> {
    let prog = log.iter().rev().find_map(|l| {
        let rest = l.split("prog '").nth(1)?;
        let (name, tail) = rest.split_once('\'')?;
        (tail.contains("failed to load") || tail.contains("BPF program load failed"))
            .then(|| name.to_string())
    })?;
    // The verifier's own reason: the last line of the load log before its statistics.
    let mut why = String::new();
    let mut inside = false;
    for l in log {
        if l.contains("-- BEGIN PROG LOAD LOG --") {
            inside = l.contains(&format!("'{prog}'"));
            why.clear();
            continue;
        }
        if l.contains("-- END PROG LOAD LOG --") {
            inside = false;
            continue;
        }
        let t = l.trim_start_matches("libbpf: ").trim();
        if inside
            && !t.is_empty()
            && !t.starts_with("processed ")
            && !t.starts_with("verification time")
        {
            why = t.to_string();
        }
    }
    if why.is_empty() {
        why = log
            .iter()
            .rev()
            .find(|l| l.contains(&format!("'{prog}'")))
            .map(|l| l.trim().to_string())
            .unwrap_or_default();
    }
    Some((prog, why))
}

/// Load an object, leaving out each program this kernel's verifier rejects. libbpf loads
/// all of an object or nothing, and names the program that failed in its log: that
/// program is left out (autoload off) and the object opened and loaded again, up to
/// `max_tries` times. `open_load(off)` opens and configures a fresh object with the
/// programs named in `off` not loaded, and loads it. The checks each collector makes
/// before loading (`kernel::KernelFacts`) leave out what they foresee; this catches the
/// rest, with the verifier's reason. Err: the load failed for a reason that names no
/// program (a map the kernel cannot create, no permission), explained for a person.
pub fn load_degrading<S>(
    what: &str,
    max_tries: usize,
    mut open_load: impl FnMut(&[String]) -> Result<S, libbpf_rs::Error>,
) -> Result<(S, Vec<LeftOut>), String> {
    let mut left: Vec<LeftOut> = Vec::new();
    loop {
        let mark = log_mark();
        let off: Vec<String> = left.iter().map(|l| l.prog.clone()).collect();
        match open_load(&off) {
            Ok(s) => return Ok((s, left)),
            Err(e) => {
                let log = thread_log_since(mark);
                match failed_program(&log) {
                    Some((prog, why)) if !off.contains(&prog) && left.len() < max_tries => {
                        left.push(LeftOut { prog, why });
                    }
                    _ => return Err(explain(what, &e)),
                }
            }
        }
    }
}

/// Turn off autoload for the programs named in `off` (an OpenObject's programs).
pub fn autoload_off(obj: &mut libbpf_rs::OpenObject, off: &[String]) {
    for mut p in obj.progs_mut() {
        if off.iter().any(|o| p.name().to_str() == Some(o.as_str())) {
            p.set_autoload(false);
        }
    }
}

/// Copy a map value into the skeleton's #[repr(C)] type generated from ttop.h.
pub fn from_bytes<T: Copy + Default>(bytes: &[u8]) -> T {
    if bytes.len() < std::mem::size_of::<T>() {
        return T::default();
    }
    // SAFETY: T is a plain-old-data #[repr(C)] struct generated from BTF, the buffer is
    // at least size_of::<T>() bytes, and read_unaligned tolerates any alignment.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) }
}

pub fn key_u32(k: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = k.len().min(4);
    b[..n].copy_from_slice(&k[..n]);
    u32::from_ne_bytes(b)
}

/// A NUL-terminated C char array as a String.
pub fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    /// Linux 5.10 on a program built with a fetch atomic: the program and the reason.
    #[test]
    fn the_failed_program_and_its_reason_come_from_the_log() {
        let log = lines(
            "libbpf: prog 'ttop_sched_switch': BPF program load failed: -EACCES\n\
             libbpf: prog 'ttop_sched_switch': -- BEGIN PROG LOAD LOG --\n\
             arg#0 type is not a struct\n\
             func 'sched_switch' doesn't have 4-th argument\n\
             invalid bpf_context access off=24 size=8\n\
             processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0\n\
             -- END PROG LOAD LOG --\n\
             libbpf: prog 'ttop_sched_switch': failed to load: -EACCES\n\
             libbpf: failed to load object 'sched_bpf'",
        );
        let (p, why) = failed_program(&log).unwrap();
        assert_eq!(p, "ttop_sched_switch");
        assert_eq!(why, "invalid bpf_context access off=24 size=8");
        // A map the kernel cannot create names no program.
        let log = lines(
            "libbpf: Error in bpf_create_map_xattr(thread_state): -EINVAL. Retrying without BTF.\n\
             libbpf: map 'thread_state': failed to create: -EINVAL\n\
             libbpf: failed to load BPF skeleton 'contention_bpf': -EINVAL",
        );
        assert_eq!(failed_program(&log), None);
    }
}
