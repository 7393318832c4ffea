//! Threshold edges of every rule, and the hysteresis of `judge`, on hand-made frames.

use crate::model::contention::frame::{FutexFrame, MmapLockFrame};
use crate::model::findings::rules::*;
use crate::model::findings::*;
use crate::model::frame::{CpuFrame, Frame, ProcFrame};
use crate::model::latency::{LatCpuRow, LatThreadRow, LatencyFrame};
use crate::model::opt::Opt;

pub(super) fn frame() -> Frame {
    Frame {
        t: 1000.0,
        interval_s: 1.0,
        mode: "bpf".into(),
        ncpus: 2,
        ..Default::default()
    }
}

fn kinds(fr: &Frame) -> Vec<&'static str> {
    observe(fr).iter().map(|f| f.kind).collect()
}

pub(super) fn proc_(pid: u32) -> ProcFrame {
    ProcFrame::named(pid, "w".into(), "w".into())
}

#[test]
fn procfs_only_guesses_nothing() {
    let mut fr = frame();
    fr.mode = "procfs".into();
    fr.runnable.true_avg = Some(10.0);
    fr.drops = 1000;
    assert!(observe(&fr).is_empty());
}

#[test]
fn thread_churn_edges() {
    let churn = |created: u64, exited: u64| {
        let mut fr = frame();
        let mut p = proc_(7);
        p.threads_created = Some(created);
        p.threads_exited = Some(exited);
        p.ghost_cpu_ms = Opt::some(600.0);
        fr.procs.push(p);
        kinds(&fr)
    };
    let n = CHURN_CREATED_PER_S as u64;
    assert_eq!(churn(n, n), ["thread_churn"]);
    assert!(churn(n - 1, n - 1).is_empty(), "below the rate");
    assert!(churn(n, n / 2 - 1).is_empty(), "a pool starting: few exits");
    let mut fr = frame();
    let mut p = proc_(7);
    (p.threads_created, p.threads_exited) = (Some(n), Some(n));
    p.ghost_cpu_ms = Opt::some(CHURN_GHOST_CPU_CRIT_PCT * 10.0);
    fr.procs.push(p);
    assert_eq!(observe(&fr)[0].severity, Severity::Critical);
}

#[test]
fn scan_undercount_edges() {
    let under = |avg: f64, scan: u32| {
        let mut fr = frame();
        fr.ncpus = 64; // no saturation
        fr.runnable.true_avg = Some(avg);
        fr.runnable.scan_running = scan;
        kinds(&fr)
    };
    assert_eq!(under(UNDERCOUNT_MIN_GAP, 0), ["scan_undercount"]);
    assert!(
        under(UNDERCOUNT_MIN_GAP - 0.01, 0).is_empty(),
        "gap too small"
    );
    assert_eq!(under(4.0, 2), ["scan_undercount"], "ratio 2 and a gap of 2");
    assert!(under(3.9, 2).is_empty(), "ratio under 2");
}

#[test]
fn cpu_saturation_edges() {
    let sat = |avg: f64, ncpus: u32| {
        let mut fr = frame();
        fr.ncpus = ncpus;
        fr.runnable.true_avg = Some(avg);
        fr.runnable.scan_running = avg as u32; // no undercount
        kinds(&fr)
    };
    // 2 CPUs: the whole-thread excess decides (3.0 > 2.5).
    assert_eq!(sat(3.0, 2), ["cpu_saturation"]);
    assert!(sat(2.99, 2).is_empty());
    // 16 CPUs: the ratio decides.
    assert_eq!(sat(20.0, 16), ["cpu_saturation"]);
    assert!(sat(19.9, 16).is_empty());
}

fn word(contended: u64, woken: u64, eagain: u64, wait_ms: f64) -> FutexFrame {
    FutexFrame {
        pid: 9,
        comm: "db".into(),
        uaddr: 0x1000,
        contended,
        woken,
        eagain: Some(eagain),
        total_wait_ms: wait_ms,
        avg_wait_us: if contended > 0 {
            wait_ms * 1e3 / contended as f64
        } else {
            0.0
        },
        ..Default::default()
    }
}

fn hot(w: FutexFrame) -> Vec<&'static str> {
    let mut fr = frame();
    fr.contention.futexes.push(w);
    kinds(&fr)
}

