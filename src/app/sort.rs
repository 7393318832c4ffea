//! Sort columns for the process table, and the sorted row order (shared by the renderer
//! and by selection handling so both agree on what row N is).

use std::cmp::Ordering;

use crate::model::frame::{Frame, ProcFrame};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcSort {
    Pid,
    Comm,
    Threads,
    Created,
    Exited,
    Ghosts,
    CpuScan,
    CpuTrue,
    RunqWait,
    Miss,
    Rss,
}

impl ProcSort {
    pub const ALL: [ProcSort; 11] = [
        ProcSort::CpuTrue,
        ProcSort::CpuScan,
        ProcSort::Miss,
        ProcSort::Ghosts,
        ProcSort::Created,
        ProcSort::Exited,
        ProcSort::RunqWait,
        ProcSort::Threads,
        ProcSort::Rss,
        ProcSort::Pid,
        ProcSort::Comm,
    ];

    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn name(self) -> &'static str {
        match self {
            ProcSort::Pid => "PID",
            ProcSort::Comm => "COMM",
            ProcSort::Threads => "THR",
            ProcSort::Created => "NEW/s",
            ProcSort::Exited => "EXIT/s",
            ProcSort::Ghosts => "GHOST/s",
            ProcSort::CpuScan => "SCAN%",
            ProcSort::CpuTrue => "TRUE%",
            ProcSort::RunqWait => "RQWAIT",
            ProcSort::Miss => "MISS",
            ProcSort::Rss => "RSS",
        }
    }

    /// Text columns sort ascending by default, numbers descending (biggest first).
    fn descending(self) -> bool {
        !matches!(self, ProcSort::Pid | ProcSort::Comm)
    }

    fn cmp(self, a: &ProcFrame, b: &ProcFrame) -> Ordering {
        let f = |x: Option<f64>| x.unwrap_or(-1.0);
        let u = |x: Option<u64>| x.map_or(-1.0, |v| v as f64);
        let num = |x: f64, y: f64| x.partial_cmp(&y).unwrap_or(Ordering::Equal);
        match self {
            ProcSort::Pid => a.pid.cmp(&b.pid),
            ProcSort::Comm => a.comm.cmp(&b.comm),
            ProcSort::Threads => a.threads_seen.cmp(&b.threads_seen),
            ProcSort::Created => num(u(a.threads_created), u(b.threads_created)),
            ProcSort::Exited => num(u(a.threads_exited), u(b.threads_exited)),
            ProcSort::Ghosts => num(u(a.ghost_threads), u(b.ghost_threads)),
            ProcSort::CpuScan => num(a.cpu_pct_scan, b.cpu_pct_scan),
            ProcSort::CpuTrue => num(f(a.cpu_pct_true), f(b.cpu_pct_true)),
            ProcSort::RunqWait => num(f(a.runq_wait_ms), f(b.runq_wait_ms)),
            ProcSort::Miss => num(a.scan_miss, b.scan_miss),
            ProcSort::Rss => a.rss_kb.cmp(&b.rss_kb),
        }
    }

    /// The sort key as a number, for every column but COMM (the same order as `cmp`:
    /// integers up to 2^53 are exact in an f64, and a missing value sorts as -1).
    fn number(self, p: &ProcFrame) -> Option<f64> {
        let f = |x: Option<f64>| x.unwrap_or(-1.0);
        let u = |x: Option<u64>| x.map_or(-1.0, |v| v as f64);
        Some(match self {
            ProcSort::Comm => return None,
            ProcSort::Pid => f64::from(p.pid),
            ProcSort::Threads => f64::from(p.threads_seen),
            ProcSort::Created => u(p.threads_created),
            ProcSort::Exited => u(p.threads_exited),
            ProcSort::Ghosts => u(p.ghost_threads),
            ProcSort::CpuScan => p.cpu_pct_scan,
            ProcSort::CpuTrue => f(p.cpu_pct_true),
            ProcSort::RunqWait => f(p.runq_wait_ms),
            ProcSort::Miss => p.scan_miss,
            ProcSort::Rss => p.rss_kb as f64,
        })
    }
}

/// Rows of the process table in display order.
///
/// Numeric columns sort (key, pid) pairs copied out of the rows instead of comparing
/// through the row references (two cache misses per comparison): at 10,000 processes
/// the sort was the largest single cost of a render, and this takes it from 1.45 ms to
/// 1.10 ms (median, interleaved A/B on the 2-CPU dev VM). (key, pid) is unique, so an
/// unstable sort gives the same order as the stable one.
pub fn sorted_procs(frame: &Frame, key: ProcSort, reverse: bool) -> Vec<&ProcFrame> {
    let desc = key.descending() != reverse;
    let order = |o: Ordering| if desc { o.reverse() } else { o };
    if frame.procs.first().is_some_and(|p| key.number(p).is_some()) {
        let mut keyed: Vec<(f64, u32, &ProcFrame)> = frame
            .procs
            .iter()
            .map(|p| (key.number(p).unwrap_or(-1.0), p.pid, p))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            order(
                a.0.partial_cmp(&b.0)
                    .unwrap_or(Ordering::Equal)
                    .then(a.1.cmp(&b.1)),
            )
        });
        return keyed.into_iter().map(|k| k.2).collect();
    }
    let mut rows: Vec<&ProcFrame> = frame.procs.iter().collect();
    rows.sort_by(|a, b| order(key.cmp(a, b).then_with(|| a.pid.cmp(&b.pid))));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyed sort gives exactly the order of the row comparator, for every column.
    #[test]
    fn keyed_sort_matches_the_comparator() {
        let procs: Vec<ProcFrame> = (0..200u32)
            .map(|i| ProcFrame {
                pid: 1000 - i * 3,
                comm: format!("c{}", i % 7),
                threads_seen: i % 5,
                threads_created: (i % 3 > 0).then_some(u64::from(i % 4)),
                cpu_pct_scan: f64::from(i % 9) * 0.5,
                cpu_pct_true: (i % 4 > 0).then_some(f64::from(i % 6)),
                runq_wait_ms: (i % 2 > 0).then_some(f64::from(i % 11)),
                scan_miss: f64::from(i % 8),
                rss_kb: u64::from(i % 13) * 1024,
                ..Default::default()
            })
            .collect();
        let frame = Frame {
            procs,
            ..Default::default()
        };
        for key in ProcSort::ALL {
            for reverse in [false, true] {
                let desc = key.descending() != reverse;
                let mut want: Vec<&ProcFrame> = frame.procs.iter().collect();
                want.sort_by(|a, b| {
                    let o = key.cmp(a, b).then_with(|| a.pid.cmp(&b.pid));
                    if desc { o.reverse() } else { o }
                });
                let got = sorted_procs(&frame, key, reverse);
                let pids = |v: &[&ProcFrame]| v.iter().map(|p| p.pid).collect::<Vec<_>>();
                assert_eq!(pids(&got), pids(&want), "{key:?} reverse={reverse}");
            }
        }
    }
}
