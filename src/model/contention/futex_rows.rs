//! The futex rows of the contention Frame: per word (with the shared words kept beside
//! the most contended) and per waiting thread. Part of `contention::frame`.

use super::*;

pub(super) fn futex_rows(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
    comm: &dyn Fn(u32) -> String,
) -> Vec<FutexFrame> {
    let pm = index(prev.map(|p| p.futexes.as_slice()), |f: &FutexSample| {
        (f.tgid, f.uaddr)
    });
    let zero = FutexSample::default();
    let mut rows: Vec<FutexFrame> = cur
        .futexes
        .iter()
        .filter_map(|c| {
            let p = pm.get(&(c.tgid, c.uaddr)).copied().unwrap_or(&zero);
            let calls = delta(p.calls, c.calls);
            let contended = delta(p.contended, c.contended);
            let wait = delta(p.wait_ns, c.wait_ns);
            if calls == 0 && contended == 0 && wait == 0 {
                return None;
            }
            let calls_ok = cur.futex_calls_ok;
            let woken = delta(p.woken, c.woken);
            let (waker_pid, woken_other) = if cur.futex_ok && cur.futex_wakers_ok {
                let other = delta(p.woken_other, c.woken_other);
                (waker(c, woken, other), Some(other))
            } else {
                (None, None)
            };
            Some(FutexFrame {
                pid: c.tgid,
                comm: comm(c.tgid),
                uaddr: c.uaddr,
                kind: futex_kind(c.flags),
                calls: calls_ok.then_some(calls),
                contended,
                waiters: c.waiters.map(|w| if contended > 0 { w } else { 0 }),
                eagain: calls_ok.then(|| delta(p.eagain, c.eagain)),
                wakes: calls_ok.then(|| delta(p.wakes, c.wakes)),
                woken,
                waker_pid,
                waker_comm: waker_pid.map(comm),
                woken_by_other_procs: woken_other,
                total_wait_ms: ms(wait),
                max_wait_us: max_us(c.max_wait_ns, wait, contended),
                avg_wait_us: avg_us(wait, contended),
                caller: c.caller.clone(),
                stack: c.stack.clone(),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.contended
            .cmp(&a.contended)
            .then(b.total_wait_ms.total_cmp(&a.total_wait_ms))
            .then(b.calls.cmp(&a.calls))
            .then(a.pid.cmp(&b.pid))
            .then(a.uaddr.cmp(&b.uaddr))
    });
    keep_shared(&mut rows);
    rows
}

/// The process that woke the word's waits in the interval: the latest other process,
/// when any woke one (`other` of the `woken`), else its own when its threads did.
fn waker(c: &FutexSample, woken: u64, other: u64) -> Option<u32> {
    if other > 0 && c.waker_tgid != 0 {
        Some(c.waker_tgid)
    } else if woken > other {
        Some(c.tgid)
    } else {
        None
    }
}

/// Words beyond the MAX_ROWS most contended that several threads blocked on, kept
/// besides them (most waiters first).
pub const SHARED_ROWS: usize = 8;

/// Cut the rows, ranked by contended waits, to MAX_ROWS, but keep up to SHARED_ROWS of
/// the rest that several threads blocked on: a lock the whole pool queues on is not
/// hidden behind a hundred words each with one waiter (seed 000: 120 pthread_join words
/// outrank glibc's stack-cache lock in waits).
fn keep_shared(rows: &mut Vec<FutexFrame>) {
    if rows.len() <= MAX_ROWS {
        return;
    }
    let mut rest = rows.split_off(MAX_ROWS);
    rest.retain(|r| r.waiters.is_some_and(|w| w >= 2));
    // Stable: equal waiters keep the contended order.
    rest.sort_by_key(|r| std::cmp::Reverse(r.waiters));
    rest.truncate(SHARED_ROWS);
    rows.extend(rest);
}

pub(super) fn futex_thread_rows(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
) -> Vec<FutexThreadFrame> {
    let pm = index(
        prev.map(|p| p.futex_threads.as_slice()),
        |t: &FutexThreadSample| t.tid,
    );
    let mut rows: Vec<FutexThreadFrame> = cur
        .futex_threads
        .iter()
        .filter_map(|c| {
            let p = pm
                .get(&c.tid)
                .filter(|p| p.tgid == c.tgid)
                .copied()
                .copied()
                .unwrap_or_default();
            let calls = delta(p.calls, c.calls);
            let contended = delta(p.contended, c.contended);
            let wait = delta(p.wait_ns, c.wait_ns);
            if calls == 0 && contended == 0 && wait == 0 {
                return None;
            }
            let calls_ok = cur.futex_calls_ok;
            Some(FutexThreadFrame {
                tid: c.tid,
                pid: c.tgid,
                calls: calls_ok.then_some(calls),
                contended,
                eagain: calls_ok.then(|| delta(p.eagain, c.eagain)),
                wakes: calls_ok.then(|| delta(p.wakes, c.wakes)),
                total_wait_ms: ms(wait),
                max_wait_us: max_us(c.max_wait_ns, wait, contended),
                avg_wait_us: avg_us(wait, contended),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.calls
            .cmp(&a.calls)
            .then(b.contended.cmp(&a.contended))
            .then(b.total_wait_ms.total_cmp(&a.total_wait_ms))
            .then(a.tid.cmp(&b.tid))
    });
    rows.truncate(MAX_ROWS);
    rows
}