#[test]
fn hot_lock_edges() {
    let n = HOT_LOCK_WAITS_PER_S as u64;
    // A queue by wait share (1.2 threads asleep), woken by unlocks, 6 ms waits.
    assert_eq!(hot(word(200, 200, 0, 1200.0)), ["hot_lock"]);
    // A queue by EAGAIN retries with a small wait share.
    assert_eq!(hot(word(n, n, n, 300.0)), ["hot_lock"]);
    assert!(hot(word(n - 1, n, n, 300.0)).is_empty(), "too few waits");
    assert!(
        hot(word(n, n, n - 1, 300.0)).is_empty(),
        "no queue: share <= 1, few retries"
    );
    // EAGAINs not counted (no per-call hooks): only the wait share tells a queue, and
    // the summary cites no retries.
    let unmeasured = |w: FutexFrame| FutexFrame { eagain: None, ..w };
    assert!(hot(unmeasured(word(n, n, n, 300.0))).is_empty());
    let mut fr = frame();
    fr.contention
        .futexes
        .push(unmeasured(word(200, 200, 0, 1200.0)));
    let f = observe(&fr);
    assert_eq!(f[0].kind, "hot_lock");
    assert!(!f[0].summary.contains("retries"), "{}", f[0].summary);
    assert!(!f[0].figures.contains_key("eagain_per_s"));
    // Timed waits: nobody wakes them (the idle machine's 'contention').
    assert!(
        hot(word(200, 99, 0, 1200.0)).is_empty(),
        "ended by timeouts"
    );
    assert_eq!(hot(word(200, 100, 0, 1200.0)), ["hot_lock"]);
    // Idle workers on a condition variable: long sleeps.
    let avg_edge = HOT_LOCK_MAX_AVG_WAIT_MS * 200.0;
    assert_eq!(hot(word(200, 200, 0, avg_edge)), ["hot_lock"]);
    assert!(
        hot(word(200, 200, 0, avg_edge + 1.0)).is_empty(),
        "long sleeps"
    );
    // One waiter at a time, handed work by one waker: share 1.0, no retries.
    assert!(hot(word(1000, 1000, 0, 1000.0)).is_empty(), "a handoff");
    let by = |waiters: u32, w: FutexFrame| FutexFrame {
        waiters: Some(waiters),
        eagain: None,
        ..w
    };
    // Several threads queue on it, with short waits or a starved holder: fewer than one
    // asleep (a 4-thread storm on 2 CPUs: 0.7-0.8), no retries counted: hot all the same,
    // in a process that wants CPU (runnable, percent of a thread); in an idle one,
    // threads parked and woken for nothing (seed 003) are not a lock.
    let busy = |w: FutexFrame, cpu: f64| {
        let mut fr = frame();
        let mut p = proc_(9);
        p.runnable_avg = Opt::some(cpu / 100.0);
        fr.procs.push(p);
        fr.contention.futexes.push(w);
        fr
    };
    let hot_in = |w: FutexFrame, cpu: f64| kinds(&busy(w, cpu));
    let storm = by(HOT_LOCK_MIN_WAITERS, word(1500, 1490, 0, 750.0));
    let f = observe(&busy(storm.clone(), STORM_MAX_CPU_PCT));
    assert_eq!(f[0].kind, "hot_lock");
    assert!(
        f[0].summary.contains("1500 waits/s by 2 threads"),
        "{}",
        f[0].summary
    );
    assert_eq!(f[0].figures["waiters"], 2.0);
    assert!(
        hot_in(storm.clone(), STORM_MAX_CPU_PCT - 0.1).is_empty(),
        "an idle process"
    );
    assert!(
        hot_in(by(1, word(1000, 1000, 0, 1000.0)), 150.0).is_empty(),
        "one waiter"
    );
    // Many cheap waits by 4 threads: one of 64 shards (190 waits/s, 0.03 threads
    // asleep) is not hot; a tenth of a thread asleep is.
    let edge = HOT_LOCK_WAITERS_MIN_SHARE * 1e3;
    assert!(
        hot_in(by(4, word(190, 186, 0, 30.0)), 150.0).is_empty(),
        "a cheap shard"
    );
    assert!(hot_in(by(4, word(190, 186, 0, edge - 1.0)), 150.0).is_empty());
    assert_eq!(hot_in(by(4, word(190, 186, 0, edge)), 150.0), ["hot_lock"]);
    // ...but still not on few waits, timed waits nobody wakes, or long sleeps.
    assert!(
        hot_in(by(4, word(n - 1, n, 0, 150.0)), 150.0).is_empty(),
        "too few waits"
    );
    assert!(
        hot_in(by(4, word(200, 99, 0, 150.0)), 150.0).is_empty(),
        "timeouts"
    );
    assert!(
        hot_in(by(4, word(200, 200, 0, avg_edge + 1.0)), 150.0).is_empty(),
        "long sleeps"
    );
}

