//! Per-thread rows of a Frame: each thread of the /proc scan, with its scan CPU% (from
//! the previous scan's ticks) and its eBPF on-CPU time and run-queue wait.

use super::derive::{delta, pct_of};
use super::frame::ThreadFrame;
use super::join::{KeyMap, Rows};
use super::sample::{BpfThread, ProcScan, Sample, TaskScan};

/// A previous-scan task's ticks (utime + stime) and its process's start time.
type PrevTask = (u64, u64);

/// One thread row per task of the current scan, in scan order.
pub fn thread_frames(
    cur: &Sample,
    prev: Option<&Sample>,
    interval_ns: u64,
    interval_s: f64,
    tck: f64,
) -> Vec<ThreadFrame> {
    fn threads_of(s: Option<&Sample>) -> &[BpfThread] {
        s.and_then(|s| s.bpf.as_ref()).map_or(&[], |b| &b.threads)
    }
    let cur_bt = Rows::new(threads_of(Some(cur)), |t| t.tid);
    let prev_bt = Rows::new(threads_of(prev), |t| t.tid);
    let at = Interval {
        ns: interval_ns,
        s: interval_s,
        tck,
        has_prev: prev.is_some(),
        bpf: cur.bpf.is_some(),
    };
    let mut out = Vec::with_capacity(cur.procs.iter().map(|p| p.tasks.len()).sum());
    let prev_procs = prev.map_or(&[][..], |p| &p.procs);
    if tids_ascend(prev_procs, true) && tids_ascend(&cur.procs, false) {
        // Both scans list their tasks in tid order (as a machine of single-threaded
        // processes does): step through the previous scan's tasks alongside, instead of
        // copying all of them into a table first (240 KB at 10,000 threads).
        let mut walk = TaskWalk {
            procs: prev_procs,
            pi: 0,
            ti: 0,
        };
        rows(&mut out, &cur.procs, &cur_bt, &prev_bt, &at, |tid| {
            walk.seek(tid)
                .map(|(u, q)| (u.utime + u.stime, q.starttime))
        });
    } else {
        let prev_tasks: KeyMap<PrevTask> = prev.map_or_else(KeyMap::empty, |p| {
            let mut v = Vec::with_capacity(p.procs.iter().map(|q| q.tasks.len()).sum());
            for q in &p.procs {
                for t in &q.tasks {
                    v.push((t.tid, (t.utime + t.stime, q.starttime)));
                }
            }
            KeyMap::new(v)
        });
        rows(&mut out, &cur.procs, &cur_bt, &prev_bt, &at, |tid| {
            prev_tasks.get(tid).copied()
        });
    }
    out
}

/// What the rates are over.
struct Interval {
    ns: u64,
    s: f64,
    tck: f64,
    has_prev: bool,
    bpf: bool,
}

/// Appends a row for each task of `procs`, finding its previous ticks with `before`.
#[inline(always)]
fn rows<'a>(
    out: &mut Vec<ThreadFrame>,
    procs: &[ProcScan],
    cur_bt: &Rows<'a, BpfThread, impl Fn(&BpfThread) -> u32>,
    prev_bt: &Rows<'a, BpfThread, impl Fn(&BpfThread) -> u32>,
    at: &Interval,
    mut before: impl FnMut(u32) -> Option<PrevTask>,
) {
    for p in procs {
        for t in &p.tasks {
            let cpu_pct_scan = match before(t.tid) {
                Some((ticks, start)) if start == p.starttime => {
                    100.0 * delta(ticks, t.utime + t.stime) as f64 / at.tck / at.s
                }
                _ => 0.0,
            };
            let (cpu_pct_true, runq_wait_ms) = if at.bpf {
                let c = cur_bt.get(t.tid);
                let (c_on, c_wait) = c.map_or((0, 0), |c| (c.oncpu_ns, c.runq_wait_ns));
                let (p_on, p_wait) = prev_bt
                    .get(t.tid)
                    .map_or((0, 0), |p| (p.oncpu_ns, p.runq_wait_ns));
                let on = if at.has_prev { delta(p_on, c_on) } else { 0 };
                let w = if at.has_prev {
                    c_wait.saturating_sub(p_wait)
                } else {
                    0
                };
                (Some(pct_of(on, at.ns)), Some(w as f64 / 1e6))
            } else {
                (None, None)
            };
            out.push(ThreadFrame {
                tid: t.tid,
                pid: p.pid,
                comm: (&t.comm).into(),
                state: t.state,
                cpu_pct_scan,
                cpu_pct_true,
                runq_wait_ms,
            });
        }
    }
}

/// Whether the tasks of these processes, taken in order, have ascending tids (strictly
/// ascending when `strict`: no tid twice).
fn tids_ascend(procs: &[ProcScan], strict: bool) -> bool {
    let mut last: Option<u32> = None;
    for q in procs {
        for t in &q.tasks {
            if let Some(l) = last
                && (t.tid < l || (strict && t.tid == l))
            {
                return false;
            }
            last = Some(t.tid);
        }
    }
    true
}

/// A cursor over the tasks of a scan whose tids ascend (see `tids_ascend`).
struct TaskWalk<'a> {
    procs: &'a [ProcScan],
    /// The process and task the cursor is at: the first with a tid >= the last sought.
    pi: usize,
    ti: usize,
}

impl<'a> TaskWalk<'a> {
    /// The task with this tid, and its process; tids must be sought in ascending order.
    #[inline]
    fn seek(&mut self, tid: u32) -> Option<(&'a TaskScan, &'a ProcScan)> {
        while let Some(q) = self.procs.get(self.pi) {
            match q.tasks.get(self.ti) {
                Some(t) if t.tid < tid => self.ti += 1,
                Some(t) => return (t.tid == tid).then_some((t, q)),
                None => {
                    self.pi += 1;
                    self.ti = 0;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::synthetic;

    fn frames(cur: &Sample, prev: &Sample) -> Vec<ThreadFrame> {
        thread_frames(cur, Some(prev), 1_000_000_000, 1.0, 100.0)
    }

    /// Stepping through scans in tid order finds what the table finds: a reused pid,
    /// a thread new since the last scan and one gone since, a tid listed twice.
    #[test]
    fn walking_in_order_agrees_with_the_table() {
        let prev = synthetic(50, 3, 10);
        let mut cur = synthetic(50, 3, 11);
        cur.procs[3].starttime += 1; // pid reused
        cur.procs[5].tasks.remove(1); // a thread gone
        let mut extra = cur.procs[7].tasks[2].clone();
        extra.tid += 1; // a new thread, never scanned before
        cur.procs[7].tasks.push(extra);
        let dup = cur.procs[9].tasks[0].clone();
        cur.procs[9].tasks.insert(0, dup); // the same tid twice
        assert!(tids_ascend(&prev.procs, true) && tids_ascend(&cur.procs, false));
        let walked = frames(&cur, &prev);
        // A process out of tid order (and not in `cur`) makes derive build the table.
        let mut unordered = prev.clone();
        let mut odd = unordered.procs[0].clone();
        odd.pid = 1;
        odd.tasks.truncate(1);
        odd.tasks[0].tid = 1;
        unordered.procs.push(odd);
        assert!(!tids_ascend(&unordered.procs, true));
        let tabled = frames(&cur, &unordered);
        assert_eq!(walked, tabled);
        assert!(walked.iter().any(|t| t.cpu_pct_scan > 0.0));
        assert!(
            walked
                .iter()
                .any(|t| t.pid == cur.procs[3].pid && t.cpu_pct_scan == 0.0)
        );
    }
}
