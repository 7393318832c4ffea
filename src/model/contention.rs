//! What the contention collector (bpf/contention.bpf.c) read in one tick: futex words,
//! kernel locks and mmap_lock waits. Counters are cumulative, except the `max_wait_ns`
//! fields, which are the largest single wait since the previous sample (per interval).
//!
//! Only entries active recently (see `ContentionSample::window_ns`) are listed; an
//! entry missing from the previous sample started from zero (the collector deletes
//! idle entries from the kernel maps, so a returning one is recreated at zero).

use serde::{Deserialize, Serialize};

/// One futex word of one process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FutexSample {
    pub tgid: u32,
    pub uaddr: u64,
    /// Every futex call on the word.
    pub calls: u64,
    /// Wait-type calls (WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI, waitv).
    pub waits: u64,
    /// Wait calls that blocked (returned 0, ETIMEDOUT or EINTR).
    pub contended: u64,
    /// Wait calls that returned EAGAIN at once: the word had already changed.
    pub eagain: u64,
    /// Time inside contended wait calls.
    pub wait_ns: u64,
    /// Largest single contended wait since the previous sample.
    pub max_wait_ns: u64,
    /// Wake-type calls and the threads they woke.
    pub wakes: u64,
    pub woken: u64,
    /// TTOP_FUTEX_* bits (shared, PI, waitv, bitset, futex2).
    pub flags: u32,
    /// The waiter whose user stack was kept.
    pub last_tid: u32,
    /// First user frame outside libc's locking wrappers, "symbol+0xoff" (top words only).
    #[serde(default)]
    pub caller: String,
    /// Symbolised waiter stack, innermost first (filled for the top words only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Futex activity of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FutexThreadSample {
    pub tid: u32,
    pub tgid: u32,
    pub calls: u64,
    pub contended: u64,
    pub eagain: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub wakes: u64,
}

/// Futex activity of one process (all its threads, exited ones included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FutexProcSample {
    pub tgid: u32,
    pub calls: u64,
    pub waits: u64,
    pub contended: u64,
    pub eagain: u64,
    pub wait_ns: u64,
    pub wakes: u64,
}

/// Waits for one kernel lock, from one kernel call site, by one process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LockSample {
    pub lock: u64,
    pub tgid: u32,
    /// LCB_F_* flags of lock:contention_begin (spin, read, write, rt, percpu, mutex).
    pub flags: u32,
    /// The lock is an mm's mmap_lock.
    pub is_mmap: bool,
    pub contended: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub last_tid: u32,
    /// The last waiter's comm.
    pub comm: String,
    /// First kernel frame outside the locking code ("function+0xoff"), from /proc/kallsyms.
    pub caller: String,
    /// Kernel stack, innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// mmap_lock waits of one thread on one victim's lock while one holder process held it
/// (`waiter_tid` 0: the holder's own row, with the time it held the lock while others waited).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MmapSample {
    /// Process owning the mm (0: unknown).
    pub victim: u32,
    /// Process holding the lock when the wait began (0: unknown).
    pub holder: u32,
    pub holder_tid: u32,
    pub waiter_tid: u32,
    pub waiter_tgid: u32,
    pub waits: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub hold_ns: u64,
    pub holds: u64,
    /// The waiter's comm (holder row: the holder's).
    pub comm: String,
}

/// Contention events lost (cumulative), by map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionDrops {
    pub futexes: u64,
    pub futex_threads: u64,
    pub futex_procs: u64,
    pub locks: u64,
    pub mmap: u64,
    pub stacks: u64,
    pub lock_nest: u64,
}

impl ContentionDrops {
    pub fn total(&self) -> u64 {
        self.futexes
            + self.futex_threads
            + self.futex_procs
            + self.locks
            + self.mmap
            + self.stacks
            + self.lock_nest
    }
}

/// Everything the contention collector read in one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionSample {
    pub futexes: Vec<FutexSample>,
    pub futex_threads: Vec<FutexThreadSample>,
    pub futex_procs: Vec<FutexProcSample>,
    pub locks: Vec<LockSample>,
    pub mmap: Vec<MmapSample>,
    pub drops: ContentionDrops,
    /// Which probes run (false: this kernel lacks them; Mode.problems says why).
    pub futex_ok: bool,
    pub locks_ok: bool,
    pub mmap_ok: bool,
}
