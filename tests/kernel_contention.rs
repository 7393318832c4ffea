//! Kernel-lock contention under real eBPF, checked against what the helper workloads
//! counted themselves and against bpftrace (mmap_lock: kernel_mmap_lock.rs; the futex
//! figures: kernel_futex.rs). Needs root (CI runs as root and never skips). Other
//! workloads may run on the machine at the same time, so every check is filtered to the
//! workload's own pid.

mod common;

use std::time::Duration;

use common::locks::*;
use common::stream::*;
use common::*;
use serde_json::Value;

/// Kernel locks under a futex storm: the futex hash bucket's spinlock is taken on both
/// the wait and the wake path. ttop reuses a walked kernel stack for later waits whose
/// return-address chain matches it, so check that the two paths stay apart and that
/// every row names a real caller, never the locking code itself.
#[test]
fn kernel_lock_callers_keep_paths_apart() {
    if !require_root("kernel_lock_callers_keep_paths_apart") {
        return;
    }
    let _g = kernel_lock();
    // No ceiling on ttop's cost: every contention keeps its stack (model/shed.rs).
    let ttop = Stream::start(&["--json", "-n", "8", "-d", "0.5", "--bpf-budget", "off"]);
    let mut w = spawn_workload("futex_mutex", &["4", "3"]);
    let (head, _r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(20)),
        "futex_mutex hung"
    );
    let frames = ttop.finish();
    let pid = num(&head, "pid") as u64;
    if !kernel_locks_measured(&frames) {
        return;
    }
    // (lock, caller) -> waits of the workload.
    let rows = lock_waits_by(&frames, pid, |r| {
        (
            r["lock"].as_str().unwrap_or("").to_string(),
            r["caller"].as_str().unwrap_or("").to_string(),
        )
    });
    eprintln!("kernel lock waits of futex_mutex {pid}: {rows:?}");
    let lock_fns = [
        "_raw_",
        "queued_",
        "__pv_queued",
        "native_queued",
        "__traceiter",
        "bpf_",
    ];
    // "?" is a wait whose stack could not be stored (counted in contention_drops).
    for (lock, caller) in rows.keys() {
        assert!(!caller.is_empty(), "lock {lock}: a row without a caller");
        assert!(
            !lock_fns.iter().any(|p| caller.starts_with(p)),
            "lock {lock}: the caller {caller} is locking code: {rows:?}"
        );
    }
    // The futex hash bucket's lock, reached from the wait and from the wake path.
    let futex_callers: std::collections::BTreeSet<&str> = rows
        .keys()
        .filter(|(_, c)| c.starts_with("futex_") || c.starts_with("__futex"))
        .map(|(_, c)| c.as_str())
        .collect();
    eprintln!("futex callers of kernel locks: {futex_callers:?}");
    // The two paths stay apart: the waiters' (futex_wait_setup) and the wakers'
    // (futex_wake) are separate rows, neither folded into the other by the cache.
    for path in ["wait", "wake"] {
        assert!(
            futex_callers.iter().any(|c| c.contains(path)),
            "no futex {path} path among the bucket lock's callers: {futex_callers:?}"
        );
    }
}

