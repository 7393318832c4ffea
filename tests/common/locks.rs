//! Kernel-lock rows in ttop's JSON frames: whether they were measured, and the
//! workload's waits summed by a key of the row.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::stream::{Stream, first_line, num, problems, u};
use super::{spawn_workload, wait_timeout};

/// A frame's kernel-lock rows: the `locks` table's and the rows cut from it, summed by
/// caller in `locks_rest` (thread churn gives each page-table lock a row: the table
/// alone misses waits). The rest rows have no `lock`.
pub fn all_lock_rows(fr: &Value) -> impl Iterator<Item = &Value> {
    let rows = |k: &str| fr[k].as_array().map(|v| v.as_slice()).unwrap_or_default();
    fr["locks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rows("locks_rest"))
}

/// Whether this kernel has the lock:contention_begin/end tracepoints (5.19+), read from
/// tracefs, not from ttop.
pub fn kernel_has_lock_tracepoints() -> bool {
    let root = ttop::collect::bpf::tracefs::root().expect("tracefs");
    ttop::collect::bpf::tracefs::has_event(&root, "lock", "contention_begin")
}

/// Whether ttop measured kernel locks in these frames. Where the kernel has the
/// tracepoints it must have (anything else fails the test); where it has not (before
/// 5.19) ttop must say so and list no lock row, and this is false: the caller's checks
/// of the figures do not apply there, and the not-measured path is what was tested.
pub fn kernel_locks_measured(frames: &[Value]) -> bool {
    let p = problems(frames);
    let said = p.iter().any(|x| x.contains("kernel lock view"));
    if kernel_has_lock_tracepoints() {
        assert!(
            !said,
            "the kernel has lock:contention_begin but the kernel-lock view did not load: {p:?}"
        );
        for f in frames {
            assert_eq!(f["contention_measured"]["locks"], true, "{p:?}");
        }
        return true;
    }
    assert!(
        said,
        "no lock:contention_begin here, and ttop did not say so: {p:?}"
    );
    for f in frames {
        assert_eq!(f["contention_measured"]["locks"], false);
        assert_eq!(f["locks"], serde_json::json!([]), "lock rows not measured");
    }
    eprintln!("no lock:contention_begin on this kernel: checked that ttop says so");
    false
}

/// The workload's kernel-lock waits summed over all frames, by `key` of the lock row.
pub fn lock_waits_by<K: Ord>(
    frames: &[Value],
    pid: u64,
    key: impl Fn(&Value) -> K,
) -> std::collections::BTreeMap<K, u64> {
    let mut rows = std::collections::BTreeMap::new();
    for fr in frames {
        for r in all_lock_rows(fr) {
            let mine: u64 = r["waiters"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|w| u(&w["pid"]) == pid)
                .map(|w| u(&w["contended"]))
                .sum();
            if mine > 0 {
                *rows.entry(key(r)).or_default() += mine;
            }
        }
    }
    rows
}

pub fn stacks_sum(frames: &[Value], key: &str) -> u64 {
    frames.iter().map(|f| u(&f["kernel_stacks"][key])).sum()
}

/// Two ttops (`--json -d 0.5 --futex-calls`, each with its own environment) watch one
/// mutex storm (4 threads, 3 s); returns the storm's pid and each ttop's frames. Both
/// hook every futex call, which slows the storm into mostly futex hash-bucket waits from
/// two call sites.
pub fn storm_seen_twice(
    env_a: &[(&str, &str)],
    env_b: &[(&str, &str)],
) -> (u64, Vec<Value>, Vec<Value>) {
    seen_twice(
        env_a,
        env_b,
        &["--futex-calls"],
        ("futex_mutex", &["4", "3"]),
    )
}

/// `workload` (a helper and its arguments, printing pid= first) watched by two ttops at
/// once, started with `env_a` and `env_b` and `extra` arguments: its pid and each
/// one's frames.
pub fn seen_twice(
    env_a: &[(&str, &str)],
    env_b: &[(&str, &str)],
    extra: &[&str],
    workload: (&str, &[&str]),
) -> (u64, Vec<Value>, Vec<Value>) {
    let mut args = vec!["--json", "-d", "0.5"];
    args.extend_from_slice(extra);
    let a = Stream::start_env(&args, env_a);
    let b = Stream::start_env(&args, env_b);
    let mut w = spawn_workload(workload.0, workload.1);
    let (head, _r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(30)),
        "{} hung",
        workload.0
    );
    let pid = num(&head, "pid") as u64;
    (pid, a.stop_after(2), b.stop_after(2))
}

/// The workload's kernel-lock waits by caller in two runs (`a`, `b` with their frames)
/// agree per caller. A stack a map could not store is named "?" and counted in
/// contention_drops.stacks; such waits may be missing from their true caller in that
/// run only, and only if that run counted lost stacks. Returns the waits named "?" in
/// each run.
pub fn callers_agree(
    a: (&BTreeMap<String, u64>, &[Value]),
    b: (&BTreeMap<String, u64>, &[Value]),
) -> (u64, u64) {
    let unnamed = |m: &BTreeMap<String, u64>, fr: &[Value]| {
        let q = m.get("?").copied().unwrap_or(0);
        let lost: u64 = fr.iter().map(|f| u(&f["contention_drops"]["stacks"])).sum();
        assert!(
            q == 0 || lost > 0,
            "{q} waits named ? but no stack counted lost"
        );
        q
    };
    let (qa, qb) = (unnamed(a.0, a.1), unnamed(b.0, b.1));
    let (ta, tb): (u64, u64) = (a.0.values().sum(), b.0.values().sum());
    assert!(ta >= 1000, "too few kernel-lock waits to compare: {ta}");
    for caller in a.0.keys().chain(b.0.keys()).filter(|c| *c != "?") {
        let (x, y) = (
            a.0.get(caller).copied().unwrap_or(0),
            b.0.get(caller).copied().unwrap_or(0),
        );
        let lost = if x > y { qb } else { qa };
        assert!(
            x.abs_diff(y) <= 10 + x.max(y) / 50 + lost,
            "caller {caller}: {x} waits in one run, {y} in the other (totals {ta}, {tb}; \
             unnamed {qa}, {qb})"
        );
    }
    (qa, qb)
}
