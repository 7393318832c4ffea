//! The wall-time split's kernel-lock parts (bpf/sched_lockwait.h) against threads that
//! know which lock they queue on (tests/workloads/lockwait.c): four threads appending
//! to one file (the file's locks: `lock`), two mapping and unmapping with MAP_POPULATE
//! (their own process's mmap_lock: `mmap_lock`), and a sleeper that never takes a
//! kernel lock (both parts 0). The mmap_lock part is bounded by the mmap_lock view's
//! waits (its own tracepoints, which also count the time after the wakeup). Before 5.19
//! (no lock:contention_begin) both parts are null, never 0, and problems[] says why.
//! Needs root. Run here and in each guest of the kernel matrix.

use std::collections::HashMap;

use serde_json::Value;

use super::super::common::*;
use super::{in_vm, start_roles, tracepoint};

#[test]
fn lock_waits_land_in_the_lock_parts_and_nowhere_else() {
    if !require_root("lock_waits_land_in_the_lock_parts_and_nowhere_else") {
        return;
    }
    let _g = kernel_lock();
    let has_tp = tracepoint("lock", "contention_begin");
    let dir = env!("CARGO_TARGET_TMPDIR");
    let (mut w, pid, announced) = start_roles("lockwait", &["120", dir]);
    let roles: HashMap<u64, String> = announced
        .into_iter()
        .map(|(role, tid)| (u64::from(tid), role))
        .collect();
    let frames = ttop_json(&["--json", "-n", "5", "-d", "1", "-p", &pid.to_string()]);
    let _ = w.kill();
    let _ = w.wait();
    if !has_tp {
        // Not measured: null in every row, and said.
        for f in &frames {
            for t in f["threads"].as_array().unwrap() {
                if t["time"].is_object() {
                    assert!(
                        t["time"]["lock"].is_null() && t["time"]["mmap_lock"].is_null(),
                        "{t}"
                    );
                    assert!(t["time"]["uninterruptible"].is_number(), "{t}");
                }
            }
        }
        let problems = frames[0]["problems"].to_string();
        assert!(problems.contains("need Linux 5.19"), "{problems}");
        return;
    }
    // Role -> summed (lock, mmap_lock, interval share checked below), over frames 1..
    let mut by_role: HashMap<&str, (f64, f64)> = HashMap::new();
    let (mut mmap_part, mut mmap_view) = (0.0, 0.0);
    let mut secs = 0.0;
    for f in &frames[1..] {
        let s = f["interval_s"].as_f64().unwrap();
        secs += s;
        for t in f["threads"].as_array().expect("threads[] with -p") {
            let Some(role) = roles.get(&t["tid"].as_u64().unwrap()) else {
                continue;
            };
            let tm = &t["time"];
            let (l, m) = (
                tm["lock"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("lock part measured: {t}")),
                tm["mmap_lock"].as_f64().unwrap(),
            );
            let e = by_role.entry(role.as_str()).or_default();
            e.0 += l;
            e.1 += m;
            mmap_part += m;
            // Every nanosecond in one place, the lock parts included.
            let sum: f64 = tm
                .as_object()
                .unwrap()
                .values()
                .filter_map(Value::as_f64)
                .sum();
            assert_within(
                &format!("{role} {}'s parts", t["tid"]),
                sum,
                s,
                if in_vm() { 0.05 } else { 0.01 },
            );
        }
        mmap_view += f["mmap_lock"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["victim_pid"] == pid && r["waiter_pid"] == pid)
            .map(|r| r["total_wait_ms"].as_f64().unwrap() / 1e3)
            .sum::<f64>();
    }
    eprintln!(
        "over {secs:.2} s: (lock, mmap_lock) by role {by_role:?}; mmap_lock view {mmap_view:.3} s"
    );
    let (append, mapper, sleep) = (by_role["append"], by_role["mapper"], by_role["sleep"]);
    // The appenders queue on the file's locks, the mappers on their mmap_lock.
    assert!(
        append.0 > 0.01 * secs,
        "append threads' lock part {:.4} s",
        append.0
    );
    assert!(append.0 > 5.0 * append.1, "append: lock {append:?}");
    assert!(
        mapper.1 > 0.01 * secs,
        "mapper threads' mmap_lock part {:.4} s",
        mapper.1
    );
    assert!(mapper.1 > 5.0 * mapper.0, "mapper: mmap_lock {mapper:?}");
    // The control never takes a kernel lock.
    assert_eq!(sleep, (0.0, 0.0), "the sleeper");
    // The sleeps inside mmap_lock waits are at most the waits themselves.
    assert!(
        mmap_part <= mmap_view * 1.05 + 0.005,
        "mmap_lock part {mmap_part:.4} s > the mmap_lock view's waits {mmap_view:.4} s"
    );
}
