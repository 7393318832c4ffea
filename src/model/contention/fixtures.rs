//! A deterministic contention Sample for snapshots, unit tests and benches: not in the
//! shipped library (compiled under `cfg(test)` or the `fixtures` feature).

use super::sample::*;

/// A deterministic contention picture for snapshots and unit tests, matching the pids
/// of `fixtures::incident`: tiflash (4242) storming a mutex, node_exporter (912, a Go
/// program) parking and waking at 1 kHz, a postgres semaphore with long waits, and a
/// security agent (31999) holding tiflash's mmap_lock (seed 002). Counters grow
/// linearly with `secs`, so any two consecutive samples derive to the same rates.
pub fn fixture(secs: u64) -> ContentionSample {
    let futex = |tgid: u32,
                 uaddr: u64,
                 per_s: [u64; 7],
                 (max_ns, waiters): (u64, u32),
                 flags: u32,
                 caller: &str| {
        let [calls, waits, contended, eagain, wait_ns, wakes, woken] = per_s;
        FutexSample {
            tgid,
            uaddr,
            calls: calls * secs,
            waits: waits * secs,
            contended: contended * secs,
            eagain: eagain * secs,
            wait_ns: wait_ns * secs,
            max_wait_ns: max_ns,
            waiters: Some(waiters),
            wakes: wakes * secs,
            woken: woken * secs,
            woken_other: 0,
            waker_tgid: 0,
            flags,
            last_tid: tgid + 1,
            caller: caller.to_string(),
            stack: vec![
                "syscall+0x19".into(),
                caller.to_string(),
                "start_thread+0x8a".into(),
            ],
        }
    };
    let lock = |lock: u64,
                tgid: u32,
                flags: u32,
                per_s: [u64; 2],
                max_ns: u64,
                comm: &str,
                caller: &str| LockSample {
        lock,
        tgid,
        flags,
        is_mmap: lock == 0xffff_8881_573d_4578,
        contended: per_s[0] * secs,
        wait_ns: per_s[1] * secs,
        max_wait_ns: max_ns,
        last_tid: tgid,
        comm: comm.to_string(),
        caller: caller.to_string(),
        stack: Vec::new(),
        kstack: None,
    };
    let mmap = |holder: u32,
                waiter_tid: u32,
                waiter_tgid: u32,
                per_s: [u64; 4],
                max_ns: u64,
                comm: &str| MmapSample {
        victim: 4242,
        holder,
        holder_tid: holder,
        waiter_tid,
        waiter_tgid,
        waits: per_s[0] * secs,
        wait_ns: per_s[1] * secs,
        max_wait_ns: max_ns,
        hold_ns: per_s[2] * secs,
        holds: per_s[3] * secs,
        comm: comm.to_string(),
        ..Default::default()
    };
    ContentionSample {
        futexes: vec![
            futex(
                4242,
                0x7f3a_2c00_1040,
                [52_000, 40_000, 3_876, 36_100, 477_000_000, 12_000, 3_876],
                (18_500_000, 24),
                0,
                "DeltaMergeStore::flush+0x42",
            ),
            futex(
                4242,
                0x7f3a_2c00_10a0,
                [1_300, 900, 412, 488, 117_500_000, 400, 412],
                (4_200_000, 12),
                0,
                "allocate_stack+0x1f3",
            ),
            futex(
                912,
                0x00c0_0008_0148,
                [14_500, 7_250, 5_800, 1_450, 870_000_000, 7_250, 5_800],
                (1_100_000, 6),
                0,
                "runtime.stopm+0xc5",
            ),
            futex(
                1817,
                0x7f11_c8a2_e0d8,
                [240, 120, 118, 2, 252_000_000, 120, 118],
                (9_800_000, 9),
                1,
                "LWLockAcquire+0x1b6",
            ),
        ],
        futex_threads: (0..4)
            .map(|i| FutexThreadSample {
                tid: 4243 + i,
                tgid: 4242,
                calls: 13_000 * secs,
                contended: 970 * secs,
                eagain: 9_000 * secs,
                wait_ns: 119_000_000 * secs,
                max_wait_ns: 18_500_000,
                wakes: 3_000 * secs,
            })
            .collect(),
        futex_procs: vec![
            FutexProcSample {
                tgid: 4242,
                calls: 53_300 * secs,
                waits: 40_900 * secs,
                contended: 4_288 * secs,
                eagain: 36_588 * secs,
                wait_ns: 594_500_000 * secs,
                wakes: 12_400 * secs,
            },
            FutexProcSample {
                tgid: 912,
                calls: 14_500 * secs,
                waits: 7_250 * secs,
                contended: 5_800 * secs,
                eagain: 1_450 * secs,
                wait_ns: 870_000_000 * secs,
                wakes: 7_250 * secs,
            },
            FutexProcSample {
                tgid: 1817,
                calls: 240 * secs,
                waits: 120 * secs,
                contended: 118 * secs,
                eagain: 2 * secs,
                wait_ns: 252_000_000 * secs,
                wakes: 120 * secs,
            },
        ],
        locks: vec![
            lock(
                0xffff_8881_573d_4578,
                4242,
                4,
                [2, 630_000_000],
                630_000_000,
                "tiflash",
                "__vm_munmap+0x7d",
            ),
            lock(
                0xffff_8881_573d_4578,
                4242,
                2,
                [31, 410_000_000],
                612_000_000,
                "tiflash",
                "exc_page_fault+0x1d8",
            ),
            lock(
                0xffff_8881_0448_6b44,
                4242,
                1,
                [6_060, 26_500_000],
                26_000,
                "tiflash",
                "futex_wake+0xf1",
            ),
            lock(
                0xffff_8886_27c2_ba40,
                912,
                1,
                [214, 2_900_000],
                45_000,
                "node_exporter",
                "__schedule+0xad",
            ),
            lock(
                0xffff_8881_0a11_2230,
                1817,
                32,
                [12, 1_800_000],
                410_000,
                "postgres",
                "ext4_buffered_write_iter+0x4c",
            ),
        ],
        mmap: vec![
            mmap(31999, 0, 31999, [0, 0, 640_000_000, 3], 0, "secagent"),
            mmap(
                31999,
                4243,
                4242,
                [1, 630_000_000, 0, 0],
                630_000_000,
                "DeltaMerge-3",
            ),
            mmap(
                31999,
                4244,
                4242,
                [12, 205_000_000, 0, 0],
                612_000_000,
                "DeltaMerge-7",
            ),
            mmap(
                31999,
                4245,
                4242,
                [19, 205_000_000, 0, 0],
                598_000_000,
                "tiflash",
            ),
            mmap(
                4242,
                4246,
                4242,
                [40, 3_100_000, 0, 0],
                410_000,
                "DeltaMerge-9",
            ),
        ],
        drops: ContentionDrops::default(),
        kernel_stacks: KernelStacks {
            walked: 400 * secs,
            cached: 6_100 * secs,
            wrong: 0,
            spilled: 0,
            shed: 0,
            clocked_ns: 1_900_000 * secs,
        },
        // Stacks are named once each: a few new frames a second, one unnamed in libc's
        // stripped neighbour.
        user_frames: UserFrames {
            named: 9 * secs,
            no_mapping: 0,
            no_symbol: secs,
            unreadable: 0,
            stack_cut: 0,
            no_caller: 0,
            ..Default::default()
        },
        stack_maps: Vec::new(),
        // No wait histogram: the tests of the metrics histogram give their own.
        futex_wait_hist: Vec::new(),
        futex_wait_hist_ns: 0,
        futex_ok: true,
        futex_calls_ok: true,
        futex_wakers_ok: false,
        locks_ok: true,
        mmap_ok: true,
    }
}
