//! The time split's kernel-lock parts (bpf/sched_lockwait.h): two programs on
//! lock:contention_begin/end mark a thread while it waits for a mutex or rwsem, so that
//! its switch-out charges the sleep to `lock` or `mmap_lock`. The tracepoints came in
//! 5.19: before, those waits stay in `uninterruptible` or `fault`, and the parts are
//! not measured (null), said once in problems[].

use std::os::fd::{AsFd, AsRawFd, RawFd};

use libbpf_rs::{Link, ProgramMut};

use crate::collect::bpf::common::explain;

/// The problems[] line prefix of these programs (the feature looks for it).
pub const PROBE: &str = "probe split_locks:";

/// Attach both or neither: a begin without its end would mark threads for ever.
pub fn attach(
    begin: &ProgramMut<'static>,
    end: &ProgramMut<'static>,
    links: &mut Vec<Link>,
    fds: &mut Vec<RawFd>,
    problems: &mut Vec<String>,
) {
    if !begin.autoload() || !end.autoload() {
        problems.push(format!(
            "{PROBE} lock:contention_begin/end need Linux 5.19: the time split's lock and mmap_lock parts are not measured (those waits count as uninterruptible or fault)"
        ));
        return;
    }
    let e = match end.attach() {
        Ok(l) => l,
        Err(err) => return problems.push(explain(PROBE.trim_end_matches(':'), &err)),
    };
    match begin.attach() {
        Ok(b) => {
            fds.push(begin.as_fd().as_raw_fd());
            fds.push(end.as_fd().as_raw_fd());
            links.push(b);
            links.push(e);
        }
        Err(err) => problems.push(explain(PROBE.trim_end_matches(':'), &err)),
    }
}
