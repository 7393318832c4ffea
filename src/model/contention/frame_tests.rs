//! Unit tests for contention_frame: derivation of the per-interval contention tables.

use super::*;
use crate::model::contention::lock_types::lock_type;
use crate::model::contention::{LockSample, MmapSample, fixture};
use crate::model::{derive, fixtures};

/// The lock rows of one interval (and the rows cut from them).
fn rows_of(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
) -> (Vec<LockFrame>, Vec<LockRestFrame>) {
    let deltas = crate::model::contention::lock_types::entry_deltas(prev, cur);
    super::lock_rows::lock_rows(deltas, &|_| String::new())
}

fn frame(secs: u64) -> crate::model::Frame {
    let sys = fixtures::system();
    let mut prev = fixtures::incident(secs - 1, true);
    prev.contention = Some(fixture(secs - 1));
    let mut cur = fixtures::incident(secs, true);
    cur.contention = Some(fixture(secs));
    derive(&sys, Some(&prev), &cur)
}

#[test]
fn futex_rows_are_per_interval_and_ranked_by_contended() {
    let f = frame(10);
    let c = &f.contention;
    assert_eq!(c.futexes.len(), 4);
    let top = &c.futexes[0];
    assert_eq!((top.pid, top.uaddr), (912, 0x00c0_0008_0148));
    let m = c
        .futexes
        .iter()
        .find(|r| r.uaddr == 0x7f3a_2c00_1040)
        .unwrap();
    assert_eq!(
        (m.calls, m.contended, m.eagain, m.wakes),
        (Some(52_000), 3_876, Some(36_100), Some(12_000))
    );
    assert!((m.total_wait_ms - 477.0).abs() < 1e-9);
    assert!((m.avg_wait_us - 477_000.0 / 3_876.0).abs() < 1e-6);
    assert!((m.max_wait_us - 18_500.0).abs() < 1e-9);
    assert_eq!(m.comm, "tiflash");
    assert_eq!(m.kind, "private");
    let pg = c.futexes.iter().find(|r| r.pid == 1817).unwrap();
    assert_eq!(pg.kind, "shared");
}

/// Seed 000's shape: more one-waiter words (pthread_join) than rows, each with more
/// waits than the lock the pool queues on; the lock is kept after the 64.
#[test]
fn a_shared_word_is_kept_behind_many_one_waiter_words() {
    let word = |uaddr: u64, contended: u64, waiters: u32| FutexSample {
        tgid: 4242,
        uaddr,
        calls: contended,
        waits: contended,
        contended,
        waiters: Some(waiters),
        ..Default::default()
    };
    let mut words: Vec<FutexSample> = (0..120)
        .map(|i| word(0x1000 + i * 64, 300 + i, 1))
        .collect();
    words.push(word(0x10, 100, 37));
    words.push(word(0x20, 20, 2));
    words.push(word(0x30, 250, 1));
    let cur = ContentionSample {
        futexes: words,
        ..Default::default()
    };
    let rows = futex_rows(None, &cur, &|_| "creators".into());
    assert_eq!(rows.len(), MAX_ROWS + 2);
    assert!(
        rows[..MAX_ROWS]
            .iter()
            .all(|r| r.waiters == Some(1) && r.contended >= 300)
    );
    let kept: Vec<(u64, Option<u32>)> = rows[MAX_ROWS..]
        .iter()
        .map(|r| (r.uaddr, r.waiters))
        .collect();
    assert_eq!(kept, [(0x10, Some(37)), (0x20, Some(2))]);
    // A recording made before THR was measured: unknown, not zero, and nothing added.
    let mut old = cur.clone();
    old.futexes.iter_mut().for_each(|w| w.waiters = None);
    let rows = futex_rows(None, &old, &|_| String::new());
    assert_eq!(rows.len(), MAX_ROWS);
    assert!(rows.iter().all(|r| r.waiters.is_none()));
    // Fewer words than rows: nothing is added or reordered.
    let few = ContentionSample {
        futexes: vec![word(0x10, 5, 3), word(0x20, 50, 1)],
        ..Default::default()
    };
    let rows = futex_rows(None, &few, &|_| String::new());
    assert_eq!(
        rows.iter().map(|r| r.uaddr).collect::<Vec<_>>(),
        [0x20, 0x10]
    );
}

