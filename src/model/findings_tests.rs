//! Threshold edges of every rule, and the hysteresis of `judge`, on hand-made frames.

use super::contention_frame::{FutexFrame, MmapLockFrame};
use super::findings::*;
use super::findings_rules::*;
use super::frame::{CpuFrame, Frame, ProcFrame};
use super::latency::{LatCpuRow, LatThreadRow, LatencyFrame};
use super::opt::Opt;

fn frame() -> Frame {
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

fn proc_(pid: u32) -> ProcFrame {
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

/// Seed 000's evidence: a churning process whose threads sleep on glibc's stack-cache
/// lock has that word named in its thread_churn finding; a join word, a lock wait under
/// other code, another process's stack-cache lock and unnamed frames do not.
#[test]
fn thread_churn_names_the_stack_cache_lock_only_from_its_stack() {
    let stack = |frames: &[&str]| frames.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    let word = |pid: u32, uaddr: u64, frames: &[&str]| FutexFrame {
        pid,
        uaddr,
        contended: 130,
        waiters: Some(114),
        stack: stack(frames),
        ..Default::default()
    };
    let churn = |words: Vec<FutexFrame>| {
        let mut f = observe(&churn_frame(words));
        assert_eq!(f.len(), 1, "{f:?}");
        let ev = f[0].evidence.take();
        f[0].add_evidence(ev);
        f.into_iter().next().unwrap()
    };
    let lock = [
        "futex_wait",
        "__GI___lll_lock_wait_private",
        "__GI___nptl_deallocate_stack+0xe4",
        "__pthread_clockjoin_ex",
        "creator",
    ];
    let f = churn(vec![word(7, 0x7f00_1000, &lock)]);
    assert_eq!(f.addrs, ["7:0x7f001000"]);
    assert_eq!(f.figures["stack_cache_threads"], 114.0);
    assert_eq!(f.figures["stack_cache_waits_per_s"], 130.0);
    assert_eq!(
        f.summary,
        "w(7) creates 15000 short-lived threads/s; their ghosts burn 0% CPU a scan \
         cannot see; 114 of its threads queue on glibc's thread-stack cache lock (130 \
         waits/s): reuse threads (a pool) instead of creating one per task"
    );
    let create = [
        "__lll_lock_wait_private+0x2a",
        "get_cached_stack (inlined) allocatestack.c:112",
        "allocate_stack",
        "__pthread_create_2_1",
        "creator",
    ];
    assert_eq!(churn(vec![word(7, 0x10, &create)]).addrs, ["7:0x10"]);
    // Controls: no evidence, the finding itself unchanged.
    let join = [
        "__futex_abstimed_wait_common",
        "__pthread_clockjoin_ex",
        "creator",
    ];
    let other_lock = ["__lll_lock_wait_private", "_IO_fwrite", "creator"];
    // The dynamic linker's TLS lock, taken inside get_cached_stack (seen under
    // `creators`): a lock wait under a thread-stack function, but not its lock.
    let tls_lock = [
        "futex_wait (inlined) futex-internal.h:146",
        "__GI___lll_lock_wait+0x2b lowlevellock.c:49",
        "lll_mutex_lock_optimized (inlined) pthread_mutex_lock.c:48",
        "___pthread_mutex_lock+0x16a pthread_mutex_lock.c:128",
        "__GI__dl_allocate_tls_init+0x36 dl-tls.c:575",
        "get_cached_stack (inlined) allocatestack.c:140",
        "allocate_stack (inlined) allocatestack.c:360",
        "__pthread_create_2_1+0x896ed pthread_create.c:650",
    ];
    let unnamed = ["libc.so.6+0x8612b", "libc.so.6+0x9a0c1", "creators+0x1234"];
    for words in [
        vec![word(7, 0x20, &join)],
        vec![word(7, 0x30, &other_lock)],
        vec![word(7, 0x38, &tls_lock)],
        vec![word(8, 0x40, &lock)],
        vec![word(7, 0x50, &unnamed)],
        Vec::new(),
    ] {
        let f = churn(words);
        assert!(f.addrs.is_empty(), "{f:?}");
        assert!(!f.figures.contains_key("stack_cache_threads"));
        assert!(!f.summary.contains("stack cache"), "{}", f.summary);
    }
}

/// Frame `frame()` with process 7 creating and ending 15,000 threads in its second,
/// and futex rows `words`.
fn churn_frame(words: Vec<FutexFrame>) -> Frame {
    let mut fr = frame();
    let mut p = proc_(7);
    p.threads_created = Some(15_000);
    p.threads_exited = Some(15_000);
    fr.procs.push(p);
    fr.contention.futexes = words;
    fr
}

/// The stack-cache lock is contended in bursts: named in one interval of a churn, it
/// stays in the finding for the rest of the run (the latest seen), with that
/// interval's figures; a run that never saw it does not inherit an earlier run's.
#[test]
fn evidence_seen_during_a_run_stays_with_the_finding() {
    let lock = FutexFrame {
        pid: 7,
        uaddr: 0x108,
        contended: 90,
        waiters: Some(80),
        stack: [
            "__lll_lock_wait_private",
            "__nptl_deallocate_stack",
            "creator",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    // Per interval: None no churn; Some(None) churn without the lock's row;
    // Some(Some(n)) churn with the lock slept on by n threads.
    let window = |intervals: &[Option<Option<u32>>]| {
        let frames: Vec<Frame> = intervals
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut fr = match l {
                    Some(Some(n)) => churn_frame(vec![FutexFrame {
                        waiters: Some(*n),
                        ..lock.clone()
                    }]),
                    Some(None) => churn_frame(Vec::new()),
                    None => frame(),
                };
                fr.t = i as f64;
                fr
            })
            .collect();
        let refs: Vec<&Frame> = frames.iter().collect();
        findings(&refs)
            .into_iter()
            .find(|f| f.kind == "thread_churn")
    };
    let n = Some(None);
    let f = window(&[Some(Some(80)), n, n]).expect("churn held 3 intervals");
    assert_eq!(f.addrs, ["7:0x108"]);
    assert_eq!(f.figures["stack_cache_threads"], 80.0);
    assert_eq!(f.figures["stack_cache_waits_per_s"], 90.0);
    assert!(
        f.summary.contains("80 of its threads queue"),
        "{}",
        f.summary
    );
    assert!(f.evidence.is_none(), "merged, not left aside");
    // The latest sighting wins.
    let f = window(&[Some(Some(80)), Some(Some(20)), n]).unwrap();
    assert_eq!(f.figures["stack_cache_threads"], 20.0);
    // A run that never saw the lock cites nothing.
    let f = window(&[n, n, n]).unwrap();
    assert!(
        f.addrs.is_empty() && !f.summary.contains("stack cache"),
        "{f:?}"
    );
    // A gap ends the run: the lock of the run before is not carried over.
    let f = window(&[Some(Some(80)), n, n, None, n, n, n]).unwrap();
    assert!(f.active && f.addrs.is_empty(), "{f:?}");
    assert!(!f.figures.contains_key("stack_cache_threads"));
    // Lingering past its end, it keeps what its run saw.
    let f = window(&[n, Some(Some(80)), n, None]).unwrap();
    assert!(!f.active && f.addrs == ["7:0x108"], "{f:?}");
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
