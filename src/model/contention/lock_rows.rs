//! The kernel-lock rows of the contention Frame: per (lock, caller, process, type),
//! mmap_lock waits told apart. Part of `contention::frame`.

use super::*;
use crate::model::contention::lock_types::lock_type;

/// (lock, caller, tgid, flags, is_mmap, stack id): a kernel entry. Recordings made
/// before the stack id was kept have None, and the caller stands for it there.
type LockKey = (u64, String, u32, u32, bool, Option<i64>);
/// (contended, wait_ns, max_wait_ns, waiter comm).
type LockTotals = (u64, u64, u64, String);
/// A row being built and its (contended, wait_ns, max_wait_ns).
type LockAcc = (LockFrame, u64, u64, u64);

pub(super) fn lock_rows(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
    comm: &dyn Fn(u32) -> String,
) -> Vec<LockFrame> {
    // Subtracted per kernel entry: several stacks share a caller, and their sum falls
    // when one of them is deleted as idle, which read as a counter reset counted the
    // others' whole totals again (1.56 M contentions in an interval of 1.06 M).
    let key = |l: &LockSample| -> LockKey {
        (
            l.lock,
            l.caller.clone(),
            l.tgid,
            l.flags,
            l.is_mmap,
            l.kstack,
        )
    };
    // The previous read is looked up by the kernel key alone where the stack id is kept:
    // an entry's caller can be named between two reads (`?` while its stack is unread).
    let by_id = |mut k: LockKey| {
        if k.5.is_some() {
            k.1.clear();
        }
        k
    };
    let mut pm: HashMap<LockKey, (u64, u64)> = HashMap::new();
    for l in prev.map(|p| p.locks.as_slice()).unwrap_or_default() {
        let e = pm.entry(by_id(key(l))).or_default();
        e.0 += l.contended;
        e.1 += l.wait_ns;
    }
    let mut cm: HashMap<LockKey, LockTotals> = HashMap::new();
    for l in &cur.locks {
        let e = cm.entry(key(l)).or_default();
        e.0 += l.contended;
        e.1 += l.wait_ns;
        e.2 = e.2.max(l.max_wait_ns);
        if e.3.is_empty() {
            e.3 = l.comm.clone();
        }
    }
    // Group by (lock, caller, type): one row, with the processes that waited.
    let mut rows: HashMap<(u64, String, u32, bool), LockAcc> = HashMap::new();
    for (k, (cont, wait, max, wcomm)) in cm {
        let (pc, pw) = pm.get(&by_id(k.clone())).copied().unwrap_or_default();
        let dc = delta(pc, cont);
        let dw = delta(pw, wait);
        if dc == 0 {
            continue;
        }
        let (lock, caller, tgid, flags, mmap, _) = k;
        let e = rows
            .entry((lock, caller.clone(), flags, mmap))
            .or_insert_with(|| {
                (
                    LockFrame {
                        kind: lock_type(flags),
                        caller,
                        lock: format!("{lock:#x}"),
                        mmap_lock: mmap,
                        ..Default::default()
                    },
                    0,
                    0,
                    0,
                )
            });
        e.1 += dc;
        e.2 += dw;
        e.3 = e.3.max(max);
        let pcomm = comm(tgid);
        e.0.waiters.push(LockWaiterFrame {
            pid: tgid,
            comm: if pcomm.is_empty() { wcomm } else { pcomm },
            contended: dc,
            total_wait_ms: ms(dw),
        });
    }
    let mut out: Vec<LockFrame> = rows
        .into_values()
        .map(|(mut f, n, w, m)| {
            f.contended = n;
            f.total_wait_ms = ms(w);
            f.max_wait_us = max_us(m, w, n);
            f.avg_wait_us = avg_us(w, n);
            f.waiters.sort_by(|a, b| {
                b.total_wait_ms
                    .total_cmp(&a.total_wait_ms)
                    .then(a.pid.cmp(&b.pid))
            });
            f
        })
        .collect();
    out.sort_by(|a, b| {
        b.total_wait_ms
            .total_cmp(&a.total_wait_ms)
            .then(b.contended.cmp(&a.contended))
            .then(a.caller.cmp(&b.caller))
            .then(a.lock.cmp(&b.lock))
    });
    out.truncate(MAX_ROWS);
    out
}
