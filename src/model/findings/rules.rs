//! The rules: which patterns one Frame shows, before hysteresis (`findings::judge`).
//! Every threshold is a named constant with the reason beside it; README "Findings"
//! lists them. A rule that needs eBPF figures sees None in procfs-only mode and stays
//! silent: it never guesses from the scan.

use crate::model::findings::evidence::stack_cache_evidence;
use crate::model::findings::{Finding, FindingView, Severity, fig};
use crate::model::frame::Frame;

mod irq;
mod locks;
mod threads;
use irq::tlb_storm;
use locks::{hot_lock, idle_futex_storm, mmap_lock_stall};
use threads::{cpu_saturation, scan_undercount, sched_stall, thread_churn};

/// thread_churn: threads created per second by one process. A thread pool creates none
/// once warm; services that spawn a thread per request stay well under this. Seed 000
/// created thousands a second.
pub const CHURN_CREATED_PER_S: f64 = 200.0;
/// ...and most of them must be short-lived: exits at least half the creations (a
/// process starting a big pool creates many once and keeps them).
pub const CHURN_EXIT_SHARE: f64 = 0.5;
/// Critical when the ghost threads (born and dead between scans) burn this much CPU,
/// percent of one CPU: work no thread's own counter shows. (A per-process scan, plain
/// top, sees it: a process's own counter holds its exited threads' CPU; procps top -H
/// shows that counter on the main thread's row.)
pub const CHURN_GHOST_CPU_CRIT_PCT: f64 = 50.0;

/// scan_undercount: true runnable / what the scan saw. The Frame marks 1.5 already;
/// a finding asks for twice, so the scan is plainly wrong, not just unlucky.
pub const UNDERCOUNT_RATIO: f64 = 2.0;
/// ...and at least this many threads missing: one thread is a coin toss of a scan
/// landing while a short burst runs.
pub const UNDERCOUNT_MIN_GAP: f64 = 1.5;

/// cpu_saturation: runnable threads per CPU, time-averaged. Above 1 someone waits;
/// 1.25 means threads wait for a CPU a fifth of the time on average.
pub const SATURATION_PER_CPU: f64 = 1.25;
/// ...and at least one whole thread more than CPUs (on 1-2 CPUs, 1.25x is a fraction).
pub const SATURATION_MIN_EXCESS: f64 = 1.0;
/// Critical at twice as many runnable threads as CPUs.
pub const SATURATION_CRIT_PER_CPU: f64 = 2.0;

/// hot_lock: contended waits per second on one futex word. Each is a sleep and a wake,
/// two context switches; fewer than this costs little.
pub const HOT_LOCK_WAITS_PER_S: f64 = 100.0;
/// ...and more than one thread wants it at once, shown either way: its waiters sleep
/// more than one thread's worth of time (wait ms per ms: a queue; one thread sleeping
/// on its own wait never exceeds 1), or waits that found the word changed (EAGAIN)
/// are at least as many as those that slept (other threads took and released it in
/// between: a handoff between one waiter and one waker has almost none).
pub const HOT_LOCK_WAIT_SHARE: f64 = 1.0;
pub const HOT_LOCK_EAGAIN_PER_WAIT: f64 = 1.0;
/// ...or this many threads slept on it within the interval, in a process that wants CPU
/// (its threads runnable, on a CPU or waiting for one, at least STORM_MAX_CPU_PCT of a
/// thread on average: below it, parked threads woken for nothing are seed 003's idle
/// storm, not a lock; runnable, not CPU, as a storm starved of CPU by a busy machine got
/// 6% of one and still made 990 waits/s). A queue of short waits, or one whose holder waits
/// for a CPU between them, sleeps less than a thread's worth in all: 4 threads storming
/// one mutex on 2 CPUs made 1,000-10,000 waits/s with 0.7-0.8 threads asleep (and
/// EAGAINs are not counted without the per-call hooks). A handoff between one waiter
/// and one waker (a ticker, a pthread_join) has one.
pub const HOT_LOCK_MIN_WAITERS: u32 = 2;
/// ...whose waits together cost at least a tenth of a thread asleep. Four threads on 64
/// shards of that storm, beside 1,000 threads in timed waits, put 105-190 waits/s by 4
/// threads on each shard but 0.02-0.03 threads asleep (each lock cheap, none hot); the
/// one mutex had 0.3-0.4 at its slowest and 1-2.5 in its fast regime.
pub const HOT_LOCK_WAITERS_MIN_SHARE: f64 = 0.1;
/// ...the waits are ended by wakes on the word (woken >= half the waits), not by
/// timeouts: a timed wait that expires has nobody waking it.
pub const HOT_LOCK_WOKEN_SHARE: f64 = 0.5;
/// ...and short: a waiter for a lock waits for critical sections to pass (micro- to
/// milliseconds); idle workers on a condition variable sleep until work comes.
pub const HOT_LOCK_MAX_AVG_WAIT_MS: f64 = 20.0;
/// Critical when waiters sleep this many threads' worth of time (a real convoy).
pub const HOT_LOCK_CRIT_SHARE: f64 = 4.0;

