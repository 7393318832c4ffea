//! With a filter (ttop -p / --comm), every per-process table is about the watched
//! processes: futex words and threads, the kernel locks they waited for (with their
//! waits only), mmap_lock pairs they are part of, IPIs they sent, their latency rows and
//! ghost groups. Per-CPU figures stay machine-wide: the CPUs are shared.
//!
//! The contention tables are scoped in the Sample, before their rows are ranked and cut
//! to MAX_ROWS: scoped after the cut, a watched process's rows could be among those
//! other processes' rows had pushed out (thread churn elsewhere fills the kernel-lock
//! table with one row per page-table lock), and a lock row kept the maximum wait of
//! every process.

use super::Frame;
use super::contention::ContentionSample;

/// The watched processes' part of a contention Sample: their futex words, threads and
/// per-process sums, the kernel-lock entries they waited in, the mmap_lock pairs they
/// are the victim or the holder of. The rest (drops, stack statistics, what was
/// measured) is machine-wide and kept.
pub fn scope_contention(s: &ContentionSample, pids: &[u32]) -> ContentionSample {
    fn keep<T: Clone>(v: &[T], f: impl Fn(&T) -> bool) -> Vec<T> {
        v.iter().filter(|x| f(x)).cloned().collect()
    }
    let watched = |p: u32| pids.contains(&p);
    ContentionSample {
        futexes: keep(&s.futexes, |f| watched(f.tgid)),
        futex_threads: keep(&s.futex_threads, |t| watched(t.tgid)),
        futex_procs: keep(&s.futex_procs, |p| watched(p.tgid)),
        locks: keep(&s.locks, |l| watched(l.tgid)),
        mmap: keep(&s.mmap, |m| watched(m.victim) || watched(m.holder)),
        drops: s.drops.clone(),
        kernel_stacks: s.kernel_stacks.clone(),
        user_frames: s.user_frames,
        stack_maps: s.stack_maps.clone(),
        futex_wait_hist: s.futex_wait_hist.clone(),
        futex_wait_hist_ns: s.futex_wait_hist_ns,
        futex_ok: s.futex_ok,
        futex_calls_ok: s.futex_calls_ok,
        futex_wakers_ok: s.futex_wakers_ok,
        locks_ok: s.locks_ok,
        mmap_ok: s.mmap_ok,
    }
}

/// The rest of the Frame: what is not built from the contention Sample.
pub fn scope_to_filter(frame: &mut Frame, pids: &[u32]) {
    let watched = |p: u32| pids.contains(&p);
    frame.ipi_senders.retain(|s| watched(s.pid));
    if let Some(l) = frame.latency.as_mut() {
        l.threads.retain(|t| watched(t.pid));
    }
    frame.ghost_groups.retain(|g| watched(g.pid));
    if let Some(b) = frame.blocked.as_mut() {
        b.retain(|r| watched(r.pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::contention::frame::{MAX_ROWS, derive_contention};
    use crate::model::contention::{FutexSample, LockSample, MmapSample};

    fn lock(lock: u64, tgid: u32, contended: u64, wait_ns: u64, max: u64) -> LockSample {
        LockSample {
            lock,
            tgid,
            contended,
            wait_ns,
            max_wait_ns: max,
            // The churning process's waits all come from one caller.
            caller: if tgid == 7 {
                "__pte_offset_map_lock+0xa0".into()
            } else {
                format!("f{lock}+0x1")
            },
            kstack: Some(lock as i64),
            ..Default::default()
        }
    }

    /// Seed 000's churn beside the watched process: more page-table lock rows of
    /// another process than the table keeps, each waiting longer than the watched
    /// process's one wait. Scoped in the Sample, its row is there, with its own maximum.
    #[test]
    fn a_watched_process_behind_many_other_rows_keeps_its_own() {
        let sample = |k: u64| ContentionSample {
            locks_ok: true,
            futex_ok: true,
            locks: (0..100)
                .map(|i| lock(0x1000 + i, 7, 2 * k, 2_000_000 * k, 1_500_000))
                .chain([
                    lock(0x10, 1, k, 10_000 * k, 10_000),
                    // One lock both wait on: the row of the watched process only.
                    lock(0x20, 1, k, 10_000 * k, 10_000),
                    lock(0x20, 7, k, 9_000_000 * k, 9_000_000),
                ])
                .collect(),
            futexes: vec![
                FutexSample {
                    tgid: 1,
                    uaddr: 0x40,
                    contended: k,
                    ..Default::default()
                },
                FutexSample {
                    tgid: 7,
                    uaddr: 0x40,
                    contended: k,
                    ..Default::default()
                },
            ],
            mmap: vec![
                MmapSample {
                    victim: 7,
                    holder: 1,
                    waits: k,
                    ..Default::default()
                },
                MmapSample {
                    victim: 7,
                    holder: 3,
                    waits: k,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let (p, c) = (sample(1), sample(2));
        let whole = derive_contention(Some(&p), Some(&c), true, &[], &mut []);
        assert_eq!(whole.locks.len(), MAX_ROWS);
        assert!(
            whole.locks.iter().all(|l| l.lock != "0x10"),
            "unscoped, the watched process's row is cut"
        );
        let rest: u64 = whole.locks_rest.iter().map(|r| r.contended).sum();
        let shown: u64 = whole.locks.iter().map(|r| r.contended).sum();
        assert_eq!(
            shown + rest,
            100 * 2 + 3,
            "the cut rows are summed, not lost"
        );
        let by_type: u64 = whole.lock_types.iter().map(|t| t.contended).sum();
        assert_eq!(by_type, shown + rest, "the counters add what the rows show");
        let cut: u64 = whole.locks_rest.iter().map(|r| r.locks).sum();
        assert_eq!(cut as usize, 103 - MAX_ROWS);
        assert_eq!(whole.locks_rest[0].caller, "__pte_offset_map_lock+0xa0");
        assert_eq!(whole.locks_rest[0].locks as usize, 103 - MAX_ROWS - 2);

        let (p, c) = (scope_contention(&p, &[1]), scope_contention(&c, &[1]));
        let f = derive_contention(Some(&p), Some(&c), true, &[], &mut []);
        let rows: Vec<(&str, u64, f64)> = f
            .locks
            .iter()
            .map(|l| (l.lock.as_str(), l.contended, l.max_wait_us))
            .collect();
        assert_eq!(rows, [("0x10", 1, 10.0), ("0x20", 1, 10.0)]);
        assert!(f.locks_rest.is_empty());
        assert_eq!(f.futexes.len(), 1);
        assert_eq!(f.futexes[0].pid, 1);
        assert_eq!(f.mmap_lock.len(), 1, "the watched process held the lock");
        assert_eq!(f.mmap_lock[0].holder_pid, 1);
    }

    #[test]
    fn the_rest_of_the_frame_keeps_only_the_watched_processes() {
        let mut f = Frame {
            ghost_groups: vec![
                crate::model::procs::ghosts::GhostGroup {
                    pid: 1,
                    ..Default::default()
                },
                crate::model::procs::ghosts::GhostGroup {
                    pid: 2,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        scope_to_filter(&mut f, &[1]);
        assert_eq!(f.ghost_groups.len(), 1);
    }
}