/// The stack cache (bpf/lock_stacks.h) must name the same callers as a walk of every
/// contention: two ttops watch the same mutex storm, one with the cache off, and their
/// per-caller wait counts for the workload must agree. Both see every contention (each
/// runs its own program on every lock:contention_begin), so the only differences allowed
/// are the few waits each one's programs cause or miss themselves. Both hook every
/// futex call (--futex-calls), which slows the storm into mostly futex hash-bucket
/// waits from two call sites, the mix this test was built on; unslowed (the default),
/// run-queue lock waits of wake-ups dominate, whose scans find more stale words, and
/// the cache answered about 30% of them (the callers still agreed exactly).
#[test]
fn kernel_lock_stack_cache_names_the_walked_callers() {
    if !require_root("kernel_lock_stack_cache_names_the_walked_callers") {
        return;
    }
    let _g = kernel_lock();
    let (pid, fw, fc) = storm_seen_twice(&[("TTOP_LOCK_STACK_CACHE", "off")], &[]);
    if !kernel_locks_measured(&fc) || !kernel_locks_measured(&fw) {
        return;
    }
    let (cached, walked, wrong) = (
        stacks_sum(&fc, "cached"),
        stacks_sum(&fc, "walked"),
        stacks_sum(&fc, "wrong"),
    );
    eprintln!(
        "with the cache: {cached} cached, {walked} walked, {wrong} wrong; without: {} cached, {} walked",
        stacks_sum(&fw, "cached"),
        stacks_sum(&fw, "walked")
    );
    assert_eq!(
        stacks_sum(&fw, "cached"),
        0,
        "TTOP_LOCK_STACK_CACHE=off still cached"
    );
    // `wrong` counts sampled re-walks whose frames deeper than the key (the caller's
    // callers) differed from the cached stack's (CI saw 7 of 230,000): the callers
    // named must still agree with a walk of every event, checked below. Without the
    // cache nothing is re-walked.
    assert!(
        wrong <= walked,
        "{wrong} re-walks differed, of {walked} walks"
    );
    assert_eq!(stacks_sum(&fw, "wrong"), 0);
    let caller = |r: &Value| r["caller"].as_str().unwrap_or("").to_string();
    let a = lock_waits_by(&fw, pid, caller);
    let b = lock_waits_by(&fc, pid, caller);
    eprintln!("walked: {a:?}\ncached: {b:?}");
    assert!(
        cached > walked,
        "the cache answered too little under a mutex storm: {cached} cached, {walked} walked"
    );
    let (qa, qb) = callers_agree((&a, &fw), (&b, &fc));
    let (ta, tb): (u64, u64) = (a.values().sum(), b.values().sum());
    assert!(
        qa.max(qb) <= 10 + ta.max(tb) / 50,
        "too many waits without a stack: {qa} walked, {qb} cached (totals {ta}, {tb})"
    );
}

/// The reference for kernel-lock waits: lock:contention_begin to contention_end of the
/// workload's spinning waits (a spinning wait neither sleeps nor migrates, so the CPU and
/// the lock tell one wait), with no stack walk; each second, how many ended and their
/// total (ns). Attached after ttop: handlers of a tracepoint run in the order they were
/// attached, so its clock starts after ttop's contention_begin program (which walks
/// the stack) and stops after ttop's contention_end program (a map update: a few
/// hundred ns, which this reference counts as waiting and ttop does not).
const SPIN_WAITS: &str = r#"
tracepoint:lock:contention_begin
/comm == "bucketwalk" && (args->flags & 1) && !(args->flags & 32)/ {
  if (@s[cpu, args->lock_addr] == 0) { @s[cpu, args->lock_addr] = nsecs; }
}
tracepoint:lock:contention_end /@s[cpu, args->lock_addr]/ {
  @n = count();
  @w = sum(nsecs - @s[cpu, args->lock_addr]);
  delete(@s[cpu, args->lock_addr]);
}
interval:s:1 { print(@n); print(@w); clear(@n); clear(@w); }
END { print(@n); print(@w); clear(@s); clear(@n); clear(@w); }
"#;

/// Each side's mean wait in the seconds that had a storm going, and its count of the
/// workload's spinning waits over the whole run.
struct SpinWaits {
    ours: Vec<f64>,
    theirs: Vec<f64>,
    our_count: u64,
    their_count: u64,
}