#[test]
fn procs_get_futex_rates() {
    let f = frame(3);
    let p = f.procs.iter().find(|p| p.pid == 912).unwrap();
    assert_eq!(p.futex_calls.get(), Some(14_500));
    assert!((p.futex_wait_ms.get().unwrap() - 870.0).abs() < 1e-9);
    let idle = f.procs.iter().find(|p| p.pid == 1).unwrap();
    assert_eq!(idle.futex_calls.get(), Some(0));
}

#[test]
fn locks_group_by_lock_caller_and_type_with_their_waiters() {
    let f = frame(5);
    let l = &f.contention.locks;
    assert_eq!(l[0].kind, "rwsem:W");
    assert_eq!(l[0].caller, "__vm_munmap+0x7d");
    assert!(l[0].mmap_lock);
    assert_eq!(l[0].contended, 2);
    assert!((l[0].total_wait_ms - 630.0).abs() < 1e-9);
    assert_eq!(l[0].waiters[0].pid, 4242);
    assert_eq!(l[0].lock, "0xffff8881573d4578");
    let kinds: Vec<&str> = l.iter().map(|r| r.kind.as_str()).collect();
    assert!(kinds.contains(&"spinlock") && kinds.contains(&"mutex") && kinds.contains(&"rwsem:R"));
}

#[test]
fn mmap_rows_name_holder_victim_and_waiting_threads() {
    let f = frame(7);
    let m = &f.contention.mmap_lock;
    let r = &m[0];
    assert_eq!(
        (r.victim_pid, r.holder_pid, r.waiter_pid),
        (4242, 31999, 4242)
    );
    assert_eq!(r.victim_comm, "tiflash");
    assert_eq!(r.holder_comm, "secagent");
    assert_eq!(r.waiters, 3);
    assert_eq!(r.waits, 32);
    assert!((r.total_wait_ms - 1040.0).abs() < 1e-9);
    assert!((r.hold_ms - 640.0).abs() < 1e-9);
    assert!((r.max_wait_us - 630_000.0).abs() < 1e-9);
    let own = m.iter().find(|r| r.holder_pid == 4242).unwrap();
    assert_eq!((own.waiters, own.waits, own.hold_ms), (1, 40, 0.0));
}

#[test]
fn first_sample_and_reset_counters() {
    let sys = fixtures::system();
    let mut cur = fixtures::incident(4, true);
    cur.contention = Some(fixture(4));
    let f = derive(&sys, None, &cur);
    assert!(f.contention.futexes.is_empty() && f.contention.locks.is_empty());
    assert_eq!(f.procs[0].futex_calls.get(), Some(0));
    // An entry that went backwards was deleted and recreated: count from zero.
    let mut prev = cur.clone();
    prev.seq = 3;
    let mut c = cur.clone();
    c.contention.as_mut().unwrap().futexes[0].calls = 5;
    c.contention.as_mut().unwrap().futexes[0].contended = 2;
    c.mono_ns += 1_000_000_000;
    let f = derive(&sys, Some(&prev), &c);
    let r = f
        .contention
        .futexes
        .iter()
        .find(|r| r.uaddr == 0x7f3a_2c00_1040)
        .unwrap();
    assert_eq!((r.calls, r.contended), (Some(5), 2));
    // Entries absent from the previous sample start from zero too.
    prev.contention.as_mut().unwrap().futexes.clear();
    let f = derive(&sys, Some(&prev), &cur);
    assert_eq!(f.contention.futexes.len(), 4);
}

#[test]
fn lock_type_names() {
    assert_eq!(lock_type(1), "spinlock");
    assert_eq!(lock_type(3), "rwlock:R");
    assert_eq!(lock_type(2), "rwsem:R");
    assert_eq!(lock_type(4), "rwsem:W");
    assert_eq!(lock_type(32), "mutex");
    assert_eq!(lock_type(33), "mutex:spin");
    assert_eq!(lock_type(8), "rtmutex");
    assert_eq!(lock_type(18), "pcpu-sem:R");
    assert_eq!(lock_type(0), "semaphore");
    assert_eq!(futex_kind(1 | 2), "shared+pi");
}

#[test]
fn old_recordings_without_contention_still_load() {
    let s = fixtures::incident(2, true);
    let mut v = serde_json::to_value(&s).unwrap();
    v.as_object_mut().unwrap().remove("contention");
    let back: crate::model::Sample = serde_json::from_value(v).unwrap();
    assert!(back.contention.is_none());
}

