//! Performing a confirmed act (`act::ActRequest`) on a live process: kill(2),
//! setpriority(2) and sched_setaffinity(2). Nice and affinity are per thread on Linux,
//! so they are applied to every thread in `/proc/PID/task` (a thread that ends meanwhile
//! is skipped). The outcome is one line for the footer, saying plainly what was done or
//! why not (not permitted, gone, CPUs not online).

use std::io;

use super::act::{ActRequest, ProcAct, cpu_list, signal_name};

fn errno() -> io::Error {
    io::Error::last_os_error()
}

/// Why an act failed, for a person.
fn why(e: &io::Error, r: &ActRequest) -> String {
    let what = r.describe();
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => match r.act {
            ProcAct::NiceBy(d) if d < 0 => {
                format!("not permitted: {what} (lowering nice needs root or CAP_SYS_NICE)")
            }
            _ => format!("not permitted: {what} (it belongs to another user; run ttop as root)"),
        },
        Some(libc::ESRCH) => format!("{}({}) is gone", r.comm, r.pid),
        Some(libc::EINVAL) if matches!(r.act, ProcAct::Affinity(_)) => {
            format!("refused: {what} (no such CPU online, or outside its cpuset)")
        }
        _ => format!("failed: {what}: {e}"),
    }
}

/// The threads of `pid` (just `pid` if its task/ cannot be listed).
fn threads(pid: u32) -> Vec<i32> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if tids.is_empty() {
        tids.push(pid as i32);
    }
    tids.sort_unstable();
    tids
}

/// Apply `f` to every thread; a thread that ended meanwhile (ESRCH) is skipped unless
/// none was done. Returns how many were done.
fn each_thread(pid: u32, mut f: impl FnMut(i32) -> io::Result<()>) -> io::Result<usize> {
    let mut done = 0;
    let mut gone = None;
    for tid in threads(pid) {
        match f(tid) {
            Ok(()) => done += 1,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => gone = Some(e),
            Err(e) => return Err(e),
        }
    }
    match (done, gone) {
        (0, Some(e)) => Err(e),
        _ => Ok(done),
    }
}

fn nice_of(tid: i32) -> io::Result<i32> {
    // getpriority may return -1 as a value: errno tells.
    unsafe { *libc::__errno_location() = 0 };
    let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    if n == -1 && errno().raw_os_error().unwrap_or(0) != 0 {
        return Err(errno());
    }
    Ok(n)
}

fn set_nice(tid: i32, n: i32) -> io::Result<()> {
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, n) } != 0 {
        return Err(errno());
    }
    Ok(())
}

fn set_cpus(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_setaffinity(tid, size, &set) } != 0 {
        return Err(errno());
    }
    Ok(())
}

/// Perform `r`: Ok says what was done, Err why it was not.
pub fn perform(r: &ActRequest) -> Result<String, String> {
    let who = format!("{}({})", r.comm, r.pid);
    match &r.act {
        ProcAct::Signal(sig) => {
            if unsafe { libc::kill(r.pid as libc::pid_t, *sig) } != 0 {
                return Err(why(&errno(), r));
            }
            Ok(format!("sent SIG{} to {who}", signal_name(*sig)))
        }
        ProcAct::NiceBy(by) => {
            let before = nice_of(r.pid as i32).map_err(|e| why(&e, r))?;
            let after = (before + by).clamp(-20, 19);
            let n = each_thread(r.pid, |tid| {
                let now = nice_of(tid)?;
                set_nice(tid, (now + by).clamp(-20, 19))
            })
            .map_err(|e| why(&e, r))?;
            Ok(format!(
                "nice {before} → {after} for {n} thread(s) of {who}"
            ))
        }
        ProcAct::Affinity(cpus) => {
            let n = each_thread(r.pid, |tid| set_cpus(tid, cpus)).map_err(|e| why(&e, r))?;
            Ok(format!(
                "{n} thread(s) of {who} now run on CPUs {}",
                cpu_list(cpus)
            ))
        }
    }
}
