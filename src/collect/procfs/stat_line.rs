//! One line of /proc/PID/stat (or task/TID/stat) parsed by hand, without allocating, and
//! /proc/PID/cmdline as the procfs crate joined it.

use crate::model::name::Name;

/// The fields of /proc/PID/stat (or task/TID/stat) the scan keeps. Field numbers as in
/// proc(5); everything after the comm is counted from the LAST ')' (a comm may hold
/// spaces and parentheses).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StatFields {
    pub pid: u32,
    pub comm: Name,
    pub state: char,
    pub ppid: u32,
    /// Major faults of the process (its own, not its waited-for children's).
    pub majflt: u64,
    pub utime: u64,
    pub stime: u64,
    /// The kernel's priority as top shows it (PR: 20 + nice for a normal task, -100 to
    /// -2 for real-time ones) and the nice value.
    pub priority: i64,
    pub nice: i64,
    pub num_threads: u32,
    pub starttime: u64,
    pub rss: u64,
}

/// Parse one stat line (a comm of valid UTF-8 is at most 15 bytes, which a Name holds
/// inline). Same results as the procfs crate's parser (which the scan used before): the
/// comm is the bytes between the first '(' and the last ')', lossily decoded; None where
/// that parser failed.
pub(super) fn parse_pid_stat(buf: &[u8]) -> Option<StatFields> {
    parse_stat_upto(buf, 21)
}

/// `parse_pid_stat` reading the fields after the comm only up to `last` (a thread needs
/// nothing past stime, 12); the fields not read are 0.
pub(super) fn parse_stat_upto(buf: &[u8], last: usize) -> Option<StatFields> {
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    if close < open || open == 0 {
        return None;
    }
    let pid: i32 = std::str::from_utf8(&buf[..open - 1]).ok()?.parse().ok()?;
    // After ") ": state is field 0 here, ppid 1, majflt 9, utime 11, stime 12, priority
    // 15, nice 16, num_threads 17, starttime 19, rss 21 (proc(5) fields 3, 4, 12, 14, 15,
    // 18, 19, 20, 22, 24).
    let mut rest = buf.get(close + 2..)?.split(|&b| b == b' ');
    let state = *rest.next()?.first()? as char;
    let mut f = [0i64; 22];
    let mut u = [0u64; 22];
    for i in 1..=last.min(21) {
        let field = rest.next()?;
        match i {
            1 | 15 | 16 | 17 => f[i] = parse_int(field)?,
            9 | 11 | 12 | 19 | 21 => u[i] = parse_uint(field)?,
            _ => {}
        }
    }
    Some(StatFields {
        pid: pid as u32,
        comm: (&*String::from_utf8_lossy(&buf[open + 1..close])).into(),
        state,
        ppid: f[1] as u32,
        majflt: u[9],
        utime: u[11],
        stime: u[12],
        priority: f[15],
        nice: f[16],
        num_threads: f[17].max(0) as u32,
        starttime: u[19],
        rss: u[21],
    })
}

pub(super) fn parse_uint(s: &[u8]) -> Option<u64> {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit()
            .then_some(())
            .and_then(|_| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
    })
}

fn parse_int(s: &[u8]) -> Option<i64> {
    match s.strip_prefix(b"-") {
        Some(d) => parse_uint(d)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_uint(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// cmdline as the procfs crate returned it, joined by spaces: the NUL-separated
/// arguments, empty ones dropped; empty when not UTF-8.
pub(super) fn parse_cmdline(buf: &[u8]) -> String {
    std::str::from_utf8(buf)
        .map(|t| {
            t.split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
