//! Process and thread rows of a Frame, built in one pass over the /proc scan: each
//! process joined with the previous scan and with its eBPF totals, and each of its
//! tasks joined with the previous scan's task and its eBPF thread counters; then the
//! processes eBPF saw that were gone at the scan.
//!
//! One pass, because at 10,000 single-threaded processes a derive is memory-bound: the
//! thread rows used to be a second pass over every process and task list of both scans
//! (plus two more to check their tid order), each fetching the same cache lines again
//! from L3.

use super::derive::{delta, pct_of};
use super::frame::{ProcFrame, ThreadFrame};
use super::join::Rows;
use super::opt::Opt;
use super::prev_tasks::PrevTasks;
use super::proc_totals::{ProcTotals, Totals};
use super::sample::{BpfSample, Sample};
use super::thread_rows::{Interval, scan_pct, thread_row};

/// The rows of the scan, and the threads the scan found runnable.
pub struct ScanRows {
    pub procs: Vec<ProcFrame>,
    pub threads: Vec<ThreadFrame>,
    pub scan_running: u32,
}

/// Process rows (the scan's, then those gone at the scan) and thread rows (the scan's,
/// in scan order) for the interval `at` between `prev` and `cur`.
pub fn scan_rows(prev: Option<&Sample>, cur: &Sample, at: &Interval, page_kb: u64) -> ScanRows {
    let cur_bpf = cur.bpf.as_ref();
    let prev_bpf = prev.and_then(|p| p.bpf.as_ref());
    let cur_totals = cur_bpf.map(|b| Totals::new(&b.threads, &b.procs));
    let prev_totals = prev_bpf.map(|b| Totals::new(&b.threads, &b.procs));
    let bpf_tot = |pid: u32| -> Option<(ProcTotals, ProcTotals)> {
        let c = cur_totals.as_ref()?.get(pid);
        let p = prev_totals.as_ref().map(|m| m.get(pid)).unwrap_or_default();
        Some((p, c))
    };
    let prev_procs = prev.map_or(&[][..], |p| &p.procs);
    let prev_scan = Rows::new(prev_procs, |p| p.pid);
    let mut prev_tasks = PrevTasks::new(prev_procs);
    fn threads_of(b: Option<&BpfSample>) -> &[super::sample::BpfThread] {
        b.map_or(&[], |b| &b.threads)
    }
    let cur_bt = Rows::new(threads_of(cur_bpf), |t| t.tid);
    let prev_bt = Rows::new(threads_of(prev_bpf), |t| t.tid);
    let seen = Rows::new(&cur.procs, |p| p.pid);

    let mut procs = Vec::with_capacity(cur.procs.len() + 8);
    // As many rows as eBPF has threads is about right (exactly so when every thread ran).
    let mut threads = Vec::with_capacity(threads_of(cur_bpf).len().max(cur.procs.len()));
    let mut scan_running = 0u32;
    // Each process row is one struct expression returned into the list's reserved space,
    // so the compiler writes its fields in place; a row built in a local and filled in
    // through `&mut` was copied (260 bytes, a memcpy call) into the list.
    procs.extend(cur.procs.iter().map(|p| {
        let mut running = 0u32;
        for t in &p.tasks {
            running += u32::from(t.state == 'R');
            let pct = scan_pct(prev_tasks.get(t.tid), p, t, at);
            let (c, b) = if at.bpf {
                (cur_bt.get(t.tid), prev_bt.get(t.tid))
            } else {
                (None, None)
            };
            threads.push(thread_row(p, t, pct, c, b, at));
        }
        scan_running += running;
        let prevp = prev_scan.get(p.pid).filter(|q| q.starttime == p.starttime);
        let cpu_pct_scan = prevp.map_or(0.0, |q| {
            let ticks = delta(q.utime + q.stime, p.utime + p.stime) as f64;
            100.0 * ticks / at.tck / at.s
        });
        let scan = ScanCols {
            state: p.state,
            gone: false,
            threads_seen: p.tasks.len() as u32,
            running_seen: running,
            cpu_pct_scan,
            rss_kb: p.rss_pages * page_kb,
        };
        let bpf = bpf_tot(p.pid).map_or_else(BpfCols::default, |(pt, ct)| {
            bpf_cols(&pt, &ct, at.ns, at.has_prev, cpu_pct_scan)
        });
        proc_row(p.pid, p.comm.clone(), (&p.cmdline).into(), scan, bpf)
    }));
    // The cursor over the previous scan's tasks answered before it could know that scan
    // was out of tid order: look those up again in its table.
    let stale = prev_tasks.stale();
    if stale > 0 {
        let tasks = cur
            .procs
            .iter()
            .flat_map(|p| p.tasks.iter().map(move |t| (p, t)));
        for (row, (p, t)) in threads.iter_mut().zip(tasks).take(stale) {
            row.cpu_pct_scan = scan_pct(prev_tasks.get(t.tid), p, t, at);
        }
    }

    // Processes that lived during the interval but were gone at the scan. With a filter,
    // only watched ones: the kernel keeps counting what it saw before the filter reached
    // it, and the first filtered frame must not list other processes that ended.
    let watched = |pid: u32| match &cur.filter {
        None => true,
        Some(f) => {
            f.pids.contains(&pid)
                || f.matched.contains(&pid)
                || prev
                    .and_then(|p| p.filter.as_ref())
                    .is_some_and(|pf| pf.matched.contains(&pid))
        }
    };
    if let Some(b) = cur_bpf {
        for bp in &b.procs {
            if seen.contains(bp.tgid) || !watched(bp.tgid) {
                continue;
            }
            let Some((pt, ct)) = bpf_tot(bp.tgid) else {
                continue;
            };
            let was_scanned = prev_scan.get(bp.tgid);
            let active = delta(pt.created, ct.created) + delta(pt.exited, ct.exited) > 0;
            if !active && was_scanned.is_none() {
                continue;
            }
            let comm = if !bp.comm.is_empty() {
                bp.comm.as_str().into()
            } else {
                was_scanned.map(|q| q.comm.clone()).unwrap_or_default()
            };
            let cmdline = was_scanned.map(|q| (&q.cmdline).into()).unwrap_or_default();
            let scan = ScanCols {
                state: 'X',
                gone: true,
                ..Default::default()
            };
            let bpf = bpf_cols(&pt, &ct, at.ns, at.has_prev, scan.cpu_pct_scan);
            procs.push(proc_row(bp.tgid, comm, cmdline, scan, bpf));
        }
    }
    ScanRows {
        procs,
        threads,
        scan_running,
    }
}

