//! Who woke the futex waits, under real eBPF: a waiter sleeps on a word in a shared
//! mapping and a waker wakes it (tests/workloads/futex_waker.c). Needs root (CI runs as
//! root and never skips). Other workloads may run on the machine at the same time, so
//! every check is filtered to the waiter's pid and word.

mod common;

use std::time::Duration;

use common::stream::*;
use common::*;
use serde_json::Value;

/// What ttop said about the waiter's word over the run.
struct Seen {
    /// Waits woken by a futex wake, and of them by another process.
    woken: u64,
    other: u64,
    /// Every (waker_pid, waker_comm) a frame named, with the frame's woken count.
    wakers: Vec<(u64, String, u64)>,
}

/// futex_waker MODE for 2 s, a wake every 500 us, under `ttop --json` (the default
/// futex programs: the scheduler's): the workload's first line, its counts, and what
/// ttop saw on the waiter's word.
fn run(mode: &str) -> (Kv, Kv, Seen) {
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-n", "400", "-d", "0.5"]);
    let mut w = spawn_workload("futex_waker", &[mode, "2", "500"]);
    let (head, r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(20)),
        "futex_waker hung"
    );
    let out = rest(r);
    // Two frames ended after the workload: its last wakes are in them.
    let frames = ttop.stop_after(2);
    let waiter = num(&head, "waiter") as u64;
    let word = u64::from_str_radix(head["word"].trim_start_matches("0x"), 16).unwrap();
    let mut seen = Seen {
        woken: 0,
        other: 0,
        wakers: Vec::new(),
    };
    for fr in &frames {
        assert_eq!(fr["contention_measured"]["futex_calls"], false);
        assert_eq!(
            fr["contention_measured"]["futex_wakers"], true,
            "{}",
            fr["contention_measured"]
        );
        let rows = fr["futexes"].as_array().unwrap();
        for r in rows
            .iter()
            .filter(|r| u(&r["pid"]) == waiter && u(&r["uaddr"]) == word)
        {
            let woken = u(&r["woken"]);
            seen.woken += woken;
            seen.other += u(&r["woken_by_other_procs"]);
            if woken == 0 {
                assert!(r["waker_pid"].is_null(), "no wait woken, a waker: {r}");
            } else {
                let comm = r["waker_comm"].as_str().unwrap_or("").to_string();
                seen.wakers.push((u(&r["waker_pid"]), comm, woken));
            }
        }
    }
    (head, out, seen)
}

type Kv = std::collections::HashMap<String, String>;

/// Run futex_waker MODE and check what ttop said: the waits it saw woken are the
/// workload's own (within 10%: a wake that lands between the waiter's check and its
/// sleep ends no sleep); every frame with woken waits names the workload's waker
/// process, `comm`; and the share woken by another process is `other_share` of them.
fn wakers_named(mode: &str, comm: &str, other_share: f64) {
    let (head, out, seen) = run(mode);
    let slept = num(&out, "slept");
    eprintln!(
        "workload slept {slept}; ttop: woken {}, by other processes {}, wakers {:?}",
        seen.woken, seen.other, seen.wakers
    );
    assert!(slept >= 500.0, "the waiter barely slept: {out:?}");
    assert_within(
        "waits woken by a futex wake",
        seen.woken as f64,
        slept,
        0.10,
    );
    let waker = num(&head, "waker") as u64;
    assert!(!seen.wakers.is_empty(), "no frame named a waker");
    for (pid, name, woken) in &seen.wakers {
        assert_eq!(*pid, waker, "waker named for {woken} waits: {name}");
        assert_eq!(name, comm);
    }
    let want = other_share * seen.woken as f64;
    assert!(
        (seen.other as f64 - want).abs() <= 0.01 * seen.woken as f64,
        "woken by another process: {} of {}, want {want}",
        seen.other,
        seen.woken
    );
}

/// Another process (a forked child named fwaker) wakes the waiter's waits: ttop names
/// it, pid and name, as the waker of the waiter's word in every frame with woken
/// waits, and counts the waits as woken by another process.
#[test]
fn a_waker_in_another_process_is_named() {
    if !require_root("a_waker_in_another_process_is_named") {
        return;
    }
    wakers_named("procs", "fwaker", 1.0);
}

/// The control: a thread of the waiter's own process wakes it. The waker is that
/// process (its own pid and name, fwaiter), and no wait is counted as woken by another
/// process.
#[test]
fn a_waker_thread_of_the_same_process_names_that_process() {
    if !require_root("a_waker_thread_of_the_same_process_names_that_process") {
        return;
    }
    wakers_named("threads", "fwaiter", 0.0);
}

/// With every futex call hooked (--futex-calls), wakes are counted from the wake
/// calls, not linked to the waits they ended: the waker is null (not measured) on
/// every row, never a wrong pid or 0, and the frame says so.
#[test]
fn with_every_call_hooked_the_waker_is_not_measured() {
    if !require_root("with_every_call_hooked_the_waker_is_not_measured") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "--futex-calls", "-n", "400", "-d", "0.5"]);
    let mut w = spawn_workload("futex_waker", &["procs", "1", "500"]);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(20)),
        "futex_waker hung"
    );
    let frames: Vec<Value> = ttop.stop_after(2);
    let mut rows = 0;
    for fr in &frames {
        assert_eq!(fr["contention_measured"]["futex_wakers"], false);
        for r in fr["futexes"].as_array().unwrap() {
            rows += 1;
            for k in ["waker_pid", "waker_comm", "woken_by_other_procs"] {
                assert!(r[k].is_null(), "{k} not measured, yet: {r}");
            }
        }
    }
    assert!(rows > 0, "no futex row at all");
}
