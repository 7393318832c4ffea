//! mmap_lock contention under real eBPF (seed 002), checked against what the helper
//! workloads counted themselves and against the kernel-lock view of the same rwsem.
//! Needs root (CI runs as root and never skips). Other workloads may run on the machine
//! at the same time, so every check is filtered to the workload's own pid.

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
    let (mut all_ms, mut all_max_us, mut most_waiters) = (0.0, 0.0f64, 0);
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
            // Threads are counted once a row an interval, not once a wait: the victim's
            // two workers and its main thread (which maps their stacks) at most. A row
            // of a contended hold alone (the holder made others wait) has neither.
            let (n, waited) = (u(&r["waiters"]), u(&r["waits"]));
            assert!(
                n <= waited.min(3) && (n > 0) == (waited > 0),
                "{n} waiters of {waited} waits: {r}"
            );
            most_waiters = most_waiters.max(n);
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
    // Each worker waits ~100 times an interval, so a count of waits would be far above.
    eprintln!("most waiting threads in a row of an interval: {most_waiters}");
    assert!(most_waiters >= 2, "the two workers were never both counted");
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
        for r in all_lock_rows(fr) {
            if r["mmap_lock"] != Value::Bool(true) {
                continue;
            }
            for w in r["waiters"].as_array().unwrap() {
                if u(&w["pid"]) == vpid {
                    lock_waits += u(&w["contended"]);
                    // A row of locks_rest has no lock (its waits are counted).
                    if let Some(l) = r["lock"].as_str() {
                        locks.insert(l.to_string());
                    }
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
        for r in all_lock_rows(fr) {
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
