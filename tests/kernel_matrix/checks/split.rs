//! The wall-time split (issue 33 item 1) against threads that know where their time
//! goes (tests/workloads/timesplit.c): a spinner, a sleeper, an fsync writer on the
//! root file system, an epoll server fed by a client on 127.0.0.1, a pipe reader, and
//! four threads on one mutex. Each thread's parts add up to the interval, and its
//! biggest part is the one its code spends its time in. Needs root. Run here and in
//! each guest of the kernel matrix.

use std::collections::HashMap;
use std::process::Child;

use serde_json::Value;

use super::super::common::*;
use super::{in_vm, start_roles};

const PARTS: [&str; 12] = [
    "on_cpu",
    "runnable",
    "futex",
    "lock",
    "mmap_lock",
    "io",
    "fault",
    "uninterruptible",
    "poll",
    "sleep",
    "read",
    "other",
];

fn part(t: &Value, k: &str) -> f64 {
    match t["time"][k].as_f64() {
        Some(v) => v,
        // Not measured before 5.19 (checks::split_locks checks that).
        None if matches!(k, "lock" | "mmap_lock") && t["time"][k].is_null() => 0.0,
        None => panic!("{k} in {t}"),
    }
}

fn sum(t: &Value) -> f64 {
    PARTS.iter().map(|k| part(t, k)).sum()
}

/// Start the workload; its pid and role -> tid (the mutex threads as mutex0..3).
fn start(secs: &str, dir: &str) -> (Child, u32, HashMap<String, u32>) {
    let (w, pid, announced) = start_roles("timesplit", &[secs, dir]);
    let mut roles = HashMap::new();
    let mut mutexes = 0;
    for (k, v) in announced {
        if k == "mutex" {
            roles.insert(format!("mutex{mutexes}"), v);
            mutexes += 1;
        } else {
            roles.insert(k, v);
        }
    }
    roles.insert("main".into(), pid);
    (w, pid, roles)
}

