//! Per-thread rows of a Frame: each thread of the /proc scan, with its scan CPU% (from
//! the previous scan's ticks) and its eBPF on-CPU time and run-queue wait. `proc_rows`
//! builds them in its pass over the scan, next to the process rows.

use crate::model::frame::ThreadFrame;
use crate::model::opt::Opt;
use crate::model::procs::prev_tasks::PrevTask;
use crate::model::procs::wall::{Cumulative, TimeSplit};
use crate::model::rates::{delta, pct_of};
use crate::model::sample::{BpfThread, ProcScan, TaskScan};

/// What the rates are over.
pub struct Interval {
    pub ns: u64,
    pub s: f64,
    pub tck: f64,
    pub has_prev: bool,
    /// Whether the current sample has eBPF counters.
    pub bpf: bool,
    /// When the machine booted, Unix seconds (None when the sample has no uptime).
    pub boot_s: Option<f64>,
}

/// A task's scan CPU%: its ticks since the previous scan (`before`) if that scan read it
/// in the same process. A task that scan did not read (or read in a process since gone,
/// its tid reused) is new since then when the scan read its process (`known`): all its
/// ticks are the interval's, and top -H counts them so. None when the previous scan did
/// not read the process: nothing to take a delta from.
#[inline(always)]
pub fn scan_pct(
    before: Option<PrevTask>,
    p: &ProcScan,
    t: &TaskScan,
    known: bool,
    at: &Interval,
) -> Option<f64> {
    let ticks = t.utime + t.stime;
    let d = match before {
        Some((prev, start)) if start == p.starttime => delta(prev, ticks),
        _ if known => ticks,
        _ => return None,
    };
    Some(100.0 * d as f64 / at.tck / at.s)
}

/// The row of task `t` of process `p`; `cur` and `prev` are its eBPF counters, looked up
/// only when `at.bpf`.
#[inline(always)]
pub fn thread_row(
    p: &ProcScan,
    t: &TaskScan,
    cpu_pct_scan: Option<f64>,
    cur: Option<&BpfThread>,
    prev: Option<&BpfThread>,
    at: &Interval,
) -> ThreadFrame {
    let (cpu_pct_true, runq_wait_ms, time) = if at.bpf {
        let (c_on, c_wait) = cur.map_or((0, 0), |c| (c.oncpu_ns, c.runq_wait_ns));
        let (p_on, p_wait) = prev.map_or((0, 0), |p| (p.oncpu_ns, p.runq_wait_ns));
        let on = if at.has_prev { delta(p_on, c_on) } else { 0 };
        let w = if at.has_prev {
            c_wait.saturating_sub(p_wait)
        } else {
            0
        };
        let cum = |b: Option<&BpfThread>| {
            b.map_or(Cumulative::default(), |b| Cumulative {
                oncpu_ns: b.oncpu_wall_ns,
                runq_wait_ns: b.runq_wait_ns,
                off_ns: b.off_ns,
            })
        };
        // A thread eBPF has no entry for (its table full, or asleep since before ttop
        // with the start-up seeding unavailable) was not measured: null, not zeros.
        let time = match cur {
            Some(_) => TimeSplit::between(&cum(prev), &cum(cur), at.has_prev),
            None => TimeSplit::NONE,
        };
        (
            Opt::some(pct_of(on, at.ns)),
            Opt::some(w as f64 / 1e6),
            time,
        )
    } else {
        (Opt::NONE, Opt::NONE, TimeSplit::NONE)
    };
    ThreadFrame {
        tid: t.tid,
        pid: p.pid,
        comm: t.comm.clone(),
        state: t.state,
        cpu_pct_scan: cpu_pct_scan.into(),
        cpu_pct_true,
        runq_wait_ms,
        time,
    }
}
