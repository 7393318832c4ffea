//! The evidence a rule cites beyond its trigger (findings_evidence.rs): glibc's
//! stack-cache lock in thread_churn, named only from its own stack, and kept through the
//! finding's run of intervals.

use super::tests::{frame, proc_};
use crate::model::contention::frame::FutexFrame;
use crate::model::findings::*;
use crate::model::frame::Frame;

/// Seed 000's evidence: a churning process whose threads sleep on glibc's stack-cache
/// lock has that word named in its thread_churn finding; a join word, a lock wait under
/// other code, another process's stack-cache lock and unnamed frames do not.
#[test]
fn thread_churn_names_the_stack_cache_lock_only_from_its_stack() {
    let stack = |frames: &[&str]| frames.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    let word = |pid: u32, uaddr: u64, frames: &[&str]| FutexFrame {
        pid,
        uaddr,
        contended: 130,
        waiters: Some(114),
        stack: stack(frames),
        ..Default::default()
    };
    let churn = |words: Vec<FutexFrame>| {
        let mut f = observe(&churn_frame(words));
        assert_eq!(f.len(), 1, "{f:?}");
        let ev = f[0].evidence.take();
        f[0].add_evidence(ev);
        f.into_iter().next().unwrap()
    };
    let lock = [
        "futex_wait",
        "__GI___lll_lock_wait_private",
        "__GI___nptl_deallocate_stack+0xe4",
        "__pthread_clockjoin_ex",
        "creator",
    ];
    let f = churn(vec![word(7, 0x7f00_1000, &lock)]);
    assert_eq!(f.addrs, ["7:0x7f001000"]);
    assert_eq!(f.figures["stack_cache_threads"], 114.0);
    assert_eq!(f.figures["stack_cache_waits_per_s"], 130.0);
    assert_eq!(
        f.summary,
        "w(7) creates 15000 short-lived threads/s; their ghosts burn 0% CPU no thread \
         row can show (top counts it in the process, top -H on its main thread); 114 of its threads queue on glibc's thread-stack cache lock (130 \
         waits/s): reuse threads (a pool) instead of creating one per task"
    );
    let create = [
        "__lll_lock_wait_private+0x2a",
        "get_cached_stack (inlined) allocatestack.c:112",
        "allocate_stack",
        "__pthread_create_2_1",
        "creator",
    ];
    assert_eq!(churn(vec![word(7, 0x10, &create)]).addrs, ["7:0x10"]);
    // Controls: no evidence, the finding itself unchanged.
    let join = [
        "__futex_abstimed_wait_common",
        "__pthread_clockjoin_ex",
        "creator",
    ];
    let other_lock = ["__lll_lock_wait_private", "_IO_fwrite", "creator"];
    // The dynamic linker's TLS lock, taken inside get_cached_stack (seen under
    // `creators`): a lock wait under a thread-stack function, but not its lock.
    let tls_lock = [
        "futex_wait (inlined) futex-internal.h:146",
        "__GI___lll_lock_wait+0x2b lowlevellock.c:49",
        "lll_mutex_lock_optimized (inlined) pthread_mutex_lock.c:48",
        "___pthread_mutex_lock+0x16a pthread_mutex_lock.c:128",
        "__GI__dl_allocate_tls_init+0x36 dl-tls.c:575",
        "get_cached_stack (inlined) allocatestack.c:140",
        "allocate_stack (inlined) allocatestack.c:360",
        "__pthread_create_2_1+0x896ed pthread_create.c:650",
    ];
    let unnamed = ["libc.so.6+0x8612b", "libc.so.6+0x9a0c1", "creators+0x1234"];
    for words in [
        vec![word(7, 0x20, &join)],
        vec![word(7, 0x30, &other_lock)],
        vec![word(7, 0x38, &tls_lock)],
        vec![word(8, 0x40, &lock)],
        vec![word(7, 0x50, &unnamed)],
        Vec::new(),
    ] {
        let f = churn(words);
        assert!(f.addrs.is_empty(), "{f:?}");
        assert!(!f.figures.contains_key("stack_cache_threads"));
        assert!(!f.summary.contains("stack cache"), "{}", f.summary);
    }
}