/// The columns of a process row that come from the /proc scan.
#[derive(Default)]
struct ScanCols {
    state: char,
    gone: bool,
    threads_seen: u32,
    running_seen: u32,
    cpu_pct_scan: f64,
    rss_kb: u64,
}

/// The columns of a process row that come from eBPF (all null without it).
#[derive(Default)]
struct BpfCols {
    threads_created: Option<u64>,
    threads_exited: Option<u64>,
    ghost_threads: Option<u64>,
    ghost_cpu_ms: Opt<f64>,
    cpu_pct_true: Option<f64>,
    runq_wait_ms: Option<f64>,
    runnable_avg: Opt<f64>,
    scan_miss: f64,
}

/// A process row: one struct expression, so it can be built where it is stored.
#[inline(always)]
fn proc_row(
    pid: u32,
    comm: super::name::Name,
    cmdline: super::name::Name<31>,
    s: ScanCols,
    b: BpfCols,
) -> ProcFrame {
    ProcFrame {
        pid,
        comm,
        cmdline,
        state: s.state,
        gone: s.gone,
        threads_seen: s.threads_seen,
        running_seen: s.running_seen,
        threads_created: b.threads_created,
        threads_exited: b.threads_exited,
        ghost_threads: b.ghost_threads,
        ghost_cpu_ms: b.ghost_cpu_ms,
        cpu_pct_scan: s.cpu_pct_scan,
        cpu_pct_true: b.cpu_pct_true,
        runq_wait_ms: b.runq_wait_ms,
        rss_kb: s.rss_kb,
        scan_miss: b.scan_miss,
        runnable_avg: b.runnable_avg,
        // Filled in later by contention_frame and irq.
        tlb_shootdowns_caused: Opt::NONE,
        ipis_caused: Opt::NONE,
        tlb_ipis_caused: Opt::NONE,
        futex_calls: Opt::NONE,
        futex_slept: Opt::NONE,
        futex_wait_ms: Opt::NONE,
    }
}

