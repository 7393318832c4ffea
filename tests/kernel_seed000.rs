//! Seed 000 in the futex view: the threads of a process that creates and joins
//! short-lived threads queue on glibc's stack-cache lock, and ttop names that lock from
//! the waiters' unwound stacks, in the futex table and in the thread_churn finding; the
//! thread-pool control does not. Needs root and glibc's debug file (libc6-dbg).

mod common;

use common::watch::*;
use common::*;
use serde_json::Value;

/// glibc's thread-stack functions that take the stack-cache lock (`stack_cache_lock`):
/// pthread_create's side and pthread_join's.
const STACK_CACHE_FNS: &[&str] = &[
    "get_cached_stack",
    "allocate_stack",
    "__nptl_deallocate_stack",
    "__GI___nptl_deallocate_stack",
];

/// The futex rows of `pid` whose stack waits on glibc's stack-cache lock:
/// `__lll_lock_wait_private` called from one of the thread-stack functions.
fn stack_cache_rows(frames: &[Value], pid: u64) -> Vec<(u64, u64, String, Vec<String>, String)> {
    let base = |f: &String| f.split(['+', ' ']).next().unwrap_or("").to_string();
    frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid)
        .filter_map(|w| {
            let s: Vec<String> = names(w).iter().map(base).collect();
            // lll_lock is a macro: the wait is called straight from the function
            // holding the lock's address (a lock further in is another lock).
            s.windows(2)
                .any(|p| {
                    p[0].ends_with("__lll_lock_wait_private")
                        && STACK_CACHE_FNS.contains(&p[1].as_str())
                })
                .then(|| {
                    (
                        w["contended"].as_u64().unwrap(),
                        w["waiters"].as_u64().unwrap(),
                        w["caller"].to_string(),
                        s,
                        format!("{pid}:{:#x}", w["uaddr"].as_u64().unwrap()),
                    )
                })
        })
        .collect()
}

/// Seed 000 in the futex view: 120 threads each creating and joining short-lived
/// threads wait on glibc's stack-cache lock, and the futex row of that lock shows it
/// through glibc's thread-stack functions (pthread_create -> allocate_stack ->
/// get_cached_stack, or the join side's __nptl_deallocate_stack) with libc6-dbg's
/// names, with many threads (THR) on it. The thread-pool control doing the same work
/// shows no such row. The 120 join words (one waiter each) outrank the lock in waits:
/// before shared words were kept past the 64 rows and named first, the lock's row was
/// missing in most runs. On 2 CPUs the lock is contended in bursts, so up to five runs
/// are tried (by hand, 6 of 6 found it in the first).
#[test]
fn seed_000_stack_cache_waiters_are_named_in_the_futex_view() {
    if !require_root("seed_000_stack_cache_waiters_are_named_in_the_futex_view") {
        return;
    }
    if !require_glibc_debug() {
        return;
    }
    let _g = kernel_lock();
    let run = |pool: &str| {
        let mut pid = 0;
        // 10 s of churn: ttop's own ticks stretch to 1.5-7 s under it (CI: 2.4 s, then
        // 6.6 s), and the thread_churn finding shows from the third churning frame, or
        // the second when the two last 3 s (HOLD_SECS); the lock's row comes in bursts,
        // in one or two of those frames.
        let frames = watch(10, || {
            let mut w = spawn_workload("creators", &["120", "10", "100", pool]);
            pid = pid_of(&mut w);
            w
        });
        // Per frame, for a failure's log: the lock's rows (waits, threads) and the
        // churn finding's stack_cache_threads.
        for f in &frames {
            let one = [f.clone()];
            let proc_ = f["procs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["pid"] == pid);
            eprintln!(
                "  t={} created={} rows={:?} churn={:?}",
                f["t"],
                proc_
                    .map(|p| p["threads_created"].clone())
                    .unwrap_or_default(),
                stack_cache_rows(&one, pid)
                    .iter()
                    .map(|r| (r.0, r.1))
                    .collect::<Vec<_>>(),
                f["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|x| x["kind"] == "thread_churn" && x["pids"][0] == pid)
                    .map(|x| x["figures"]["stack_cache_threads"].clone())
                    .collect::<Vec<_>>(),
            );
        }
        (
            stack_cache_rows(&frames, pid),
            churn_lock_evidence(&frames, pid),
        )
    };
    let (mut found, mut evidence) = (Vec::new(), Vec::new());
    for attempt in 1..=5 {
        (found, evidence) = run("0");
        eprintln!("run {attempt}: {} stack-cache rows", found.len());
        if found.iter().any(|r| r.1 >= 2) && evidence.iter().any(|(_, thr)| *thr >= 2.0) {
            break;
        }
    }
    for (c, thr, caller, s, _) in &found {
        eprintln!("{c} contended by {thr} threads, caller {caller}: {s:?}");
    }
    assert!(
        !found.is_empty(),
        "no futex row waits on the stack-cache lock"
    );
    // The lock the creators queue on, not one thread's join word.
    assert!(
        found.iter().any(|r| r.1 >= 2),
        "the stack-cache lock had one waiter: {found:?}"
    );
    // The thread_churn finding names the lock with its figures: the latest row seen
    // during the churn's run of frames (CI once had the row only in frames before the
    // finding showed, when findings cited only their own frame's rows).
    eprintln!("thread_churn evidence: {evidence:?}");
    assert!(
        evidence.iter().any(|(_, thr)| *thr >= 2.0),
        "no thread_churn finding names the stack-cache lock: {evidence:?}"
    );
    // ...and the word it names is the lock's row, not another word.
    for (addrs, _) in &evidence {
        assert!(
            found.iter().any(|r| addrs.contains(&r.4)),
            "the finding names {addrs}, no stack-cache row has that word"
        );
    }
    let (pool, pool_evidence) = run("1");
    assert!(
        pool.is_empty(),
        "the thread pool has stack-cache waits: {pool:?}"
    );
    assert!(pool_evidence.is_empty(), "{pool_evidence:?}");
}

/// (addrs, stack_cache_threads) of every thread_churn finding about `pid` that names
/// the stack-cache lock.
fn churn_lock_evidence(frames: &[Value], pid: u64) -> Vec<(String, f64)> {
    frames
        .iter()
        .flat_map(|f| f["findings"].as_array().unwrap())
        .filter(|f| f["kind"] == "thread_churn" && f["pids"][0] == pid)
        .filter_map(|f| {
            let thr = f["figures"]["stack_cache_threads"].as_f64()?;
            Some((f["addrs"].to_string(), thr))
        })
        .collect()
}
