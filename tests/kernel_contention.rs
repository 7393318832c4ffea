//! Kernel-lock and mmap_lock contention under real eBPF, checked against what the
//! helper workloads counted themselves (the futex figures: kernel_futex.rs). Needs root
//! (CI runs as root and never skips). Other workloads may run on the machine at the same
//! time, so every check is filtered to the workload's own pid.

mod common;

use std::time::Duration;

use common::locks::*;
use common::stream::*;
use common::*;
use serde_json::Value;

/// Seed 002: a reader of /proc/V/environ, descheduled while it holds V's mmap_lock,
/// stalls V's threads that need the lock for writing. ttop names V as the victim and the
/// reader as the holder, and the waits it reports fit V's own timing of its calls: their
/// sum cannot exceed the time V spent inside them, and the longest wait is V's slowest
/// call (a stall behind the reader) within 10%.
#[test]
fn mmap_lock_holder_and_victim() {
    if !require_root("mmap_lock_holder_and_victim") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-n", "12", "-d", "0.5"]);
    let mut v = spawn_workload("mmaplock", &["victim", "2", "4"]);
    let (vh, vr) = first_line(&mut v);
    let vpid = num(&vh, "pid") as u64;
    let mut rd = spawn_workload("mmaplock", &["reader", &vpid.to_string(), "3.5"]);
    let (rh, rr) = first_line(&mut rd);
    let rpid = num(&rh, "pid") as u64;
    assert!(
        wait_timeout(&mut rd, Duration::from_secs(20)),
        "reader hung"
    );
    assert!(wait_timeout(&mut v, Duration::from_secs(20)), "victim hung");
    let vout = rest(vr);
    let _ = rest(rr);
    let frames = ttop.finish();
    let p = problems(&frames);
    assert!(
        !p.iter().any(|x| x.contains("mmap_lock view")),
        "mmap_lock probes missing: {p:?}"
    );

    // Waits of V's own threads on V's lock: by the reader, and by anyone.
    let (mut waits, mut wait_ms, mut hold_ms, mut waiters) = (0u64, 0.0, 0.0, 0u64);
    let (mut all_ms, mut all_max_us) = (0.0, 0.0f64);
    let mut holder_comm = String::new();
    let mut by_holder: std::collections::BTreeMap<u64, f64> = Default::default();
    // Where in user code: the reader's pread and the victim's mmap/munmap loop.
    let (mut holder_stacks, mut waiter_stacks) = (Vec::new(), Vec::new());
    let frames_of = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    for fr in &frames {
        for r in fr["mmap_lock"].as_array().unwrap() {
            if u(&r["victim_pid"]) != vpid {
                continue;
            }
            if u(&r["holder_pid"]) == rpid {
                hold_ms += f(&r["hold_ms"]) * f64::from(u(&r["waiter_pid"]) == vpid);
                holder_comm = r["holder_comm"].as_str().unwrap_or("").to_string();
                holder_stacks.push((r["holder_caller"].clone(), frames_of(&r["holder_stack"])));
                if u(&r["waiter_pid"]) == vpid {
                    waiter_stacks.push((r["waiter_caller"].clone(), frames_of(&r["waiter_stack"])));
                }
            }
            if u(&r["waiter_pid"]) != vpid {
                continue;
            }
            *by_holder.entry(u(&r["holder_pid"])).or_default() += f(&r["total_wait_ms"]);
            all_ms += f(&r["total_wait_ms"]);
            all_max_us = all_max_us.max(f(&r["max_wait_us"]));
            if u(&r["holder_pid"]) == rpid {
                waits += u(&r["waits"]);
                wait_ms += f(&r["total_wait_ms"]);
                waiters = waiters.max(u(&r["waiters"]));
            }
        }
    }
    let sys_ms = num(&vout, "sys_ms");
    let stall_ms = num(&vout, "stall_ms");
    let max_ms = num(&vout, "max_ms");
    eprintln!(
        "mmap_lock: victim {vpid} measured sys_ms={sys_ms:.1} stall_ms={stall_ms:.1} max_ms={max_ms:.1}; \
         ttop: by reader {rpid} ({holder_comm:?}) waits={waits} wait_ms={wait_ms:.1} hold_ms={hold_ms:.1} \
         waiters={waiters}; all holders wait_ms={all_ms:.1} max_ms={:.1}; by holder {by_holder:?}",
        all_max_us / 1000.0
    );
    assert!(
        stall_ms > 20.0,
        "the victim never stalled ({stall_ms} ms in calls over 1 ms): no contention to find"
    );
    assert!(
        waits > 0,
        "no mmap_lock wait of victim {vpid} attributed to holder {rpid}"
    );
    assert_eq!(holder_comm, "envreader");
    assert!(waiters >= 1);
    assert!(
        hold_ms > 0.0,
        "the reader's contended holds were not measured"
    );
    assert!(
        all_ms <= sys_ms * 1.02,
        "ttop says the victim's threads waited {all_ms:.1} ms, but they spent only {sys_ms:.1} ms in the calls that take the lock"
    );
    assert_within(
        "longest mmap_lock wait vs the victim's slowest call (ms)",
        all_max_us / 1000.0,
        max_ms,
        0.10,
    );
    // The user stacks of the rows: the reader held the lock from its pread of the
    // victim's environ (called from main), the victim's threads waited in mmap or
    // munmap called from their loop. Every kept stack must say so (a wrong one fails).
    let base = |f: &String| f.split(['+', ' ']).next().unwrap_or("").to_string();
    let named = |stacks: &[(Value, Vec<String>)], what: &str, want: &dyn Fn(&[String]) -> bool| {
        let kept: Vec<_> = stacks.iter().filter(|(_, s)| !s.is_empty()).collect();
        eprintln!("{what} stacks: {:?}", kept.first());
        assert!(!kept.is_empty(), "no {what} stack kept: {stacks:?}");
        for (caller, s) in kept {
            let names: Vec<String> = s.iter().map(base).collect();
            assert!(want(&names), "{what} stack {s:?} (caller {caller})");
        }
    };
    named(&holder_stacks, "holder", &|s| {
        s.iter().any(|f| f.contains("pread")) && s.iter().any(|f| f == "main")
    });
    named(&waiter_stacks, "waiter", &|s| {
        s.iter().any(|f| f.contains("mmap") || f.contains("munmap"))
            && s.iter().any(|f| f == "victim_loop")
    });
    for (caller, s) in &holder_stacks {
        if let Some(c) = caller.as_str().filter(|c| !c.is_empty()) {
            assert!(c.starts_with("main"), "holder caller {c} of {s:?}");
        }
    }
    for (caller, s) in &waiter_stacks {
        if let Some(c) = caller.as_str().filter(|c| !c.is_empty()) {
            assert!(c.starts_with("victim_loop"), "waiter caller {c} of {s:?}");
        }
    }
}

