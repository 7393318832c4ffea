//! /proc/PID/status, for the three figures only it has: the real uid (USER) and the
//! voluntary and involuntary context switches. Read only where the process's stat line
//! is read (not for a process whose line is reused: neither figure can move without a
//! scheduler event that marks it), through a kept descriptor.
//!
//! Its cost: 5.3 us a read through a kept descriptor here, where stat costs 2.9 us and
//! statm 0.8 us (81 processes, 2-vCPU VM, best of 20 passes): a process whose stat line
//! is read costs about twice as much as before, a reused one nothing more. Without eBPF
//! no line is reused, so every process pays it every tick (5 ms a tick at 1,000 processes).
//!
//! The switch counts are the thread group leader's own, as the kernel prints them in
//! this file (task_context_switch_counts), and as htop shows them; the other threads'
//! switches are in task/TID/status, which the scan does not read.

use std::os::fd::RawFd;

use super::ProcScanner;
use super::paths::pid_path;
use super::stat_line::parse_uint;

/// The kept-files key of a process's status: (pid, STATUS). No thread has this id.
const STATUS: u32 = u32::MAX - 1;

/// What the scan keeps of /proc/PID/status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Status {
    /// The real uid (the first of the four on the `Uid:` line).
    pub uid: u32,
    pub voluntary: u64,
    pub involuntary: u64,
}

/// The first number after `key` on its line.
fn field(text: &[u8], key: &[u8]) -> Option<u64> {
    let at = text.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &text[at..];
    let start = rest.iter().position(|b| b.is_ascii_digit())?;
    let rest = &rest[start..];
    let end = rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    parse_uint(&rest[..end])
}

/// The uid and the switch counts; None if a line is missing (not a status file).
pub(super) fn parse_status(text: &[u8]) -> Option<Status> {
    Some(Status {
        uid: u32::try_from(field(text, b"\nUid:")?).ok()?,
        voluntary: field(text, b"\nvoluntary_ctxt_switches:")?,
        involuntary: field(text, b"\nnonvoluntary_ctxt_switches:")?,
    })
}

impl ProcScanner {
    /// /proc/PID/status now; None if it is gone or unreadable.
    pub(super) fn read_status(&mut self, proc_dir: RawFd, pid: u32) -> Option<Status> {
        let mut path = [0u8; 48];
        let name = pid_path(&mut path, pid, None, b"status");
        if !self
            .stats
            .read((pid, STATUS), proc_dir, name, &mut self.buf)
        {
            return None;
        }
        parse_status(&self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_found_whole() {
        let text = b"Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\n\
                     Uid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n\
                     voluntary_ctxt_switches:\t123\nnonvoluntary_ctxt_switches:\t45\n";
        assert_eq!(
            parse_status(text),
            Some(Status {
                uid: 1000,
                voluntary: 123,
                involuntary: 45
            })
        );
        assert_eq!(parse_status(b"Name:\tx\n"), None);
    }

    #[test]
    fn our_own_status_reads() {
        let text = std::fs::read("/proc/self/status").unwrap();
        let s = parse_status(&text).unwrap();
        // SAFETY: getuid has no preconditions.
        assert_eq!(s.uid, unsafe { libc::getuid() });
        assert!(s.voluntary + s.involuntary > 0);
    }
}