/// One run of the spinlock storm beside ttop and the reference (None where the kernel
/// has no lock tracepoints, which `kernel_locks_measured` checked).
fn spin_waits_side_by_side() -> Option<SpinWaits> {
    let ttop = Stream::start(&["--json", "-d", "1"]);
    let bt = bpftrace::Bpftrace::start(SPIN_WAITS);
    let mut w = spawn_workload("bucketwalk", &["2", "200", "6"]);
    let (head, _r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(30)),
        "bucketwalk hung"
    );
    let reference = bt.stop();
    let frames = ttop.stop_after(2);
    if !kernel_locks_measured(&frames) {
        return None;
    }
    let pid = num(&head, "pid") as u64;
    // Seconds with a storm going (at least this many waits), each one's mean in us.
    const BUSY: u64 = 500;
    let field = |k: &str| -> Vec<u64> {
        let head = format!("@{k}: ");
        reference
            .lines()
            .filter_map(|l| l.strip_prefix(&head)?.trim().parse().ok())
            .collect()
    };
    let their_count = field("n").iter().sum();
    let theirs: Vec<f64> = field("n")
        .into_iter()
        .zip(field("w"))
        .filter(|&(n, _)| n >= BUSY)
        .map(|(n, ns)| ns as f64 / n as f64 / 1e3)
        .collect();
    let mut our_count = 0;
    let ours: Vec<f64> = frames
        .iter()
        .filter_map(|fr| {
            let (mut n, mut ms) = (0u64, 0.0);
            for r in all_lock_rows(fr) {
                if r["type"] != "spinlock" {
                    continue;
                }
                for wt in r["waiters"].as_array().unwrap() {
                    if u(&wt["pid"]) == pid {
                        n += u(&wt["contended"]);
                        ms += f(&wt["total_wait_ms"]);
                    }
                }
            }
            our_count += n;
            (n >= BUSY).then(|| ms * 1e3 / n as f64)
        })
        .collect();
    eprintln!("mean spinning wait per second (us): ttop {ours:.2?}, reference {theirs:.2?}");
    eprintln!("spinning waits in all: ttop {our_count}, reference {their_count}");
    Some(SpinWaits {
        ours,
        theirs,
        our_count,
        their_count,
    })
}

/// Short spinning waits are the lock's, not ttop's: two threads call FUTEX_WAKE on a
/// word whose futex hash bucket queues 200 waiters none of them wakes, so each call holds
/// the bucket's spinlock for a walk of the queue and they wait for each other a few
/// microseconds at a time. ttop's mean wait of the workload's spinning waits is the
/// reference's within 20%, as medians over the seconds of the storm (a second in which
/// the host stalled the VM inside one tool's program but not the other's stands alone).
/// ttop used to read the clock before walking the kernel stack: 3.8-4.0x a reference's
/// mean on a sub-microsecond storm (bench_spinlock), 1.8-3.9x in the issue. The count of
/// those waits over the run is the reference's within 0.1% (3-6 apart of 1.6-1.9 M, seen).
#[test]
fn spinlock_waits_exclude_ttops_own_stack_walk() {
    if !require_root("spinlock_waits_exclude_ttops_own_stack_walk")
        || !bpftrace::require_bpftrace("spinlock_waits_exclude_ttops_own_stack_walk")
    {
        return;
    }
    let _g = kernel_lock();
    // The storm needs both wakers on a CPU at once: on a machine busy with other work
    // it may not get going. Up to three runs, each retry said.
    let mut run = 1;
    let SpinWaits {
        ours,
        theirs,
        our_count,
        their_count,
    } = loop {
        let Some(w) = spin_waits_side_by_side() else {
            return;
        };
        if (w.ours.len() >= 3 && w.theirs.len() >= 3) || run == 3 {
            break w;
        }
        eprintln!("run {run}: the storm did not get going (a busy machine); once more");
        run += 1;
    };
    assert!(
        ours.len() >= 3 && theirs.len() >= 3,
        "too few seconds of storm in {run} runs: ttop {}, reference {}",
        ours.len(),
        theirs.len()
    );
    assert_within(
        "median of the mean spinning wait (us)",
        median(&ours),
        median(&theirs),
        0.20,
    );
    // Every wait counted once: each CPU adds its waits to its own sums, which reach the
    // shared entry only when it counts another lock (bpf/contention_locks.h), and the
    // frames add both.
    assert_within(
        "spinning waits counted",
        our_count as f64,
        their_count as f64,
        0.001,
    );
}
