//! Contention: futex waits that slept, the waiter's user stack unwound from .eh_frame,
//! and what naming user frames costs a process's mmap_lock.

use std::time::Duration;

use super::super::common::stream::{Stream, f, first_line, num, rest, u};
use super::super::common::watch::{names, pid_of};
use super::super::common::*;
use super::{in_vm, output, tracepoint};

/// A 4-thread mutex storm: the waits that slept, whichever hook counts them on this
/// kernel, match the workload's own count of FUTEX_WAITs that returned 0 (within
/// 5%); the per-call figures are null unless every call is hooked.
#[test]
fn futex_slept_waits_match_the_workload() {
    if !require_root("futex_slept_waits_match_the_workload") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-d", "0.5", "-n", "400"]);
    // 2 s here and in the guests: a guest's storm slept 179-414 times in 2 s (two guests
    // side by side; 800-900 in 4 s alone), ttop's count equal to the workload's each time:
    // over three times the 50 asked for.
    let mut w = spawn_workload("futex_mutex", &["4", "2"]);
    let (head, r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(120)),
        "futex_mutex hung"
    );
    let out = rest(r);
    let frames = ttop.stop_after(2);
    let pid: u64 = head["pid"].parse().unwrap();
    let mutex = u64::from_str_radix(head["mutex"].trim_start_matches("0x"), 16).unwrap();
    let slept = num(&out, "slept");
    let calls_hooked = frames
        .iter()
        .any(|fr| fr["contention_measured"]["futex_calls"] == true);
    let mut contended = 0;
    for fr in &frames {
        assert_eq!(fr["contention_measured"]["futex"], true);
        for r in fr["futexes"].as_array().unwrap() {
            if u(&r["pid"]) == pid && u(&r["uaddr"]) == mutex {
                contended += u(&r["contended"]);
                if fr["contention_measured"]["futex_calls"] == false {
                    assert!(r["calls"].is_null() && r["eagain"].is_null(), "{r}");
                }
            }
        }
    }
    eprintln!(
        "futex_mutex slept {slept}; ttop contended {contended} (calls hooked: {calls_hooked})"
    );
    assert!(slept > 50.0, "the storm hardly slept ({slept})");
    assert_within("waits that slept", contended as f64, slept, 0.05);
}

/// A mutex contended three calls deep in a program without frame pointers: the
/// waiter's stack comes out whole, unwound from .eh_frame.
#[test]
fn user_stack_is_unwound_through_eh_frame() {
    if !require_root("user_stack_is_unwound_through_eh_frame") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-d", "1", "-n", "400"]);
    let mut w = spawn_workload("deepmutex", &["4", "3"]);
    let pid = pid_of(&mut w);
    let _ = output(w);
    let frames = ttop.stop_after(1);
    let base = |s: &String| s.split('+').next().unwrap_or("").to_string();
    let stacks: Vec<Vec<String>> = frames
        .iter()
        .flat_map(|fr| fr["futexes"].as_array().unwrap())
        .filter(|r| u(&r["pid"]) == pid)
        .map(names)
        .collect();
    let whole = stacks
        .iter()
        .filter(|s| {
            s.windows(3).any(|w| {
                w.iter().map(base).collect::<Vec<_>>() == ["level3_takes_lock", "level2", "level1"]
            })
        })
        .count();
    eprintln!(
        "{whole} of {} futex rows of deepmutex hold the whole chain",
        stacks.len()
    );
    assert!(
        whole > 0,
        "no stack holds level3_takes_lock <- level2 <- level1: {stacks:#?}"
    );
}

