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
}

/// Rows of the process table in display order.
pub fn sorted_procs(frame: &Frame, key: ProcSort, reverse: bool) -> Vec<&ProcFrame> {
    let mut rows: Vec<&ProcFrame> = frame.procs.iter().collect();
    let desc = key.descending() != reverse;
    rows.sort_by(|a, b| {
        let o = key.cmp(a, b).then_with(|| a.pid.cmp(&b.pid));
        if desc { o.reverse() } else { o }
    });
    rows
}
