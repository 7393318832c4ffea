//! Process and thread rows of a Frame, built in one pass over the /proc scan: each
//! process joined with the previous scan and with its eBPF totals, and each of its
//! tasks joined with the previous scan's task and its eBPF thread counters; then the
//! processes eBPF saw that were gone at the scan.
//!
//! One pass, because at 10,000 single-threaded processes a derive is memory-bound: the
//! thread rows used to be a second pass over every process and task list of both scans
//! (plus two more to check their tid order), each fetching the same cache lines again
//! from L3.

use crate::model::frame::{ProcFrame, ThreadFrame};
use crate::model::join::Rows;
use crate::model::opt::Opt;
use crate::model::procs::everyday::{Everyday, everyday};
use crate::model::procs::prev_tasks::PrevTasks;
use crate::model::procs::threads::{Interval, scan_pct, thread_row};
use crate::model::procs::totals::{ProcTotals, Totals};
use crate::model::procs::wall::TimeSplit;
use crate::model::rates::{delta, pct_of};
use crate::model::sample::{BpfSample, ProcScan, Sample};

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
    fn threads_of(b: Option<&BpfSample>) -> &[crate::model::sample::BpfThread] {
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
        let prevp = prev_scan.get(p.pid).filter(|q| q.starttime == p.starttime);
        // The previous scan read this process's threads: a thread it did not read is new.
        let known = prevp.is_some_and(|q| !q.tasks.is_empty());
        let mut running = 0u32;
        let mut threads_pct = known.then_some(0.0);
        for t in &p.tasks {
            running += u32::from(t.state == 'R');
            let pct = scan_pct(prev_tasks.get(t.tid), p, t, known, at);
            threads_pct = threads_pct.zip(pct).map(|(a, b)| a + b);
            let (c, b) = if at.bpf {
                (cur_bt.get(t.tid), prev_bt.get(t.tid))
            } else {
                (None, None)
            };
            threads.push(thread_row(p, t, pct, c, b, at));
        }
        scan_running += running;
        let cpu_pct_scan = prevp.map(|q| {
            let ticks = delta(q.utime + q.stime, p.utime + p.stime) as f64;
            100.0 * ticks / at.tck / at.s
        });
        let scan = ScanCols {
            ppid: p.ppid,
            state: p.state,
            gone: false,
            threads_seen: p.tasks.len() as u32,
            running_seen: running,
            cpu_pct_scan,
            cpu_pct_scan_threads: threads_pct,
            rss_kb: p.rss_pages * page_kb,
        };
        let bpf = bpf_tot(p.pid).map_or_else(BpfCols::default, |(pt, ct)| {
            bpf_cols(&pt, &ct, at.ns, at.has_prev, miss_of(threads_pct))
        });
        let day = everyday(prevp, p, at);
        proc_row(p.pid, p.comm.clone(), (&p.cmdline).into(), scan, bpf, day)
    }));
    // The cursor over the previous scan's tasks answered before it could know that scan
    // was out of tid order: look those up again in its table, and add the threads of
    // the processes they belong to up again.
    let stale = prev_tasks.stale();
    if stale > 0 {
        redo_stale(
            &mut prev_tasks,
            &prev_scan,
            cur,
            at,
            stale,
            &mut procs,
            &mut threads,
        );
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
                ppid: was_scanned.map_or(0, |q| q.ppid),
                state: 'X',
                gone: true,
                ..Default::default()
            };
            // Gone at the scan: neither view lists it, so both miss all of its CPU.
            let bpf = bpf_cols(&pt, &ct, at.ns, at.has_prev, Miss::All);
            procs.push(proc_row(
                bp.tgid,
                comm,
                cmdline,
                scan,
                bpf,
                Everyday::default(),
            ));
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
    ppid: u32,
    state: char,
    gone: bool,
    threads_seen: u32,
    running_seen: u32,
    cpu_pct_scan: Option<f64>,
    cpu_pct_scan_threads: Option<f64>,
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
    scan_miss: Option<f64>,
    time: TimeSplit,
}