/// A futex word recorded before THR was measured reads back as unknown, and its row
/// says so in JSON (null), never a zero.
#[test]
fn a_word_recorded_without_waiters_is_unknown_not_zero() {
    let old = r#"{"tgid":7,"uaddr":4096,"calls":9,"waits":4,"contended":4,"eagain":0,
        "wait_ns":5000,"max_wait_ns":2000,"wakes":0,"woken":0,"flags":0,"last_tid":8}"#;
    let w: FutexSample = serde_json::from_str(old).unwrap();
    assert_eq!(w.waiters, None);
    let cur = ContentionSample {
        futexes: vec![w],
        ..Default::default()
    };
    let rows = futex_rows(None, &cur, &|_| String::new());
    let json = serde_json::to_value(&rows[0]).unwrap();
    assert!(json["waiters"].is_null(), "{json}");
    assert_eq!(json["contended"], 4);
}

/// Without the futex probes (--no-futex) the futex columns are not measured in any
/// interval, the first included, and the Frame says which tables were.
#[test]
fn futex_columns_are_unmeasured_without_the_futex_probes() {
    let sys = fixtures::system();
    let sample = |secs: u64, futex_ok: bool| {
        let mut s = fixtures::incident(secs, true);
        let mut c = fixture(secs);
        c.futex_ok = futex_ok;
        s.contention = Some(c);
        s
    };
    for ok in [true, false] {
        let first = derive(&sys, None, &sample(4, ok));
        let next = derive(&sys, Some(&sample(4, ok)), &sample(5, ok));
        for f in [&first, &next] {
            assert_eq!(f.contention.contention_measured.futex, ok);
            assert_eq!(f.contention.contention_measured.futex_calls, ok);
            assert!(f.contention.contention_measured.locks);
            assert_eq!(f.procs[0].futex_calls.get().is_some(), ok);
            assert_eq!(f.procs[0].futex_slept.get().is_some(), ok);
            assert_eq!(f.procs[0].futex_wait_ms.get().is_some(), ok);
        }
    }
    // Waits that slept only (the default, no per-call hooks): the words and threads
    // are there with their waits; calls, EAGAINs and wake calls are null, never zero.
    let sleeps = |secs: u64| {
        let mut s = sample(secs, true);
        s.contention.as_mut().unwrap().futex_calls_ok = false;
        s
    };
    let first = derive(&sys, None, &sleeps(4));
    let f = derive(&sys, Some(&sleeps(4)), &sleeps(5));
    for f in [&first, &f] {
        let m = f.contention.contention_measured;
        assert!(m.futex && !m.futex_calls, "{m:?}");
        assert!(f.procs.iter().all(|p| p.futex_calls.get().is_none()));
        assert!(f.procs.iter().all(|p| p.futex_slept.get().is_some()));
    }
    assert_eq!(f.contention.futexes.len(), 4);
    let json = serde_json::to_value(&f.contention).unwrap();
    for r in json["futexes"].as_array().unwrap() {
        for k in ["calls", "eagain", "wakes"] {
            assert!(r[k].is_null(), "{k}: {r}");
        }
        assert!(r["contended"].as_u64().is_some() && r["woken"].as_u64().is_some());
    }
    for r in json["futex_threads"].as_array().unwrap() {
        assert!(r["calls"].is_null() && r["eagain"].is_null(), "{r}");
    }
    let tiflash = f.procs.iter().find(|p| p.pid == 4242).unwrap();
    let slept: u64 = f
        .contention
        .futexes
        .iter()
        .filter(|r| r.pid == 4242)
        .map(|r| r.contended)
        .sum();
    assert_eq!(tiflash.futex_slept.get(), Some(slept));
    // No eBPF at all: nothing measured.
    let mut plain = fixtures::incident(5, true);
    plain.contention = None;
    let f = derive(&sys, None, &plain);
    assert_eq!(
        f.contention.contention_measured,
        ContentionMeasured::default()
    );
}

