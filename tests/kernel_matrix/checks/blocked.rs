//! Blocked now (issue 33 item 3) against a thread that knows how long it is blocked
//! (tests/workloads/vforkwait.c): main vfork()s a child that sleeps 3 s, so main waits
//! in the kernel, uninterruptibly, for those 3 s, while its napper thread sleeps in
//! nanosleep by choice. ttop lists main, with the kernel stack it sleeps in (read by a
//! task iterator at the tick) and how long it has been blocked; the napper never. Run
//! here and in each guest of the kernel matrix. Needs root.

use serde_json::Value;

use super::super::common::watch::*;
use super::super::common::*;
use super::in_vm;

/// The vfork wait's frames in any kernel the matrix runs (5.10 to 6.18; the wait
/// itself, wait_for_vfork_done, is inlined).
const VFORK: &[&str] = &[
    "__do_sys_vfork",
    "kernel_clone",
    "_do_fork",
    "wait_for_vfork_done",
];

#[test]
fn a_thread_blocked_in_the_kernel_is_listed_with_its_stack_and_a_sleeper_is_not() {
    if !require_root("a_thread_blocked_in_the_kernel_is_listed_with_its_stack_and_a_sleeper_is_not")
    {
        return;
    }
    let _g = kernel_lock();
    // The workload lives about 5 s (the napper's 3 + 2 s) from just after ttop's first
    // frame: 7 frames (6 s) see all of it, the block in 3 of them (1.5-4.5 s in).
    let (frames, pid) = watch_child(7, &[], || spawn_workload("vforkwait", &["3"]));
    let pid = pid as u32;
    // (frame time, row) of every blocked row of the workload.
    let rows: Vec<(f64, &Value)> = frames
        .iter()
        .filter_map(|f| Some((f["t"].as_f64()?, f["blocked"].as_array()?)))
        .flat_map(|(t, b)| b.iter().map(move |r| (t, r)))
        .filter(|(_, r)| r["pid"] == pid)
        .collect();
    for (t, r) in &rows {
        eprintln!("t={t:.3} {r}");
    }
    assert!(
        frames.iter().skip(1).all(|f| f["blocked"].is_array()),
        "blocked is measured in every frame after the first (eBPF)"
    );
    // The napper sleeps by choice: never blocked.
    assert!(
        rows.iter().all(|(_, r)| r["tid"] == pid),
        "a thread other than main is listed"
    );
    let stack_of = |r: &Value| -> Vec<String> {
        r["stack"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f.as_str().map(String::from))
            .collect()
    };
    // Every row has the stack of the sleep it shows: a thread that woke before the
    // stacks were read is not blocked in that sleep any more, and is not listed.
    for (_, r) in &rows {
        let stack = stack_of(r);
        assert!(!stack.is_empty(), "a row without its stack: {r}");
        assert!(
            !stack
                .iter()
                .any(|f| f == "__schedule" || f.starts_with("bpf_prog_")),
            "the scheduler's own frames are left out: {stack:?}"
        );
    }
    // Main is listed in the frames of its 3 s, as uninterruptible, with the vfork wait.
    // (Around the vfork, under TCG, main may be caught in a short sleep of its own, a
    // 12 ms one in the 5.10 guest: listed with that sleep's stack, and not the wait.)
    let rows: Vec<(f64, &Value)> = rows
        .into_iter()
        .filter(|(_, r)| stack_of(r).iter().any(|f| VFORK.contains(&f.as_str())))
        .collect();
    assert!(rows.len() >= 2, "main listed in {} frames", rows.len());
    for (_, r) in &rows {
        assert_eq!(r["part"], "uninterruptible", "{r}");
    }
    // How long: never more than the 3 s it blocks, and it grows with the frames' clock.
    let slack = if in_vm() { 150.0 } else { 30.0 };
    let ms: Vec<f64> = rows
        .iter()
        .map(|(_, r)| r["for_ms"].as_f64().unwrap())
        .collect();
    assert!(ms.iter().all(|&m| m > 0.0 && m <= 3000.0 + slack), "{ms:?}");
    assert!(ms.last().unwrap() >= &1000.0, "{ms:?}");
    for w in rows.windows(2) {
        let (dt, dm) = (
            w[1].0 - w[0].0,
            w[1].1["for_ms"].as_f64().unwrap() - w[0].1["for_ms"].as_f64().unwrap(),
        );
        assert!(
            (dm - dt * 1e3).abs() <= slack,
            "for_ms grew {dm:.0} ms over {:.0} ms of frames",
            dt * 1e3
        );
    }
}
