//! With a filter (ttop -p / --comm), every per-process table is about the watched
//! processes: futex words and threads, the kernel locks they waited for (with their
//! waits only), mmap_lock pairs they are part of, IPIs they sent, their latency rows and
//! ghost groups. Per-CPU figures stay machine-wide: the CPUs are shared.

use super::Frame;

pub fn scope_to_filter(frame: &mut Frame, pids: &[u32]) {
    let watched = |p: u32| pids.contains(&p);
    let c = &mut frame.contention;
    c.futexes.retain(|f| watched(f.pid));
    c.futex_threads.retain(|f| watched(f.pid));
    for l in &mut c.locks {
        l.waiters.retain(|w| watched(w.pid));
        // The row now counts only the watched processes' waits.
        l.contended = l.waiters.iter().map(|w| w.contended).sum();
        l.total_wait_ms = l.waiters.iter().map(|w| w.total_wait_ms).sum();
        l.avg_wait_us = if l.contended > 0 {
            1000.0 * l.total_wait_ms / l.contended as f64
        } else {
            0.0
        };
    }
    c.locks.retain(|l| !l.waiters.is_empty());
    c.mmap_lock
        .retain(|m| watched(m.victim_pid) || watched(m.holder_pid));
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
    use crate::model::contention::frame::{FutexFrame, LockFrame, LockWaiterFrame, MmapLockFrame};

    #[test]
    fn keeps_only_the_watched_processes() {
        let mut f = Frame::default();
        f.contention.futexes = vec![
            FutexFrame {
                pid: 1,
                ..Default::default()
            },
            FutexFrame {
                pid: 2,
                ..Default::default()
            },
        ];
        let waiter = |pid, contended, ms| LockWaiterFrame {
            pid,
            contended,
            total_wait_ms: ms,
            ..Default::default()
        };
        f.contention.locks = vec![
            LockFrame {
                contended: 30,
                waiters: vec![waiter(1, 10, 1.0), waiter(2, 20, 5.0)],
                ..Default::default()
            },
            LockFrame {
                contended: 5,
                waiters: vec![waiter(2, 5, 1.0)],
                ..Default::default()
            },
        ];
        f.contention.mmap_lock = vec![
            MmapLockFrame {
                victim_pid: 2,
                holder_pid: 1,
                ..Default::default()
            },
            MmapLockFrame {
                victim_pid: 2,
                holder_pid: 3,
                ..Default::default()
            },
        ];
        scope_to_filter(&mut f, &[1]);
        assert_eq!(f.contention.futexes.len(), 1);
        assert_eq!(f.contention.locks.len(), 1);
        assert_eq!(f.contention.locks[0].contended, 10);
        assert!((f.contention.locks[0].avg_wait_us - 100.0).abs() < 1e-9);
        assert_eq!(
            f.contention.mmap_lock.len(),
            1,
            "the watched process held the lock"
        );
    }
}