/// Every contended mmap_lock acquisition is also a kernel-lock wait on the same rwsem
/// (both come from lock:contention_begin), so the mmap_lock waits of the victim's threads
/// must equal its kernel-lock waits on mmap_lock, but for waits reported lost: an
/// operation ttop lost between start_locking and acquire_returned shows up as a
/// difference. The victim's threads
/// come in pairs whose tids share ttop's per-thread slot (tid % 8192), so one of each
/// pair often keeps its operation in the fallback hash, and a mover thread switches
/// them between CPUs every 200 us, so waiters and holders are moved with an operation
/// in flight; a /proc reader preempted while holding the lock makes the waits long.
#[test]
fn mmap_lock_waits_match_lock_waits() {
    if !require_root("mmap_lock_waits_match_lock_waits") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-n", "100", "-d", "0.5"]);
    let mut v = spawn_workload("mmaplock", &["victim", "2", "3", "collide", "hop"]);
    let (vh, vr) = first_line(&mut v);
    let vpid = num(&vh, "pid") as u64;
    let mut rd = spawn_workload("mmaplock", &["reader", &vpid.to_string(), "3"]);
    let (_, rr) = first_line(&mut rd);
    assert!(
        wait_timeout(&mut rd, Duration::from_secs(20)),
        "reader hung"
    );
    assert!(wait_timeout(&mut v, Duration::from_secs(30)), "victim hung");
    let vout = rest(vr);
    let rout = rest(rr);
    // A frame read after an acquisition was counted in one view and before the other:
    // compare the totals only once the workload has stopped.
    let frames = ttop.stop_after(2);
    let p = problems(&frames);
    if !kernel_locks_measured(&frames) {
        return;
    }
    assert!(
        !p.iter().any(|x| x.contains("mmap_lock view")),
        "mmap_lock probes missing: {p:?}"
    );
    let (mut mmap_waits, mut lock_waits) = (0u64, 0u64);
    let mut locks = std::collections::BTreeSet::new();
    for fr in &frames {
        for r in fr["mmap_lock"].as_array().unwrap() {
            if u(&r["victim_pid"]) == vpid && u(&r["waiter_pid"]) == vpid {
                mmap_waits += u(&r["waits"]);
            }
        }
        for r in fr["locks"].as_array().unwrap() {
            if r["mmap_lock"] != Value::Bool(true) {
                continue;
            }
            for w in r["waiters"].as_array().unwrap() {
                if u(&w["pid"]) == vpid {
                    lock_waits += u(&w["contended"]);
                    locks.insert(r["lock"].as_str().unwrap_or("").to_string());
                }
            }
        }
    }
    let pairs = num(&vout, "pairs");
    eprintln!(
        "mmap_lock: victim {vpid} pairs={pairs} calls={} stalls={}; reader reads={}; ttop: mmap_lock \
         waits={mmap_waits}, kernel-lock waits on mmap_lock={lock_waits} (locks {locks:?})",
        num(&vout, "calls"),
        num(&vout, "stalls"),
        num(&rout, "reads")
    );
    assert_eq!(pairs, 2.0, "the victim found no tids sharing a slot");
    assert!(
        lock_waits >= 50,
        "only {lock_waits} contended mmap_lock waits: no test"
    );
    assert_eq!(
        locks.len(),
        1,
        "the victim waited on several mmap_locks: {locks:?}"
    );
    // A contention_end the kernel-lock view lost is found when the mmap_lock operation
    // completes and reported as a lock_nest drop (once in ~50 runs, 3 of 19,221 waits
    // went missing that way before it was counted): the two views may differ by what
    // was reported lost, and by nothing else.
    let lost: u64 = frames
        .iter()
        .map(|fr| u(&fr["contention_drops"]["lock_nest"]))
        .sum();
    eprintln!("kernel-lock waits reported lost: {lost}");
    // And by the waits in flight at the first and the last read: a read walks the mmap_lock
    // entries first, so a wait ending before the kernel-lock walk is in one count only (a CI
    // run: 15,314 against 15,313, none lost). At most one per victim thread at each end.
    const IN_FLIGHT: u64 = 2;
    assert!(
        lock_waits <= mmap_waits + IN_FLIGHT && mmap_waits <= lock_waits + lost + IN_FLIGHT,
        "mmap_lock waits of the victim's threads ({mmap_waits}) vs their kernel-lock waits on \
         its mmap_lock ({lock_waits}), with {lost} reported lost"
    );
}