/// A process row: one struct expression, so it can be built where it is stored.
#[inline(always)]
fn proc_row(
    pid: u32,
    comm: crate::model::name::Name,
    cmdline: crate::model::name::Name<31>,
    s: ScanCols,
    b: BpfCols,
    e: Everyday,
) -> ProcFrame {
    ProcFrame {
        pid,
        comm,
        cmdline,
        state: s.state,
        gone: s.gone,
        ppid: s.ppid,
        threads_seen: s.threads_seen,
        running_seen: s.running_seen,
        threads_created: b.threads_created,
        threads_exited: b.threads_exited,
        ghost_threads: b.ghost_threads,
        ghost_cpu_ms: b.ghost_cpu_ms,
        cpu_pct_scan: s.cpu_pct_scan.into(),
        cpu_pct_scan_threads: s.cpu_pct_scan_threads.into(),
        cpu_pct_true: b.cpu_pct_true,
        runq_wait_ms: b.runq_wait_ms,
        rss_kb: s.rss_kb,
        scan_miss: b.scan_miss.into(),
        runnable_avg: b.runnable_avg,
        // Filled in later by contention_frame and irq.
        tlb_shootdowns_caused: Opt::NONE,
        ipis_caused: Opt::NONE,
        tlb_ipis_caused: Opt::NONE,
        futex_calls: Opt::NONE,
        futex_slept: Opt::NONE,
        futex_wait_ms: Opt::NONE,
        time: b.time,
        user: e.user,
        uid: e.uid,
        priority: e.priority,
        nice: e.nice,
        cpu_time_s: e.cpu_time_s,
        start_time: e.start_time,
        ctx_switches_voluntary_per_s: e.ctx_voluntary_per_s,
        ctx_switches_involuntary_per_s: e.ctx_involuntary_per_s,
        majflt_per_s: e.majflt_per_s,
    }
}

/// What a per-thread scan saw of a process, against which its miss is taken.
#[derive(Clone, Copy)]
enum Miss {
    /// The sum of its threads' scan CPU%: the scan misses the rest of the true CPU.
    Threads(f64),
    /// Gone at the scan: the scan lists nothing of it and misses all its CPU.
    All,
    /// Its first interval: the scan has nothing to compare.
    Unknown,
}

fn miss_of(threads_pct: Option<f64>) -> Miss {
    threads_pct.map_or(Miss::Unknown, Miss::Threads)
}

/// Redoes the first `stale` thread rows (see `PrevTasks::stale`), and the thread sums and
/// misses of the processes they belong to.
fn redo_stale(
    prev_tasks: &mut PrevTasks,
    prev_scan: &Rows<ProcScan, impl Fn(&ProcScan) -> u32>,
    cur: &Sample,
    at: &Interval,
    stale: usize,
    procs: &mut [ProcFrame],
    threads: &mut [ThreadFrame],
) {
    let mut row = 0;
    for (p, pf) in cur.procs.iter().zip(procs.iter_mut()) {
        if row >= stale {
            break;
        }
        let known = prev_scan
            .get(p.pid)
            .is_some_and(|q| q.starttime == p.starttime && !q.tasks.is_empty());
        let mut sum = known.then_some(0.0);
        for (t, tf) in p.tasks.iter().zip(&mut threads[row..]) {
            let pct = scan_pct(prev_tasks.get(t.tid), p, t, known, at);
            tf.cpu_pct_scan = pct.into();
            sum = sum.zip(pct).map(|(a, b)| a + b);
        }
        row += p.tasks.len();
        pf.cpu_pct_scan_threads = sum.into();
        if let Some(true_pct) = pf.cpu_pct_true {
            pf.scan_miss = miss_pct(true_pct, miss_of(sum)).into();
        }
    }
}

/// The CPU percentage points a scan misses of a process that used `true_pct`.
fn miss_pct(true_pct: f64, seen: Miss) -> Option<f64> {
    match seen {
        Miss::Threads(t) => Some((true_pct - t).max(0.0)),
        Miss::All => Some(true_pct),
        Miss::Unknown => None,
    }
}