/// A stack the kernel could not store loses a caller's name, not a wait: the derived
/// frame's `drops` (what the header shows) leaves it out and lost_data stays silent;
/// a full map does count, and fires it. (The rule used to add the contention drops to
/// `drops`, which already held them, stacks included: on an idle machine a few
/// colliding kernel stacks fired lost_data in half the frames.)
#[test]
fn unstored_stacks_are_counted_apart_from_lost_events() {
    let sys = fixtures::system();
    let mut prev = fixtures::incident(9, true);
    prev.contention = Some(fixture(9));
    let mut cur = fixtures::incident(10, true);
    let mut c = fixture(10);
    c.drops.stacks = prev.contention.as_ref().unwrap().drops.stacks + 7;
    cur.contention = Some(c.clone());
    // No scheduler event skipped either: only the stacks.
    let f = derive(&sys, Some(&prev), &cur);
    assert_eq!(f.contention.contention_drops.stacks, 7);
    assert_eq!(f.drops, 0);
    let kinds = |f: &crate::model::Frame| -> Vec<&str> {
        crate::model::findings::rules::observe(f)
            .iter()
            .map(|x| x.kind)
            .collect()
    };
    assert!(!kinds(&f).contains(&"lost_data"));
    c.drops.locks = prev.contention.as_ref().unwrap().drops.locks + 2;
    cur.contention = Some(c);
    let f = derive(&sys, Some(&prev), &cur);
    assert_eq!(f.drops, 2);
    assert!(kinds(&f).contains(&"lost_data"));
}

/// A victim that exits during the interval is gone from the scan: its mmap_lock rows
/// and the stall finding name it from what was known during the interval (its row of
/// the frame, named from the kernel at its exit or the previous scan), not "(4242)".
#[test]
fn an_exited_victim_keeps_its_name() {
    let sys = fixtures::system();
    let mut prev = fixtures::incident(9, true);
    prev.contention = Some(fixture(9));
    let mut cur = fixtures::incident(10, true);
    cur.contention = Some(fixture(10));
    cur.procs.retain(|p| p.pid != 4242);
    let f = derive(&sys, Some(&prev), &cur);
    let rows: Vec<_> = f
        .contention
        .mmap_lock
        .iter()
        .filter(|m| m.victim_pid == 4242)
        .collect();
    assert!(!rows.is_empty());
    for m in rows {
        assert_eq!(m.victim_comm, "tiflash", "{m:?}");
    }
    let stall = crate::model::findings::rules::observe(&f)
        .into_iter()
        .find(|x| x.kind == "mmap_lock_stall")
        .expect("the stall is still seen");
    assert!(
        stall.summary.starts_with("tiflash(4242)'s threads"),
        "{}",
        stall.summary
    );
}

/// Who woke a word's waits in the interval: another process when one woke any (the
/// latest), else its own when only its threads did, else none; null when not measured,
/// and in recordings made before it was (their samples lack the keys).
#[test]
fn the_waker_is_the_other_process_else_its_own_else_none() {
    let word = |uaddr: u64, woken: u64, woken_other: u64, waker_tgid: u32| FutexSample {
        tgid: 4242,
        uaddr,
        contended: woken.max(1),
        woken,
        woken_other,
        waker_tgid,
        ..Default::default()
    };
    let prev = ContentionSample {
        futexes: vec![
            word(0x10, 5, 5, 31337),
            word(0x20, 5, 0, 0),
            word(0x30, 5, 5, 1817),
        ],
        futex_ok: true,
        futex_wakers_ok: true,
        ..Default::default()
    };
    let mut cur = prev.clone();
    // 0x10: 7 more, 3 of them by another process (the latest, 912); 0x20: 4 more, all
    // its own; 0x30: slept without a futex wake (timeouts) since.
    cur.futexes = vec![
        word(0x10, 12, 8, 912),
        word(0x20, 9, 0, 0),
        word(0x30, 5, 5, 1817),
    ];
    cur.futexes[2].contended = 9;
    let name = |pid: u32| format!("p{pid}");
    let rows = futex_rows(Some(&prev), &cur, &name);
    let by = |uaddr: u64| rows.iter().find(|r| r.uaddr == uaddr).unwrap();
    let seen = |r: &FutexFrame| (r.waker_pid, r.waker_comm.clone(), r.woken_by_other_procs);
    assert_eq!(seen(by(0x10)), (Some(912), Some("p912".into()), Some(3)));
    assert_eq!(seen(by(0x20)), (Some(4242), Some("p4242".into()), Some(0)));
    assert_eq!(seen(by(0x30)), (None, None, Some(0)));
    // Every call hooked: not measured, never a pid or 0.
    let calls = ContentionSample {
        futex_wakers_ok: false,
        ..cur.clone()
    };
    for r in futex_rows(Some(&prev), &calls, &name) {
        assert_eq!(seen(&r), (None, None, None));
    }
    // A recording made before: the keys are missing and default to not measured.
    let mut old = serde_json::to_value(&cur).unwrap();
    old.as_object_mut().unwrap().remove("futex_wakers_ok");
    for f in old["futexes"].as_array_mut().unwrap() {
        let f = f.as_object_mut().unwrap();
        f.remove("woken_other");
        f.remove("waker_tgid");
    }
    let old: ContentionSample = serde_json::from_value(old).unwrap();
    assert!(!old.futex_wakers_ok);
    for r in futex_rows(Some(&prev), &old, &name) {
        assert_eq!(seen(&r), (None, None, None));
    }
}

