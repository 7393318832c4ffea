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