#[inline(always)]
fn bpf_cols(
    pt: &ProcTotals,
    ct: &ProcTotals,
    interval_ns: u64,
    has_prev: bool,
    seen: Miss,
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
        scan_miss: if has_prev {
            miss_pct(true_pct, seen)
        } else {
            None
        },
        time: TimeSplit::between(&pt.cumulative(), &ct.cumulative(), has_prev),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::synthetic;

    const AT: Interval = Interval {
        ns: 1_000_000_000,
        s: 1.0,
        tck: 100.0,
        has_prev: true,
        bpf: true,
        boot_s: None,
    };

    fn threads(cur: &Sample, prev: &Sample) -> Vec<ThreadFrame> {
        scan_rows(Some(prev), cur, &AT, 4).threads
    }

    /// Each process's per-thread scan CPU% and miss, by pid.
    fn sums(cur: &Sample, prev: &Sample) -> Vec<(u32, Option<f64>, Option<f64>)> {
        let mut v: Vec<_> = scan_rows(Some(prev), cur, &AT, 4)
            .procs
            .iter()
            .map(|p| (p.pid, p.cpu_pct_scan_threads.get(), p.scan_miss.get()))
            .collect();
        v.sort_by_key(|s| s.0);
        v
    }

    /// Stepping through scans in tid order finds what the table finds: a reused pid,
    /// a thread new since the last scan and one gone since, a tid listed twice.
    /// A thread eBPF has an entry for gets its split; one it has none for (table full,
    /// or asleep since before ttop without the start-up seeding) is not measured: null,
    /// never a row of zeros.
    #[test]
    fn a_thread_without_an_ebpf_entry_has_no_split() {
        let prev = synthetic(3, 3, 10);
        let mut cur = synthetic(3, 3, 11);
        let gone = cur.procs[1].tasks[2].tid;
        cur.bpf.as_mut().unwrap().threads.retain(|t| t.tid != gone);
        let rows = threads(&cur, &prev);
        let t = |tid: u32| rows.iter().find(|t| t.tid == tid).unwrap();
        assert!(!t(gone).time.measured());
        let seen = t(cur.procs[1].tasks[1].tid);
        assert!(seen.time.measured());
        // Its parts add up to the second between the two fixture samples.
        assert!((seen.time.total() - 1.0).abs() < 1e-3, "{:?}", seen.time);
    }

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
        // The processes' thread sums are redone with their threads' rows.
        assert_eq!(sums(&cur, &prev), sums(&cur, &unordered));
        assert!(walked.iter().any(|t| t.cpu_pct_scan.get() > Some(0.0)));
        assert!(
            walked
                .iter()
                .any(|t| t.pid == cur.procs[3].pid && t.cpu_pct_scan.get().is_none())
        );
        // A current scan out of order part way: the rest is looked up in the table.
        let mut shuffled = cur.clone();
        shuffled.procs.swap(20, 30);
        let key = |v: &mut Vec<ThreadFrame>| {
            v.sort_by_key(|t| (t.tid, t.cpu_pct_scan.get().map(f64::to_bits)))
        };
        let (mut got, mut want) = (threads(&shuffled, &prev), walked);
        key(&mut got);
        key(&mut want);
        assert!(got == want, "same rows, in another order");
    }

    /// Churn: the process's own counter holds its exited threads' CPU (ghosts too), so a
    /// per-process scan sees it all; a per-thread scan sees only the threads listed, and
    /// misses the rest once, not the ghosts' share a second time. A thread new since the
    /// last scan counts all its ticks (top -H does). A process first seen has no scan
    /// figure and no miss; one gone at the scan is missed whole.
    #[test]
    fn the_miss_is_the_per_thread_views_and_counted_once() {
        use crate::model::fixtures::incident;
        let (prev, mut cur) = (incident(1, true), incident(2, true));
        let tiflash = cur.procs.iter_mut().find(|p| p.pid == 4242).unwrap();
        // 60 ticks more in the process counter than in its listed threads (threads that
        // exited), and a thread born since the last scan with 10 ticks.
        tiflash.utime += 60;
        let mut born = tiflash.tasks[1].clone();
        born.tid = 9999;
        born.utime = 10;
        tiflash.tasks.push(born);
        // A process first seen, and one gone at the scan.
        let mut newp = cur.procs[1].clone();
        newp.pid = 6000;
        newp.tasks.iter_mut().for_each(|t| t.tid += 6000);
        cur.procs.push(newp);
        cur.procs.retain(|p| p.pid != 1817);
        let f = scan_rows(Some(&prev), &cur, &AT, 4);
        let row = |pid| f.procs.iter().find(|p| p.pid == pid).unwrap();
        let t = row(4242);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(close(t.cpu_pct_scan.get(), 140.0 + 60.0));
        assert!(close(t.cpu_pct_scan_threads.get(), 140.0 + 10.0));
        // True 310%: the per-thread scan misses 160, the ghosts' 165% among it.
        assert!(close(t.scan_miss.get(), 310.0 - 150.0), "{:?}", t.scan_miss);
        let n = row(6000);
        assert_eq!(
            (
                n.cpu_pct_scan.get(),
                n.cpu_pct_scan_threads.get(),
                n.scan_miss.get()
            ),
            (None, None, None)
        );
        assert!(n.cpu_pct_true.is_some(), "eBPF measured it all the same");
        let g = row(1817);
        assert!(g.gone && g.cpu_pct_scan.get().is_none());
        assert!(close(g.scan_miss.get(), g.cpu_pct_true.unwrap()));
        // Without eBPF nothing is said to be missed.
        let (mut p0, mut c0) = (prev.clone(), cur.clone());
        (p0.bpf, c0.bpf) = (None, None);
        let at = Interval { bpf: false, ..AT };
        let f = scan_rows(Some(&p0), &c0, &at, 4);
        assert!(f.procs.iter().all(|p| p.scan_miss.get().is_none()));
    }
}
