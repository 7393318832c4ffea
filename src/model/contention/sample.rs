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
    /// Threads that blocked on the word since the previous sample (a lock has many;
    /// a join or a one-consumer condition variable has one). None in recordings made
    /// before it was measured.
    #[serde(default)]
    pub waiters: Option<u32>,
    /// Wake-type calls and the threads they woke.
    pub wakes: u64,
    pub woken: u64,
    /// Of the waits woken by a futex wake, those a thread of another process woke, and
    /// the latest such process (0: none yet). Measured only from the scheduler (not with
    /// every call hooked, where `woken` is the wake calls'); 0 in older recordings.
    #[serde(default)]
    pub woken_other: u64,
    #[serde(default)]
    pub waker_tgid: u32,
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
    /// First kernel frame outside the locking code ("function+0xoff"), from the kernel symbols.
    pub caller: String,
    /// Kernel stack, innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The kernel entry's stack id: with `lock`, `tgid`, `flags` and `is_mmap`, the key
    /// of the counters, so two reads are subtracted entry by entry (several stacks can
    /// share a caller). None in recordings made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kstack: Option<i64>,
}

/// mmap_lock waits on one victim's lock while one holder process held it, of one waiting
/// process (with `threads`) or, in recordings made before rows were per process, of one
/// thread (`waiter_tid` 0: the holder's own row, with the time it held the lock while
/// others waited).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MmapSample {
    /// Process owning the mm (0: unknown).
    pub victim: u32,
    /// Process holding the lock when the wait began (0: unknown).
    pub holder: u32,
    pub holder_tid: u32,
    /// The row's key beside victim and holder: the waiting process when `threads` is
    /// set, the waiting thread in older recordings; 0 for the holder's row.
    pub waiter_tid: u32,
    pub waiter_tgid: u32,
    pub waits: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub hold_ns: u64,
    pub holds: u64,
    /// Threads counted at their first wait in this row in each tick (cumulative): the
    /// rise over an interval is how many threads waited in it. None in recordings made
    /// when rows were per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    /// The waiter's comm (holder row: the holder's).
    pub comm: String,
    /// The user stack the thread waited from (holder row: held the lock from), named
    /// like a futex waiter's, and its CALLER; empty when none was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub caller: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Contention events lost (cumulative), by map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionDrops {
    pub futexes: u64,
    pub futex_threads: u64,
    pub futex_procs: u64,
    pub locks: u64,
    pub mmap: u64,
    /// Waits counted whose stack could not be stored (its stack map's hash bucket held
    /// another stack, or the map was full): shown under caller `?`. Only a name is
    /// lost, no count: not part of `events_lost`.
    pub stacks: u64,
    pub lock_nest: u64,
}

impl ContentionDrops {
    /// Events lost (their counts are missing from the figures): every drop but
    /// `stacks`.
    pub fn events_lost(&self) -> u64 {
        self.futexes
            + self.futex_threads
            + self.futex_procs
            + self.locks
            + self.mmap
            + self.lock_nest
    }
}

/// How kernel-lock stacks were taken (cumulative): `walked` by the kernel's unwinder,
/// `cached` from a per-CPU cache keyed by a fingerprint of the call path (see
/// bpf/lock_stacks.h), and `wrong`: re-walks that found a cached stack differed (the
/// fingerprint is then never trusted again), `spilled`: walks kept in the spill map. Zero
/// in recordings made before they existed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelStacks {
    pub walked: u64,
    pub cached: u64,
    pub wrong: u64,
    /// Walks whose stack was refused by its bucket in `kstacks` (another stack holds it)
    /// and kept in the spill map instead (named, not `?`).
    #[serde(default)]
    pub spilled: u64,
    /// Contentions the ceiling on ttop's own cost left without a stack (model/shed.rs):
    /// counted under the caller `NOT_SAMPLED`.
    #[serde(default)]
    pub shed: u64,
    /// What the stacks took (the key scan, the cache and the walks), ns, as the program
    /// clocks 1 contention in 16 (bpf/lock_stacks.h): what the ceiling judges them by.
    #[serde(default)]
    pub clocked_ns: u64,
}

