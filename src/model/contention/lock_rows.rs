//! The kernel-lock rows of the contention Frame: per (lock, caller, process, type),
//! mmap_lock waits told apart. Part of `contention::frame`.

use super::*;
use crate::model::contention::lock_types::{EntryDelta, LockKey, lock_type};

/// A row being built and its (contended, wait_ns, max_wait_ns).
type LockAcc = (LockFrame, u64, u64, u64);

/// The rows from the interval's kernel entries (lock_types::entry_deltas).
pub(super) fn lock_rows(
    deltas: Vec<(LockKey, EntryDelta)>,
    comm: &dyn Fn(u32) -> String,
) -> (Vec<LockFrame>, Vec<LockRestFrame>) {
    // Group by (lock, caller, type): one row, with the processes that waited.
    let mut rows: HashMap<(u64, String, u32, bool), LockAcc> = HashMap::new();
    for (k, d) in deltas {
        let (dc, dw, max, wcomm) = (d.contended, d.wait_ns, d.max_wait_ns, d.comm);
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
    let mut accs: Vec<LockAcc> = rows.into_values().collect();
    accs.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then(b.1.cmp(&a.1))
            .then(a.0.caller.cmp(&b.0.caller))
            .then(a.0.lock.cmp(&b.0.lock))
    });
    let rest = accs.split_off(accs.len().min(MAX_ROWS));
    let out = accs
        .into_iter()
        .map(|(mut f, n, w, m)| {
            f.contended = n;
            f.total_wait_ms = ms(w);
            f.max_wait_us = max_us(m, w, n);
            f.avg_wait_us = avg_us(w, n);
            sort_waiters(&mut f.waiters);
            f
        })
        .collect();
    (out, fold_rest(rest))
}

fn sort_waiters(w: &mut [LockWaiterFrame]) {
    w.sort_by(|a, b| {
        b.total_wait_ms
            .total_cmp(&a.total_wait_ms)
            .then(a.pid.cmp(&b.pid))
    });
}

/// The rows cut from the table, summed by (type, caller, mmap_lock), most waiting first:
/// what the table leaves out stays in the Frame, so its rows and these add up to every
/// wait of the interval.
fn fold_rest(rest: Vec<LockAcc>) -> Vec<LockRestFrame> {
    type RestAcc = (LockRestFrame, u64, u64, u64, HashMap<u32, LockWaiterFrame>);
    let mut by: HashMap<(String, String, bool), RestAcc> = HashMap::new();
    for (f, n, w, m) in rest {
        let e = by
            .entry((f.kind.clone(), f.caller.clone(), f.mmap_lock))
            .or_insert_with(|| {
                let r = LockRestFrame {
                    kind: f.kind.clone(),
                    caller: f.caller.clone(),
                    mmap_lock: f.mmap_lock,
                    ..Default::default()
                };
                (r, 0, 0, 0, HashMap::new())
            });
        e.0.locks += 1;
        e.1 += n;
        e.2 += w;
        e.3 = e.3.max(m);
        for wt in f.waiters {
            let x = e.4.entry(wt.pid).or_insert_with(|| LockWaiterFrame {
                pid: wt.pid,
                comm: wt.comm.clone(),
                ..Default::default()
            });
            x.contended += wt.contended;
            x.total_wait_ms += wt.total_wait_ms;
        }
    }
    let mut out: Vec<(LockRestFrame, u64, u64)> = by
        .into_values()
        .map(|(mut r, n, w, m, waiters)| {
            r.contended = n;
            r.total_wait_ms = ms(w);
            r.max_wait_us = max_us(m, w, n);
            r.avg_wait_us = avg_us(w, n);
            r.waiters = waiters.into_values().collect();
            sort_waiters(&mut r.waiters);
            (r, w, n)
        })
        .collect();
    out.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(b.2.cmp(&a.2))
            .then(a.0.caller.cmp(&b.0.caller))
            .then(a.0.kind.cmp(&b.0.kind))
    });
    out.into_iter().map(|(r, _, _)| r).collect()
}
