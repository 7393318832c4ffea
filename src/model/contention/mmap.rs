//! The mmap_lock rows of the contention Frame: waits per (victim, holder, waiting
//! process) with how many threads waited, the holder's contended holds, and the user
//! stacks that stand for each group. Part of `contention_frame`.

use std::collections::{BTreeSet, HashMap};

use super::{MAX_ROWS, MmapLockFrame, index, max_us, ms};
use crate::model::contention::{ContentionSample, MmapSample};
use crate::model::rates::delta;

pub(super) fn mmap_rows(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
    comm: &dyn Fn(u32) -> String,
) -> Vec<MmapLockFrame> {
    let pm = index(prev.map(|p| p.mmap.as_slice()), |m: &MmapSample| {
        (m.victim, m.holder, m.waiter_tid)
    });
    let zero = MmapSample::default();
    #[derive(Default)]
    struct Acc<'a> {
        waits: u64,
        wait_ns: u64,
        max_ns: u64,
        /// Waiting threads: by tid in recordings with a row per thread, counted by the
        /// kernel (`threads`) in rows per process.
        tids: BTreeSet<u32>,
        threads: u64,
        /// The stack of the thread with the most waits, and those waits.
        stack: Option<(u64, &'a MmapSample)>,
    }
    #[derive(Default, Clone)]
    struct Hold<'a> {
        ns: u64,
        comm: String,
        stack: Option<(u64, &'a MmapSample)>,
    }
    // The row whose stack stands for a group: the one with the most events (kept only
    // when it has a stack).
    fn heavier<'a>(cur: &mut Option<(u64, &'a MmapSample)>, n: u64, c: &'a MmapSample) {
        if !c.stack.is_empty() && cur.is_none_or(|(m, _)| n > m) {
            *cur = Some((n, c));
        }
    }
    // Holds per (victim, holder); waits per (victim, holder, waiting process).
    let mut holds: HashMap<(u32, u32), Hold> = HashMap::new();
    let mut acc: HashMap<(u32, u32, u32), Acc> = HashMap::new();
    for c in &cur.mmap {
        let p = pm
            .get(&(c.victim, c.holder, c.waiter_tid))
            .copied()
            .unwrap_or(&zero);
        let waits = delta(p.waits, c.waits);
        let hold = delta(p.hold_ns, c.hold_ns);
        if waits == 0 && hold == 0 {
            continue;
        }
        if c.waiter_tid == 0 {
            let h = holds.entry((c.victim, c.holder)).or_default();
            h.ns += hold;
            h.comm = c.comm.clone();
            heavier(&mut h.stack, delta(p.holds, c.holds), c);
        } else if waits > 0 {
            let a = acc.entry((c.victim, c.holder, c.waiter_tgid)).or_default();
            a.waits += waits;
            a.wait_ns += delta(p.wait_ns, c.wait_ns);
            a.max_ns = a.max_ns.max(c.max_wait_ns);
            match c.threads {
                Some(t) => a.threads += delta(p.threads.unwrap_or(0), t),
                None => {
                    a.tids.insert(c.waiter_tid);
                }
            }
            heavier(&mut a.stack, waits, c);
        }
    }
    // A contended hold whose waiters are not in this interval still gets a row.
    for &(victim, holder) in holds.keys() {
        if !acc.keys().any(|k| k.0 == victim && k.1 == holder) {
            acc.insert((victim, holder, victim), Acc::default());
        }
    }
    let mut rows: Vec<MmapLockFrame> = acc
        .into_iter()
        .map(|((victim, holder, waiter), a)| {
            let h = holds.get(&(victim, holder)).cloned().unwrap_or_default();
            let (hold_ns, hcomm) = (h.ns, h.comm);
            let hc = comm(holder);
            let (holder_caller, holder_stack) = h
                .stack
                .map(|(_, c)| (c.caller.clone(), c.stack.clone()))
                .unwrap_or_default();
            let (waiter_caller, waiter_stack) = a
                .stack
                .map(|(_, c)| (c.caller.clone(), c.stack.clone()))
                .unwrap_or_default();
            MmapLockFrame {
                victim_pid: victim,
                victim_comm: comm(victim),
                holder_pid: holder,
                holder_comm: if hc.is_empty() { hcomm } else { hc },
                hold_ms: ms(hold_ns),
                waiter_pid: waiter,
                waiters: (a.tids.len() as u64 + a.threads).min(u64::from(u32::MAX)) as u32,
                waits: a.waits,
                total_wait_ms: ms(a.wait_ns),
                max_wait_us: max_us(a.max_ns, a.wait_ns, a.waits),
                holder_caller,
                holder_stack,
                waiter_caller,
                waiter_stack,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_wait_ms
            .total_cmp(&a.total_wait_ms)
            .then(b.hold_ms.total_cmp(&a.hold_ms))
            .then(a.victim_pid.cmp(&b.victim_pid))
            .then(a.holder_pid.cmp(&b.holder_pid))
            .then(a.waiter_pid.cmp(&b.waiter_pid))
    });
    rows.truncate(MAX_ROWS);
    rows
}