/// Two kernel entries (two stacks) with the same caller: when one is deleted as idle,
/// the other's row counts only its own new contentions. Summed under the caller, the
/// sum fell and read as a counter reset: the other's whole total counted again.
#[test]
fn a_caller_whose_sibling_stack_went_idle_counts_only_new_contentions() {
    let entry = |kstack: i64, contended: u64| LockSample {
        lock: 0xffff_8882_9149_4a84,
        tgid: 4242,
        flags: 1,
        contended,
        wait_ns: contended * 100,
        caller: "futex_wait_setup+0x64".into(),
        kstack: Some(kstack),
        ..Default::default()
    };
    let sample = |locks: Vec<LockSample>| ContentionSample {
        locks,
        ..Default::default()
    };
    let prev = sample(vec![entry(3555, 1_560_000), entry(2662, 1_000_000)]);
    let cur = sample(vec![entry(2662, 1_000_050)]);
    let (rows, _) = rows_of(Some(&prev), &cur);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].contended, 50, "{rows:?}");
    // An entry named between two reads ("?" while its stack was unread) is the same
    // entry: only its new contentions count.
    let unread = LockSample {
        caller: "?".into(),
        ..entry(2662, 1_000_000)
    };
    let (rows, _) = rows_of(
        Some(&sample(vec![unread])),
        &sample(vec![entry(2662, 1_000_020)]),
    );
    assert_eq!(rows[0].contended, 20, "{rows:?}");
    // A recording made before the stack id was kept subtracts by caller, as it did.
    let old = |l: LockSample| LockSample { kstack: None, ..l };
    let prev = sample(vec![old(entry(1, 1_000_000))]);
    let cur = sample(vec![old(entry(1, 1_000_070))]);
    let (rows, _) = rows_of(Some(&prev), &cur);
    assert_eq!(rows[0].contended, 70);
}

/// Rows per waiting process (what the kernel keeps since per-thread rows overflowed under
/// thread churn) give the same frame as rows per thread: the kernel counts each thread
/// once a tick in `threads`, and the frame takes the interval's rise.
#[test]
fn mmap_rows_per_process_match_rows_per_thread() {
    let per_process = |secs: u64| {
        let mut c = fixture(secs);
        let mut rows: Vec<MmapSample> = Vec::new();
        for m in c.mmap.drain(..) {
            let (tgid, n) = if m.waiter_tid == 0 {
                (0, 0)
            } else {
                (m.waiter_tgid, secs)
            };
            match rows
                .iter_mut()
                .find(|r| (r.victim, r.holder, r.waiter_tid) == (m.victim, m.holder, tgid))
            {
                Some(r) => {
                    r.waits += m.waits;
                    r.wait_ns += m.wait_ns;
                    r.max_wait_ns = r.max_wait_ns.max(m.max_wait_ns);
                    *r.threads.as_mut().unwrap() += n;
                }
                None => rows.push(MmapSample {
                    waiter_tid: tgid,
                    threads: Some(n),
                    ..m
                }),
            }
        }
        c.mmap = rows;
        c
    };
    let sys = fixtures::system();
    let mut prev = fixtures::incident(6, true);
    prev.contention = Some(per_process(6));
    let mut cur = fixtures::incident(7, true);
    cur.contention = Some(per_process(7));
    let got = derive(&sys, Some(&prev), &cur).contention.mmap_lock;
    let want = frame(7).contention.mmap_lock;
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(
            (g.victim_pid, g.holder_pid, g.waiter_pid, g.waiters, g.waits),
            (w.victim_pid, w.holder_pid, w.waiter_pid, w.waiters, w.waits)
        );
        assert_eq!(
            (g.total_wait_ms, g.hold_ms, g.max_wait_us),
            (w.total_wait_ms, w.hold_ms, w.max_wait_us)
        );
    }
    assert_eq!(got[0].waiters, 3);
}