#[inline(always)]
fn bpf_cols(
    pt: &ProcTotals,
    ct: &ProcTotals,
    interval_ns: u64,
    has_prev: bool,
    cpu_pct_scan: f64,
) -> BpfCols {
    let d = |a: u64, b: u64| if has_prev { delta(a, b) } else { 0 };
    let ghost_ns = d(pt.ghost_oncpu_ns, ct.ghost_oncpu_ns);
    let true_pct = pct_of(d(pt.oncpu_ns, ct.oncpu_ns), interval_ns);
    // Running or waiting to run, averaged over the interval: how many of its threads
    // were runnable at a time.
    // Run-queue wait includes the wait in progress at the sample (see SchedCollector::read);
    // if that guess is later withdrawn the sum shrinks a little: count that as no wait,
    // not as a counter reset.
    let wait = |a: u64, b: u64| if has_prev { b.saturating_sub(a) } else { 0 };
    let runnable_ns = d(pt.oncpu_ns, ct.oncpu_ns) + wait(pt.runq_wait_ns, ct.runq_wait_ns);
    BpfCols {
        threads_created: Some(d(pt.created, ct.created)),
        threads_exited: Some(d(pt.exited, ct.exited)),
        ghost_threads: Some(d(pt.ghosts, ct.ghosts)),
        ghost_cpu_ms: Opt::some(ghost_ns as f64 / 1e6),
        cpu_pct_true: Some(true_pct),
        runnable_avg: Opt::some(runnable_ns as f64 / interval_ns as f64),
        runq_wait_ms: Some(wait(pt.runq_wait_ns, ct.runq_wait_ns) as f64 / 1e6),
        scan_miss: (true_pct - cpu_pct_scan).max(0.0) + pct_of(ghost_ns, interval_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::synthetic;

    fn threads(cur: &Sample, prev: &Sample) -> Vec<ThreadFrame> {
        let at = Interval {
            ns: 1_000_000_000,
            s: 1.0,
            tck: 100.0,
            has_prev: true,
            bpf: true,
        };
        scan_rows(Some(prev), cur, &at, 4).threads
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
        let walked = threads(&cur, &prev);
        // A process out of tid order (and not in `cur`) at the end of the previous scan:
        // found only after every lookup, so the cursor's answers are redone.
        let mut unordered = prev.clone();
        let mut odd = unordered.procs[0].clone();
        odd.pid = 1;
        odd.tasks.truncate(1);
        odd.tasks[0].tid = 1;
        unordered.procs.push(odd);
        let tabled = threads(&cur, &unordered);
        assert_eq!(walked, tabled);
        assert!(walked.iter().any(|t| t.cpu_pct_scan > 0.0));
        assert!(
            walked
                .iter()
                .any(|t| t.pid == cur.procs[3].pid && t.cpu_pct_scan == 0.0)
        );
        // A current scan out of order part way: the rest is looked up in the table.
        let mut shuffled = cur.clone();
        shuffled.procs.swap(20, 30);
        let key = |v: &mut Vec<ThreadFrame>| v.sort_by_key(|t| (t.tid, t.cpu_pct_scan.to_bits()));
        let (mut got, mut want) = (threads(&shuffled, &prev), walked);
        key(&mut got);
        key(&mut want);
        assert!(got == want, "same rows, in another order");
    }
}
