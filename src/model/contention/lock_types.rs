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

/// The interval's contentions by lock type, each kernel entry diffed against the same
/// entry of `prev` (as the `locks` rows are), sorted by type.
pub fn lock_types(prev: Option<&ContentionSample>, cur: &ContentionSample) -> Vec<LockTypeTotal> {
    type Key = (u64, String, u32, u32, bool);
    let key = |l: &LockSample| -> Key { (l.lock, l.caller.clone(), l.tgid, l.flags, l.is_mmap) };
    let mut before: HashMap<Key, (u64, u64)> = HashMap::new();
    for l in prev.map(|p| p.locks.as_slice()).unwrap_or_default() {
        let e = before.entry(key(l)).or_default();
        e.0 += l.contended;
        e.1 += l.wait_ns;
    }
    let mut now: HashMap<Key, (u64, u64)> = HashMap::new();
    for l in &cur.locks {
        let e = now.entry(key(l)).or_default();
        e.0 += l.contended;
        e.1 += l.wait_ns;
    }
    let mut by_type: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (k, (c, w)) in now {
        let (pc, pw) = before.get(&k).copied().unwrap_or_default();
        let dc = delta(pc, c);
        if dc == 0 {
            continue;
        }
        let e = by_type.entry(lock_type(k.3)).or_default();
        e.0 += dc;
        e.1 += delta(pw, w);
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
