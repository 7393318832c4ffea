//! Kernel-lock contention of one interval summed by lock type, over every lock the
//! Sample holds: the `locks` table is cut to its MAX_ROWS worst rows for the screen, so
//! counters (`ttop serve`'s `_total` families) must not be summed from it.

use std::collections::{BTreeMap, HashMap};

use crate::model::contention::{ContentionSample, LockSample};
use crate::model::rates::delta;

/// One lock type's contentions and wait in the interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockTypeTotal {
    /// As `LockFrame::kind`: spinlock, mutex, rwsem:R, ...
    pub kind: String,
    pub contended: u64,
    pub wait_ns: u64,
}

/// (lock, caller, tgid, flags, is_mmap, stack id): a kernel entry. Recordings made
/// before the stack id was kept have None, and the caller stands for it there.
pub type LockKey = (u64, String, u32, u32, bool, Option<i64>);

/// One kernel entry's part of the interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryDelta {
    pub contended: u64,
    pub wait_ns: u64,
    /// The entry's longest wait of this interval (the Sample's is per tick already).
    pub max_wait_ns: u64,
    /// The comm of its first waiter.
    pub comm: String,
}

/// Each kernel entry of `cur` with contentions in the interval, against the same entry of
/// `prev`: what the `locks` rows and the totals by type are both built from.
pub fn entry_deltas(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
) -> Vec<(LockKey, EntryDelta)> {
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
    let mut before: HashMap<LockKey, (u64, u64)> = HashMap::new();
    for l in prev.map(|p| p.locks.as_slice()).unwrap_or_default() {
        let e = before.entry(by_id(key(l))).or_default();
        e.0 += l.contended;
        e.1 += l.wait_ns;
    }
    let mut now: HashMap<LockKey, EntryDelta> = HashMap::new();
    for l in &cur.locks {
        let e = now.entry(key(l)).or_default();
        e.contended += l.contended;
        e.wait_ns += l.wait_ns;
        e.max_wait_ns = e.max_wait_ns.max(l.max_wait_ns);
        if e.comm.is_empty() {
            e.comm = l.comm.clone();
        }
    }
    now.into_iter()
        .filter_map(|(k, mut d)| {
            let (pc, pw) = before.get(&by_id(k.clone())).copied().unwrap_or_default();
            d.contended = delta(pc, d.contended);
            d.wait_ns = delta(pw, d.wait_ns);
            (d.contended > 0).then_some((k, d))
        })
        .collect()
}

/// The interval's contentions by lock type, from the kernel entries' deltas (the same
/// ones the `locks` rows are built from), sorted by type.
pub fn lock_types(deltas: &[(LockKey, EntryDelta)]) -> Vec<LockTypeTotal> {
    let mut by_type: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (k, d) in deltas {
        let e = by_type.entry(lock_type(k.3)).or_default();
        e.0 += d.contended;
        e.1 += d.wait_ns;
    }
    by_type
        .into_iter()
        .map(|(kind, (contended, wait_ns))| LockTypeTotal {
            kind,
            contended,
            wait_ns,
        })
        .collect()
}

/// perf lock's names for the lock:contention_begin flags.
pub fn lock_type(flags: u32) -> String {
    const SPIN: u32 = 1;
    const READ: u32 = 2;
    const WRITE: u32 = 4;
    const RT: u32 = 8;
    const PERCPU: u32 = 16;
    const MUTEX: u32 = 32;
    let s = match flags & 0x3f {
        0 => "semaphore",
        SPIN => "spinlock",
        f if f == SPIN | READ => "rwlock:R",
        f if f == SPIN | WRITE => "rwlock:W",
        READ => "rwsem:R",
        WRITE => "rwsem:W",
        RT => "rtmutex",
        f if f == RT | READ => "rwlock-rt:R",
        f if f == RT | WRITE => "rwlock-rt:W",
        f if f == PERCPU | READ => "pcpu-sem:R",
        f if f == PERCPU | WRITE => "pcpu-sem:W",
        MUTEX => "mutex",
        f if f == MUTEX | SPIN => "mutex:spin",
        f => return format!("flags:{f:#x}"),
    };
    s.to_string()
}