/// User stack frames named so far (cumulative), and why the others were not: the
/// address is in no file mapping (JIT code, an anonymous executable region, or a
/// return address read from garbage), the file has no symbol for it (stripped, no
/// debug file), or the file could not be read (gone, unreadable, not ELF). `stack_cut`
/// counts unwinds that stopped because the next frame lay beyond the copied stack bytes,
/// `no_caller` the stacks whose CALLER is `?`.
/// Zero in recordings made before they existed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UserFrames {
    pub named: u64,
    pub no_mapping: u64,
    pub no_symbol: u64,
    pub unreadable: u64,
    pub stack_cut: u64,
    /// Stacks whose CALLER is `?`: every frame lock code, or unnamed in the C library.
    #[serde(default)]
    pub no_caller: u64,
    /// Futex waiter stacks kept by the BPF side: frame-pointer walks taken (an entry's
    /// first contended wait, then one in 64), the user-stack copies taken with them, and
    /// the new copies unwound in user space.
    #[serde(default)]
    pub walks: u64,
    #[serde(default)]
    pub copies: u64,
    #[serde(default)]
    pub unwound: u64,
    /// Time keeping them: the BPF side's walks and copies (`kept_ns`), and user space
    /// unwinding, naming and weighing the top words' stacks (`named_ns`).
    #[serde(default)]
    pub kept_ns: u64,
    #[serde(default)]
    pub named_ns: u64,
    /// Futex stack copies held in the kernel map after this read (one per contended word
    /// still live; bounded by TTOP_USTACK_COPIES, 512). A level, not a count.
    #[serde(default)]
    pub copies_held: u64,
    /// Whole /proc/PID/maps texts read to name user frames: only on kernels without
    /// PROCMAP_QUERY (before 6.11), at most once per process every 30 s and only for an
    /// address no mapping known yet holds. Each read takes the process's mmap_lock for
    /// reading (seed 002).
    #[serde(default)]
    pub maps_reads: u64,
}

/// One of the contention collector's stack maps (kernel stacks of lock waits, user
/// stacks of futex waits, of mmap_lock rows): the stack ids it held after the read, of
/// how many it can hold, and how many ids it has freed so far (cumulative: those no
/// live entry referred to for two reads; without that a long run fills the map and every
/// new stack is named `?`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackMapFill {
    /// "kstacks", "ustacks" or "mmap_ustacks".
    pub map: String,
    pub held: u64,
    pub capacity: u64,
    pub freed: u64,
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
    #[serde(default)]
    pub kernel_stacks: KernelStacks,
    #[serde(default)]
    pub user_frames: UserFrames,
    /// How full the stack maps are (empty in recordings made before it existed).
    #[serde(default)]
    pub stack_maps: Vec<StackMapFill>,
    /// Futex waits that slept, by duration since the probes loaded, summed over CPUs:
    /// slot k counts waits of 2^k to 2^(k+1) ns (FUTEX_HIST_SLOTS, the last one
    /// everything longer), and their total ns. Empty in recordings made before it.
    #[serde(default)]
    pub futex_wait_hist: Vec<u64>,
    #[serde(default)]
    pub futex_wait_hist_ns: u64,
    /// Which probes run (false: this kernel lacks them; Mode.problems says why).
    pub futex_ok: bool,
    /// Every futex call was hooked: calls, EAGAINs and wake calls were counted. false:
    /// only waits that slept, from the scheduler (the default). Recordings made before
    /// the scheduler-side accounting hooked every call.
    #[serde(default = "yes")]
    pub futex_calls_ok: bool,
    /// Who woke the futex waits (`FutexSample::woken_other`, `waker_tgid`) was measured
    /// for the whole interval: only from the scheduler programs. false in recordings
    /// made before it was.
    #[serde(default)]
    pub futex_wakers_ok: bool,
    pub locks_ok: bool,
    pub mmap_ok: bool,
}

/// Slots of the futex wait histogram (TTOP_FUTEX_HIST_SLOTS in bpf/ttop.h).
pub const FUTEX_HIST_SLOTS: usize = 40;

fn yes() -> bool {
    true
}