#[test]
fn idle_futex_storm_edges() {
    let storm = |calls: u64, cpu: f64| {
        let mut fr = frame();
        let mut p = proc_(5);
        p.futex_calls = Opt::some(calls);
        p.cpu_pct_true = Some(cpu);
        fr.procs.push(p);
        kinds(&fr)
    };
    let n = STORM_CALLS_PER_S as u64;
    assert_eq!(storm(n, STORM_MAX_CPU_PCT), ["idle_futex_storm"]);
    assert!(storm(n - 1, 1.0).is_empty());
    assert!(
        storm(n * 100, STORM_MAX_CPU_PCT + 0.1).is_empty(),
        "busy, not idle"
    );
    // Without the per-call hooks: waits that slept, each standing for a wait and the
    // wake that ended it.
    let slept = |slept: u64, calls: Option<u64>| {
        let mut fr = frame();
        let mut p = proc_(5);
        p.futex_slept = Opt::some(slept);
        if let Some(c) = calls {
            p.futex_calls = Opt::some(c);
        }
        p.cpu_pct_true = Some(1.0);
        fr.procs.push(p);
        observe(&fr)
    };
    let half = (STORM_CALLS_PER_S / STORM_CALLS_PER_SLEPT) as u64;
    let f = slept(half, None);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].figures["futex_slept_per_s"], half as f64);
    assert!(
        f[0].summary.contains("futex waits that slept/s"),
        "{}",
        f[0].summary
    );
    assert!(!f[0].figures.contains_key("futex_calls_per_s"));
    assert!(slept(half - 1, None).is_empty());
    // Calls, when counted, decide.
    assert!(slept(half, Some(n - 1)).is_empty());
    assert_eq!(slept(0, Some(n))[0].figures["futex_calls_per_s"], n as f64);
}

#[test]
fn mmap_lock_stall_edges() {
    let stall = |holder: u32, max_us: f64| {
        let mut fr = frame();
        fr.contention.mmap_lock.push(MmapLockFrame {
            victim_pid: 4242,
            waiter_pid: 4242,
            holder_pid: holder,
            max_wait_us: max_us,
            ..Default::default()
        });
        observe(&fr)
    };
    let edge = MMAP_STALL_MAX_WAIT_MS * 1e3;
    let f = stall(31999, edge);
    assert_eq!(f[0].kind, "mmap_lock_stall");
    assert_eq!(f[0].pids, [4242, 31999]);
    assert!(
        f[0].summary
            .starts_with("(4242)'s threads waited up to 10 ms for its mmap_lock held by (31999)"),
        "{}",
        f[0].summary
    );
    assert!(stall(31999, edge - 1.0).is_empty());
    // With the holder's user stack kept, the sentence says where it held the lock.
    let mut fr = frame();
    fr.contention.mmap_lock.push(MmapLockFrame {
        victim_pid: 4242,
        waiter_pid: 4242,
        holder_pid: 31999,
        max_wait_us: edge,
        holder_caller: "scan_environ+0x51".into(),
        ..Default::default()
    });
    let f = observe(&fr);
    assert!(
        f[0].summary
            .contains("held by (31999) in scan_environ+0x51: a reader"),
        "{}",
        f[0].summary
    );
    // Another process waiting (ttop reading /proc/4242, say) is named as the waiter.
    let mut fr = frame();
    fr.procs.push(proc_(77));
    fr.contention.mmap_lock.push(MmapLockFrame {
        victim_pid: 4242,
        waiter_pid: 77,
        holder_pid: 31999,
        max_wait_us: edge,
        ..Default::default()
    });
    let f = observe(&fr);
    assert_eq!(f[0].pids, [4242, 77, 31999]);
    assert!(
        f[0].summary
            .starts_with("w(77) waited up to 10 ms for (4242)'s mmap_lock"),
        "{}",
        f[0].summary
    );
    assert!(stall(4242, edge * 10.0).is_empty(), "its own threads");
    assert!(stall(0, edge * 10.0).is_empty(), "no holder seen");
}