#[test]
fn every_threads_wall_time_adds_up_and_lands_where_its_code_spends_it() {
    if !require_root("every_threads_wall_time_adds_up_and_lands_where_its_code_spends_it") {
        return;
    }
    let _g = kernel_lock();
    // The fsync writer's file goes on the root file system (ext4 here, as on most
    // servers), not a tmpfs /tmp. (A guest's root is the host's over 9p, whose fsync is
    // not block I/O in the guest: there its part is not checked.)
    let dir = env!("CARGO_TARGET_TMPDIR");
    // Under QEMU's single-threaded TCG ttop's reads are slow and often preempted: a
    // wait in progress moves between intervals more often.
    let (per_interval, per_run) = if in_vm() { (0.05, 0.02) } else { (0.01, 0.01) };
    // Long enough for a slow guest's ttop to start; killed once the frames are in.
    let (mut w, pid, roles) = start("120", dir);
    let frames = ttop_json(&["--json", "-n", "5", "-d", "1", "-p", &pid.to_string()]);
    let _ = w.kill();
    let _ = w.wait();
    let _ = std::fs::remove_file(format!("{dir}/timesplit-{pid}.tmp"));
    // Skip the first frame: the workload's threads were seeded asleep by the iterator
    // mid-interval, or born in it.
    let mut checked = 0;
    let (mut run, mut run_secs) = (HashMap::<String, f64>::new(), 0.0);
    for f in &frames[1..] {
        let secs = f["interval_s"].as_f64().unwrap();
        run_secs += secs;
        let threads = f["threads"].as_array().expect("threads[] with -p");
        let by_tid: HashMap<u64, &Value> = threads
            .iter()
            .map(|t| (t["tid"].as_u64().unwrap(), t))
            .collect();
        for (role, tid) in &roles {
            let t = by_tid
                .get(&u64::from(*tid))
                .unwrap_or_else(|| panic!("no thread row for {role} ({tid}) in {threads:?}"));
            let s = sum(t);
            eprintln!(
                "{role:8} interval {secs:.4} sum {s:.4} {:?}",
                PARTS
                    .iter()
                    .filter(|k| part(t, k) > 0.0005)
                    .map(|k| format!("{k}={:.3}", part(t, k)))
                    .collect::<Vec<_>>()
            );
            // Every nanosecond in one place, per interval within 1% (the issue's
            // bound). A thread the kernel switched in without a sched_switch event
            // (the header's "sched skips", a few a second on 6.18 in this VM) used to
            // lose its wait and its stretch on the CPU: 1.2-2.2% of a second in about
            // one interval in 40 on 2 busy CPUs. Its switch-out now splits that time by
            // the kernel's own runtime: in an A/B under two spinners, 0 of 228
            // intervals off by more than 0.5% (before: 4 of 204, one over 1%).
            assert_within(&format!("{role}'s parts"), s, secs, per_interval);
            *run.entry(role.clone()).or_default() += s;
            let share = |ks: &[&str]| ks.iter().map(|k| part(t, k)).sum::<f64>() / s;
            let (want, min): (&[&str], f64) = match role.as_str() {
                "spin" => (&["on_cpu", "runnable"], 0.95),
                "sleep" | "client" | "writer" => (&["sleep", "on_cpu", "runnable"], 0.95),
                "server" => (&["poll", "on_cpu", "runnable"], 0.95),
                "reader" => (&["read", "on_cpu", "runnable"], 0.95),
                "main" => (&["futex"], 0.95),
                "fsync" if in_vm() => (&PARTS[..], 0.0),
                "fsync" => (
                    &["io", "uninterruptible", "lock", "on_cpu", "runnable"],
                    0.95,
                ),
                _ => (&["futex", "on_cpu", "runnable"], 0.95), // the mutex threads
            };
            assert!(
                share(want) >= min,
                "{role}: {want:?} hold {:.3} of {s:.3} s: {t}",
                share(want) * s
            );
            checked += 1;
        }
        // The sleeper sleeps, the server polls, the reader reads: the time each spends
        // off CPU and not runnable is mostly in its own part, and there is such time.
        // Not "more than half the interval": how long each waits for a CPU depends on
        // the machine (a 6.12 guest sharing the host's two cores with two others had
        // the sleeper runnable 0.49 s of 1.01, asleep 0.47).
        let t = |r: &str| by_tid[&u64::from(roles[r])];
        for (role, own) in [("sleep", "sleep"), ("server", "poll"), ("reader", "read")] {
            let th = t(role);
            let off = sum(th) - part(th, "on_cpu") - part(th, "runnable");
            assert!(off > 0.2 * secs, "{role} was hardly ever off CPU: {th}");
            assert!(
                part(th, own) > 0.9 * off,
                "{role}: {own} is not its sleep: {th}"
            );
        }
        if !in_vm() {
            assert!(part(t("fsync"), "io") > 0.05 * secs, "{}", t("fsync"));
        }
        let futex: f64 = (0..4).map(|i| part(t(&format!("mutex{i}")), "futex")).sum();
        assert!(
            futex > 0.05 * secs,
            "the mutex threads never slept in a futex wait"
        );
        // The process row is its threads' sum (none exited).
        let p = f["procs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == pid)
            .unwrap();
        let threads_sum: f64 = threads.iter().filter(|t| t["pid"] == pid).map(sum).sum();
        assert_within(
            "process split = sum of its threads'",
            sum(p),
            threads_sum,
            0.001,
        );
    }
    assert!(checked >= 3 * roles.len(), "checked {checked} rows");
    for (role, s) in &run {
        assert_within(
            &format!("{role}'s parts over the run"),
            *s,
            run_secs,
            per_run,
        );
    }
}

/// A control: without eBPF (procfs-only) nothing is measured, and the split is null,
/// never a row of zeros.
#[test]
fn without_ebpf_the_split_is_null_not_zero() {
    let frames = ttop_json(&["--json", "-n", "2", "-d", "0.3", "--no-bpf", "-p", "1"]);
    for f in &frames {
        for p in f["procs"].as_array().unwrap() {
            assert!(p["time"].is_null(), "{p}");
        }
        for t in f["threads"].as_array().unwrap() {
            assert!(t["time"].is_null(), "{t}");
        }
    }
}