/// Frame `frame()` with process 7 creating and ending 15,000 threads in its second,
/// and futex rows `words`.
fn churn_frame(words: Vec<FutexFrame>) -> Frame {
    let mut fr = frame();
    let mut p = proc_(7);
    p.threads_created = Some(15_000);
    p.threads_exited = Some(15_000);
    fr.procs.push(p);
    fr.contention.futexes = words;
    fr
}

/// The stack-cache lock is contended in bursts: named in one interval of a churn, it
/// stays in the finding for the rest of the run (the latest seen), with that
/// interval's figures; a run that never saw it does not inherit an earlier run's.
#[test]
fn evidence_seen_during_a_run_stays_with_the_finding() {
    let lock = FutexFrame {
        pid: 7,
        uaddr: 0x108,
        contended: 90,
        waiters: Some(80),
        stack: [
            "__lll_lock_wait_private",
            "__nptl_deallocate_stack",
            "creator",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    // Per interval: None no churn; Some(None) churn without the lock's row;
    // Some(Some(n)) churn with the lock slept on by n threads.
    let window = |intervals: &[Option<Option<u32>>]| {
        let frames: Vec<Frame> = intervals
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut fr = match l {
                    Some(Some(n)) => churn_frame(vec![FutexFrame {
                        waiters: Some(*n),
                        ..lock.clone()
                    }]),
                    Some(None) => churn_frame(Vec::new()),
                    None => frame(),
                };
                fr.t = i as f64;
                fr
            })
            .collect();
        let refs: Vec<&Frame> = frames.iter().collect();
        findings(&refs)
            .into_iter()
            .find(|f| f.kind == "thread_churn")
    };
    let n = Some(None);
    let f = window(&[Some(Some(80)), n, n]).expect("churn held 3 intervals");
    assert_eq!(f.addrs, ["7:0x108"]);
    assert_eq!(f.figures["stack_cache_threads"], 80.0);
    assert_eq!(f.figures["stack_cache_waits_per_s"], 90.0);
    assert!(
        f.summary.contains("80 of its threads queue"),
        "{}",
        f.summary
    );
    assert!(f.evidence.is_none(), "merged, not left aside");
    // The strongest sighting wins: a churn winding down with one thread left on the
    // lock does not stand for a run that had 80 on it (CI: 75 and 118, then 1).
    let f = window(&[Some(Some(80)), Some(Some(20)), n]).unwrap();
    assert_eq!(f.figures["stack_cache_threads"], 80.0);
    let f = window(&[Some(Some(75)), Some(Some(118)), Some(Some(1))]).unwrap();
    assert_eq!(f.figures["stack_cache_threads"], 118.0);
    // Equal sightings: the latest.
    let f = window(&[Some(Some(20)), Some(Some(20)), n]).unwrap();
    assert_eq!(f.figures["stack_cache_threads"], 20.0);
    // A run that never saw the lock cites nothing.
    let f = window(&[n, n, n]).unwrap();
    assert!(
        f.addrs.is_empty() && !f.summary.contains("stack cache"),
        "{f:?}"
    );
    // A gap ends the run: the lock of the run before is not carried over.
    let f = window(&[Some(Some(80)), n, n, None, n, n, n]).unwrap();
    assert!(f.active && f.addrs.is_empty(), "{f:?}");
    assert!(!f.figures.contains_key("stack_cache_threads"));
    // Lingering past its end, it keeps what its run saw.
    let f = window(&[n, Some(Some(80)), n, None]).unwrap();
    assert!(!f.active && f.addrs == ["7:0x108"], "{f:?}");
}