#[test]
fn sched_stall_edges_name_the_cpu_and_time() {
    let stall = |max_us: f64| {
        let mut fr = frame();
        fr.latency = Some(LatencyFrame {
            cpus: vec![LatCpuRow {
                cpu: 1,
                max_at: Some(999.5),
                ..Default::default()
            }],
            threads: vec![LatThreadRow {
                tid: 11,
                pid: 10,
                comm: "sleeper".into(),
                max_us,
                max_at: 999.5,
                ..Default::default()
            }],
            threads_total: 1,
        });
        observe(&fr)
    };
    let f = stall(SCHED_STALL_MS * 1e3);
    assert_eq!(
        (f[0].kind, f[0].cpus.as_slice(), f[0].tids.as_slice()),
        ("sched_stall", &[1u32][..], &[11u32][..])
    );
    assert!(
        f[0].summary.contains("00:16:39.500 UTC on CPU 1"),
        "{}",
        f[0].summary
    );
    assert!(stall(SCHED_STALL_MS * 1e3 - 1.0).is_empty());
}

#[test]
fn tlb_storm_edges() {
    let tlb = |n: u64| {
        let mut fr = frame();
        let mut p = proc_(3);
        p.tlb_shootdowns_caused = Opt::some(n);
        fr.procs.push(p);
        fr.cpus.push(CpuFrame {
            cpu: 1,
            tlb_shootdowns: Some(n),
            ..Default::default()
        });
        observe(&fr)
    };
    let n = TLB_STORM_PER_S as u64;
    let f = tlb(n);
    assert_eq!(
        (f[0].kind, f[0].cpus.as_slice()),
        ("tlb_storm", &[1u32][..])
    );
    assert!(tlb(n - 1).is_empty());
    assert_eq!(
        tlb(TLB_STORM_CRIT_PER_S as u64)[0].severity,
        Severity::Critical
    );
}

#[test]
fn lost_data_edges() {
    let lost = |gaps: u64, map: u64| {
        let mut fr = frame();
        fr.drops_by_map.sched_gaps = gaps;
        fr.drops = gaps + map;
        kinds(&fr)
    };
    let g = lost_gaps_threshold(frame().interval_s).ceil() as u64;
    assert_eq!(lost(g, 0), ["lost_data"]);
    assert!(lost(g - 1, 0).is_empty(), "a stray skipped event");
    assert_eq!(lost(0, 1), ["lost_data"], "any full map");
    // A short interval is judged on a count, not on a burst of a few scaled up.
    let mut fr = frame();
    fr.interval_s = 0.1;
    fr.drops_by_map.sched_gaps = LOST_SCHED_GAPS_MIN as u64 - 1;
    fr.drops = fr.drops_by_map.sched_gaps;
    assert!(kinds(&fr).is_empty(), "19 gaps in 0.1 s");
    fr.drops_by_map.sched_gaps += 1;
    fr.drops += 1;
    assert_eq!(kinds(&fr), ["lost_data"], "20 gaps in 0.1 s");
    // A stale latency sample is a skipped event's echo (seen on an idle machine: one
    // gap and one stale sample in an interval), not a full map.
    let mut fr = frame();
    fr.drops_by_map.sched_gaps = 1;
    fr.drops_by_map.lat_stale = 1;
    fr.drops = 2;
    assert!(kinds(&fr).is_empty(), "a gap and its stale sample");
    fr.drops_by_map.sched_gaps = g - 1;
    fr.drops_by_map.lat_stale = g - 1;
    fr.drops = 2 * g - 2;
    assert!(kinds(&fr).is_empty(), "each stale sample echoes a gap");
    fr.drops_by_map.lat_stale = g;
    fr.drops = 2 * g - 1;
    assert_eq!(kinds(&fr), ["lost_data"], "more stale samples than gaps");
    let mut fr = frame();
    fr.contention.contention_drops.stacks = 50;
    assert!(kinds(&fr).is_empty(), "missing stacks lose no counts");
}

