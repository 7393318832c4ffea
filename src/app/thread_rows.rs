//! Threads as rows of the process tree (`H`): which threads each process has in the
//! frame, in the table's sort order, and which of the process table's columns a thread
//! row fills (those with a per-thread meaning; the others stay blank, not 0).

use std::cmp::Ordering;
use std::collections::HashMap;

use super::sort::ProcSort;
use crate::model::Frame;
use crate::model::frame::{ProcFrame, ThreadFrame};
use crate::model::procs::fields::{Key, ProcField};

/// Each process's thread rows but the main thread's, by PID.
pub type ThreadsOf<'a> = HashMap<u32, Vec<&'a ThreadFrame>>;

/// The columns a thread row fills: its TID (in PID), name, state, its own CPU (the
/// scan's, in SCAN% and THRD% alike, as top -H shows it; eBPF's in TRUE%) and its
/// run-queue wait.
pub const PER_THREAD: &[ProcField] = &[
    ProcField::Pid,
    ProcField::Comm,
    ProcField::State,
    ProcField::CpuScan,
    ProcField::CpuThreads,
    ProcField::CpuTrue,
    ProcField::RunqWait,
];

/// A process row holding what thread `t` has, for the columns of `PER_THREAD` (their
/// formatters and sort keys are the process table's).
pub fn as_proc(t: &ThreadFrame) -> ProcFrame {
    ProcFrame {
        state: t.state,
        cpu_pct_scan: t.cpu_pct_scan,
        cpu_pct_scan_threads: t.cpu_pct_scan,
        cpu_pct_true: t.cpu_pct_true.get(),
        runq_wait_ms: t.runq_wait_ms.get(),
        ..ProcFrame::named(t.tid, t.comm.clone(), Default::default())
    }
}

/// The threads of every process of `f` (the scan's: a process gone at the scan has
/// none) but their main threads, each process's sorted by `key` where a thread has it
/// (else by TID), in the table's direction. Built only while the tree shows threads.
pub fn threads_of(f: &Frame, key: ProcSort, reverse: bool) -> ThreadsOf<'_> {
    let mut by_pid: ThreadsOf = HashMap::new();
    for t in f.threads.iter().filter(|t| t.tid != t.pid) {
        by_pid.entry(t.pid).or_default().push(t);
    }
    let sort = PER_THREAD
        .contains(&key)
        .then(|| key.field().sort)
        .flatten()
        .unwrap_or_else(|| ProcSort::Pid.field().sort.expect("PID sorts"));
    let desc = sort.descending != reverse;
    // Each thread's key taken once (from its row as a process row, then dropped), not
    // at every comparison.
    let num = |t: &ThreadFrame| match sort.key {
        Key::Num(n) => n(&as_proc(t)).unwrap_or(-1.0),
        Key::Text(_) => 0.0,
    };
    let text = |t: &ThreadFrame| match sort.key {
        Key::Text(k) => k(&as_proc(t)).to_string(),
        Key::Num(_) => String::new(),
    };
    for list in by_pid.values_mut() {
        let mut keyed: Vec<(f64, String, u32, &ThreadFrame)> =
            list.iter().map(|t| (num(t), text(t), t.tid, *t)).collect();
        keyed.sort_by(|a, b| {
            let o = (a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal))
                .then_with(|| a.1.cmp(&b.1))
                .then(a.2.cmp(&b.2));
            if desc { o.reverse() } else { o }
        });
        *list = keyed.into_iter().map(|k| k.3).collect();
    }
    by_pid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::opt::Opt;

    fn thread(pid: u32, tid: u32, cpu: f64) -> ThreadFrame {
        ThreadFrame {
            tid,
            pid,
            comm: format!("w{tid}").into(),
            cpu_pct_true: Opt::some(cpu),
            ..Default::default()
        }
    }

    #[test]
    fn threads_sort_by_the_column_they_have_else_by_tid() {
        let f = Frame {
            threads: vec![
                thread(10, 10, 50.0),
                thread(10, 12, 1.0),
                thread(10, 11, 9.0),
                thread(20, 20, 0.0),
            ],
            ..Default::default()
        };
        let tids = |key, rev| {
            let by = threads_of(&f, key, rev);
            assert!(!by.contains_key(&20), "a main thread is its process's row");
            by[&10].iter().map(|t| t.tid).collect::<Vec<_>>()
        };
        assert_eq!(tids(ProcSort::CpuTrue, false), [11, 12]);
        assert_eq!(tids(ProcSort::CpuTrue, true), [12, 11]);
        // RSS is the process's: its threads go by TID.
        assert_eq!(tids(ProcSort::Rss, false), [11, 12]);
        assert_eq!(tids(ProcSort::Comm, true), [12, 11]);
    }
}