/// Thread churn (seed 000): every new thread takes its process's mmap_lock (madvise of its
/// stack, exit_mm) and they contend for it, tens of thousands of new waiting threads a
/// minute. The mmap_lock view keeps one row per waiting process and counts its threads,
/// so it loses nothing (it had a row per thread, filled its map within seconds and lost
/// thousands of waits an interval). Its waits match the kernel-lock view's waits on the
/// same rwsem, as in the test above, and its waiting threads are no more than the
/// workload had.
#[test]
fn mmap_lock_waits_under_thread_churn() {
    if !require_root("mmap_lock_waits_under_thread_churn") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-n", "100", "-d", "0.5"]);
    const BATCH: u64 = 8;
    let mut w = spawn_workload("bench_churn", &["5", &BATCH.to_string(), "20"]);
    let (wh, wr) = first_line(&mut w);
    let wpid = num(&wh, "pid") as u64;
    assert!(wait_timeout(&mut w, Duration::from_secs(30)), "churn hung");
    let created = num(&rest(wr), "created") as u64;
    let frames = ttop.stop_after(2);
    if !kernel_locks_measured(&frames) {
        return;
    }
    let (mut mmap_waits, mut lock_waits, mut waiters, mut nframes) = (0u64, 0u64, 0u64, 0u64);
    for fr in &frames {
        let mut seen = false;
        for r in fr["mmap_lock"].as_array().unwrap() {
            if u(&r["victim_pid"]) == wpid && u(&r["waiter_pid"]) == wpid {
                mmap_waits += u(&r["waits"]);
                waiters += u(&r["waiters"]);
                seen = true;
            }
        }
        nframes += u64::from(seen);
        for r in fr["locks"].as_array().unwrap() {
            if r["mmap_lock"] != Value::Bool(true) {
                continue;
            }
            for wt in r["waiters"].as_array().unwrap() {
                if u(&wt["pid"]) == wpid {
                    lock_waits += u(&wt["contended"]);
                }
            }
        }
    }
    let drops = |k: &str| -> u64 { frames.iter().map(|fr| u(&fr["contention_drops"][k])).sum() };
    let (lost_mmap, lost) = (drops("mmap"), drops("lock_nest"));
    let lost_data = frames
        .iter()
        .flat_map(|fr| fr["findings"].as_array().unwrap())
        .filter(|f| f["kind"] == "lost_data")
        .count();
    eprintln!(
        "churn {wpid}: created={created}; ttop: mmap_lock waits={mmap_waits} waiters={waiters} \
         in {nframes} frames, kernel-lock waits on mmap_lock={lock_waits}; lost: mmap={lost_mmap} \
         lock_nest={lost}; lost_data findings={lost_data}"
    );
    assert!(
        lock_waits >= 1000,
        "only {lock_waits} contended waits: no test"
    );
    assert_eq!(lost_mmap, 0, "mmap_lock waits lost under churn");
    assert_eq!(lost_data, 0, "lost_data fired under churn");
    // In flight at the first read: at most a batch of threads (the last read comes after
    // the workload ended).
    assert!(
        lock_waits <= mmap_waits + BATCH && mmap_waits <= lock_waits + lost + BATCH,
        "mmap_lock waits ({mmap_waits}) vs kernel-lock waits on the mmap_lock ({lock_waits}), \
         {lost} reported lost"
    );
    // Each thread counted once an interval: a thread alive across a read is in two, and
    // at most a batch and the main thread are alive at each read.
    assert!(
        waiters >= 1 && waiters <= created + 1 + nframes * (BATCH + 1),
        "{waiters} waiting threads in {nframes} frames of a workload of {created} threads"
    );
}

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
            for r in fr["locks"].as_array().unwrap() {
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