/// A window where `present[i]` says whether one condition-kind candidate showed.
fn run(present: &[bool]) -> Vec<Finding> {
    let obs: Vec<_> = present
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let c = Finding {
                kind: "tlb_storm",
                severity: if i == 1 {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                pids: vec![3],
                key: 3,
                ..Default::default()
            };
            (i as f64, if p { vec![c] } else { vec![] })
        })
        .collect();
    judge(&obs)
}

#[test]
fn a_condition_holds_before_it_shows_and_lingers_marked_past() {
    assert!(run(&[true, true]).is_empty(), "HOLD - 1 intervals");
    let f = run(&[false, true, true, true]);
    assert_eq!((f.len(), f[0].active, f[0].since), (1, true, 1.0));
    assert_eq!(f[0].severity, Severity::Critical, "the worst of the run");
    assert!(
        run(&[true, true, false, true]).is_empty(),
        "a gap restarts the count"
    );
    let mut w = vec![true; HOLD];
    w.extend(vec![false; LINGER]);
    let f = run(&w);
    assert_eq!((f.len(), f[0].active), (1, false), "past, still listed");
    w.push(false);
    assert!(run(&w).is_empty(), "gone after LINGER");
}

/// `run`, with frame i at time `t[i]`.
fn run_at(t: &[f64], present: &[bool]) -> Vec<Finding> {
    let obs: Vec<(f64, Vec<Finding>)> = t
        .iter()
        .zip(present)
        .map(|(&t, &p)| {
            let c = Finding {
                kind: "thread_churn",
                pids: vec![3],
                key: 3,
                ..Default::default()
            };
            (t, if p { vec![c] } else { vec![] })
        })
        .collect();
    judge(&obs)
}

#[test]
fn two_long_intervals_hold_as_three_short_ones() {
    // CI under churn: ttop's ticks stretched to 2.4 s and 6.6 s.
    let f = run_at(&[0.0, 2.4, 9.0], &[false, true, true]);
    assert_eq!((f.len(), f[0].active, f[0].since), (1, true, 2.4));
    // One long interval is still one busy interval.
    assert!(run_at(&[0.0, 9.0], &[false, true]).is_empty());
    // Two 1 s intervals are not enough, three are.
    assert!(run_at(&[0.0, 1.0, 2.0], &[false, true, true]).is_empty());
    assert_eq!(
        run_at(&[0.0, 1.0, 2.0, 3.0], &[false, true, true, true]).len(),
        1
    );
    // A run that starts the window has no known start: counted in intervals.
    assert!(run_at(&[0.0, 5.0], &[true, true]).is_empty());
}

#[test]
fn events_show_at_once_and_active_come_first() {
    let stall = Finding {
        kind: "sched_stall",
        severity: Severity::Warning,
        key: 1,
        ..Default::default()
    };
    let lost = Finding {
        kind: "lost_data",
        severity: Severity::Info,
        ..Default::default()
    };
    let crit = Finding {
        kind: "mmap_lock_stall",
        severity: Severity::Critical,
        key: 2,
        ..Default::default()
    };
    let obs = vec![(0.0, vec![crit]), (1.0, vec![stall.clone(), lost.clone()])];
    let f = judge(&obs);
    let got: Vec<_> = f.iter().map(|f| (f.kind, f.active)).collect();
    assert_eq!(
        got,
        [
            ("sched_stall", true),
            ("lost_data", true),
            ("mmap_lock_stall", false)
        ]
    );
}

#[test]
fn the_window_equals_the_pure_function() {
    let mut frames = Vec::new();
    for i in 0..(WINDOW + 4) {
        let mut fr = frame();
        fr.t = i as f64;
        fr.runnable.true_avg = Some(if i % 7 < 4 { 5.0 } else { 0.5 });
        fr.runnable.scan_running = 5;
        frames.push(fr);
    }
    let mut w = Window::new();
    for i in 0..frames.len() {
        let mut fr = frames[i].clone();
        w.push(&mut fr);
        let from = (i + 1).saturating_sub(WINDOW);
        let refs: Vec<&Frame> = frames[from..=i].iter().collect();
        assert_eq!(fr.findings, findings(&refs), "frame {i}");
    }
}