/// Seed 002 on kernels without PROCMAP_QUERY (before 6.11): naming a process's user
/// frames reads its whole /proc/PID/maps, which takes its mmap_lock. ttop does so only
/// for an address no known mapping holds, at most once per process every 30 s (never
/// on 6.11+), and what those reads cost is measured with ttop as seed 002's throttled
/// reader (nice 19, on CPU 0 beside a spinner) of a process that maps and unmaps all
/// the time: its mmap_lock waits on ttop, where the kernel has the mmap_lock
/// tracepoints to see them (not 5.10).
#[test]
fn maps_text_reads_are_rare_and_cheap() {
    if !require_root("maps_text_reads_are_rare_and_cheap") {
        return;
    }
    let _g = kernel_lock();
    let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = rel
        .split(|c: char| !c.is_ascii_digit())
        .map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (v.next().unwrap(), v.next().unwrap());
    let query = (major, minor) >= (6, 11);
    let secs = if in_vm() { "8" } else { "5" };
    let spin = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(workload("spin"))
        .args(["1", secs])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("taskset spin");
    let ttop = Stream::start_under(
        &["taskset", "-c", "0", "nice", "-n", "19"],
        &["--json", "-d", "1", "-n", "400"],
        &[],
    );
    let tpid = u64::from(ttop.pid());
    let mut victim = spawn_workload("mmaplock", &["victim", "2", secs]);
    let mut locker = spawn_workload("deepmutex", &["4", secs]);
    let (vpid, lpid) = (pid_of(&mut victim), pid_of(&mut locker));
    let _ = output(victim);
    let _ = output(locker);
    let frames = ttop.stop_after(1);
    let mut spin = spin;
    let _ = spin.kill();
    let _ = spin.wait();
    let reads: u64 = frames
        .iter()
        .map(|fr| u(&fr["user_frames"]["maps_reads"]))
        .sum();
    let (mut waits, mut wait_ms, mut max_ms) = (0u64, 0.0f64, 0.0f64);
    let mut rows = 0;
    // The processes whose frames were named (each may cost one read).
    let mut named = std::collections::BTreeSet::new();
    for fr in &frames {
        for r in fr["futexes"].as_array().unwrap() {
            if !names(r).is_empty() {
                named.insert(u(&r["pid"]));
            }
        }
        for r in fr["mmap_lock"].as_array().unwrap() {
            for (pid, stack) in [
                ("waiter_pid", "waiter_stack"),
                ("holder_pid", "holder_stack"),
            ] {
                if r[stack].as_array().is_some_and(|s| !s.is_empty()) {
                    named.insert(u(&r[pid]));
                }
            }
            rows += 1;
            if u(&r["victim_pid"]) == vpid && u(&r["holder_pid"]) == tpid {
                waits += u(&r["waits"]);
                wait_ms += f(&r["total_wait_ms"]);
                max_ms = max_ms.max(f(&r["max_wait_us"]) / 1000.0);
            }
        }
    }
    let mmap = tracepoint("mmap_lock", "mmap_lock_start_locking");
    eprintln!(
        "PROCMAP_QUERY {query}: {reads} maps texts read for {} processes named {named:?} \
         (victim {vpid}, locker {lpid}); \
         mmap_lock rows {rows}; the victim's waits on ttop ({tpid}): {waits}, \
         {wait_ms:.3} ms in all, longest {max_ms:.3} ms{}",
        named.len(),
        if mmap {
            ""
        } else {
            " (not measurable: no mmap_lock tracepoints)"
        }
    );
    if query {
        assert_eq!(reads, 0, "PROCMAP_QUERY answers without the text");
    } else {
        // Each process named read once at most (the run is shorter than 30 s).
        assert!(named.contains(&lpid), "the locker's stacks were not named");
        assert!(
            reads >= 1 && reads as usize <= named.len(),
            "{reads} maps texts read in {secs} s for {} processes",
            named.len()
        );
    }
    // A read costs the victim at most a few ms of waiting, throttled reader or not.
    // (Under QEMU's TCG every instruction is emulated and ttop's reads of the victim's
    // memory (its command line, a PROCMAP_QUERY) are preempted while they hold the lock:
    // a 6.12 guest on a host busy with builds saw 62 ms in 3 waits, 2.5 ms on a quiet one.)
    // In a guest the number of such preempted holds varies (3 waits, 62 ms; 4 waits,
    // 87 ms in a CI-like run), so there the bound is on each wait: seed 002's stall is
    // one wait of hundreds of ms (500 ms in the article), a TCG preemption one of ~25 ms,
    // and up to 64 ms (6.12, 2 waits) while the three guests share the host's two cores:
    // a guest's vCPU thread descheduled on the host holds the lock that long.
    // On the host the bound is on each wait too: the victim's two threads can both wait
    // on one hold of ttop's preempted by the spinner on its CPU. A CI run saw 2 waits of
    // 20 ms (40 ms in all; which hold was not recorded); most runs see none, and the
    // holds seen by hand were ttop's pread64 of a /proc file of the victim's
    // (procfs::files::read_whole), 0.06 ms.
    let bound = if in_vm() { 150.0 } else { 50.0 };
    assert!(
        max_ms <= bound,
        "a wait of {max_ms:.2} ms on ttop ({wait_ms:.2} ms in {waits} waits)"
    );
}