/// idle_futex_storm: futex calls per second by one process. Seed 003's idle Go ticker
/// made thousands; a process that is really idle makes a handful.
pub const STORM_CALLS_PER_S: f64 = 1000.0;
/// Without the per-call hooks (the default) only waits that slept are counted: each
/// park-and-wake cycle is a wait that slept and the wake call that ended it, so a
/// slept wait stands for two calls (seed 003's 1 kHz ticker: 1000 slept, 2000 calls).
pub const STORM_CALLS_PER_SLEPT: f64 = 2.0;
/// ...while it uses little CPU (percent of one CPU): a busy program may call futex
/// often for real work; an idle one should not.
pub const STORM_MAX_CPU_PCT: f64 = 20.0;

/// mmap_lock_stall: the longest wait for a process's mmap_lock held by another
/// process. A page fault takes microseconds; 10 ms is a stall a user can feel.
pub const MMAP_STALL_MAX_WAIT_MS: f64 = 10.0;
/// Critical at 100 ms (seed 002's stalls were hundreds of ms).
pub const MMAP_STALL_CRIT_MS: f64 = 100.0;

/// sched_stall: a thread waited this long runnable (from its wake-up or preemption) to
/// running. A few scheduler
/// slices (a few ms each) is normal under load; 50 ms is a visible hiccup.
pub const SCHED_STALL_MS: f64 = 50.0;
/// Critical at 250 ms (a request timeout's worth).
pub const SCHED_STALL_CRIT_MS: f64 = 250.0;

/// tlb_storm: remote TLB shootdowns per second caused by one process. Each interrupts
/// another CPU for a few microseconds; an ordinary program causes tens.
pub const TLB_STORM_PER_S: f64 = 1000.0;
/// Critical at 20,000/s: seed 000's storm, CPUs spend percent of their time flushing.
pub const TLB_STORM_CRIT_PER_S: f64 = 20_000.0;

/// lost_data: scheduler events the kernel skipped per second. A skipped switch costs one
/// latency sample, no CPU time (that is read from the kernel's own counter). On 6.18 in a
/// VM an idle machine shows one to three a second that perf's own trace misses too
/// (idle-to-kworker switches), and CI saw six in half a second while processes exited;
/// fifty a second is a kernel or collector dropping events in earnest. Any event a full
/// map dropped counts at once.
pub const LOST_SCHED_GAPS_PER_S: f64 = 50.0;
/// ... and at least this many in the interval, so a short interval (`-d 0.1`) is not
/// judged on a burst of a few.
pub const LOST_SCHED_GAPS_MIN: f64 = 20.0;

/// The skipped scheduler events that make an interval of `secs` lose data.
pub fn lost_gaps_threshold(secs: f64) -> f64 {
    (LOST_SCHED_GAPS_PER_S * secs).max(LOST_SCHED_GAPS_MIN)
}

/// Stable key of a candidate (a process, a word, a lock), mixed from its parts.
fn key(parts: &[u64]) -> u64 {
    parts.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &p| {
        (h ^ p).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The candidates one frame shows.
pub fn observe(fr: &Frame) -> Vec<Finding> {
    let mut out = Vec::new();
    // From cgroupfs: procfs-only mode has these too.
    super::cgroup::observe(fr, &mut out);
    if fr.mode != "bpf" {
        return out;
    }
    let secs = fr.interval_s.max(1e-3);
    thread_churn(fr, secs, &mut out);
    scan_undercount(fr, &mut out);
    cpu_saturation(fr, &mut out);
    hot_lock(fr, secs, &mut out);
    idle_futex_storm(fr, secs, &mut out);
    mmap_lock_stall(fr, &mut out);
    sched_stall(fr, &mut out);
    tlb_storm(fr, secs, &mut out);
    lost_data(fr, &mut out);
    out
}

/// `pids` without repeats, in order.
fn dedup(pids: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(pids.len());
    for &p in pids {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn name(fr: &Frame, pid: u32) -> String {
    fr.procs
        .iter()
        .find(|p| p.pid == pid)
        .map(|p| format!("{}({pid})", p.comm.as_ref()))
        .unwrap_or_else(|| format!("pid {pid}"))
}

/// Events lost in a frame, when enough were lost that figures on screen are floors:
/// (events a full map or an untracked nesting dropped, skipped scheduler events). A
/// stack that could not be stored is not counted: its wait is, under caller `?`
/// (`drops` leaves it out). A latency sample dropped as stale is the echo of a skipped
/// scheduler event (the wait it would have timed spans the missed switch): the same
/// loss, not another one.
pub fn lost(fr: &Frame) -> Option<(u64, u64)> {
    if fr.mode != "bpf" {
        return None;
    }
    let d = &fr.drops_by_map;
    let gaps = d.sched_gaps.max(d.lat_stale);
    let maps = fr.drops.saturating_sub(d.sched_gaps + d.lat_stale);
    let secs = fr.interval_s.max(1e-3);
    (maps > 0 || gaps as f64 >= lost_gaps_threshold(secs)).then_some((maps, gaps))
}

fn lost_data(fr: &Frame, out: &mut Vec<Finding>) {
    let Some((maps, gaps)) = lost(fr) else {
        return;
    };
    let lost = maps + gaps;
    out.push(Finding {
        kind: "lost_data",
        severity: Severity::Info,
        summary: format!(
            "{lost} events lost this interval (full kernel maps or skipped scheduler events): \
             the figures are floors"
        ),
        figures: fig(&[
            ("lost", lost as f64),
            ("sched_gaps", fr.drops_by_map.sched_gaps as f64),
            ("lat_stale", fr.drops_by_map.lat_stale as f64),
            ("map_drops", maps as f64),
        ]),
        view: FindingView::Main,
        key: 0,
        ..Default::default()
    });
}
