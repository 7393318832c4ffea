//! The contention part of a Frame (futexes, kernel locks, mmap_lock) and its
//! derivation from two ContentionSamples. Pure, like `derive`.
//!
//! JSON keys here are a public contract (`ttop --json`): add, never rename.

use std::collections::HashMap;

use serde::Serialize;

use crate::model::contention::{
    ContentionDrops, ContentionSample, FutexProcSample, FutexSample, FutexThreadSample,
    KernelStacks, UserFrames,
};
use crate::model::join::KeyMap;
use crate::model::opt::Opt;
use crate::model::procs::proc_frame::ProcFrame;
use crate::model::rates::delta;
use crate::model::sample::ProcScan;

/// Rows kept per table (the screen shows fewer; JSON gets these).
pub const MAX_ROWS: usize = 64;

/// One futex word during the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FutexFrame {
    pub pid: u32,
    pub comm: String,
    /// The futex word's user address (the process's own pointer to it).
    pub uaddr: u64,
    /// "private" or "shared", with "+pi", "+waitv", "+futex2" when seen.
    pub kind: String,
    /// Every futex call on the word (null: not measured, only waits that slept were:
    /// see `contention_measured.futex_calls`).
    pub calls: Option<u64>,
    /// Wait calls that blocked (woken, timed out or interrupted after sleeping).
    pub contended: u64,
    /// Threads that blocked on the word in the last sampling interval: a lock has
    /// many, a pthread_join or a one-consumer condition variable has one (null: not
    /// measured, a recording made before it was).
    pub waiters: Option<u32>,
    /// Wait calls that returned EAGAIN at once (the word had already changed; null:
    /// not measured).
    pub eagain: Option<u64>,
    /// Wake calls (null: not measured), and the threads they woke (counted either way:
    /// from the wake calls, or as sleepers a futex wake woke).
    pub wakes: Option<u64>,
    pub woken: u64,
    /// Who woke its waits this interval (the process of the thread whose futex wake
    /// ended them): the latest other process to wake one, if any did, else its own pid
    /// when only its own threads did. null: no wait on it was woken by a futex wake this
    /// interval (timeouts, signals, thread exits), or not measured (see
    /// `contention_measured.futex_wakers`).
    pub waker_pid: Option<u32>,
    /// The waker's name ("" when it exited unseen; null with `waker_pid`).
    pub waker_comm: Option<String>,
    /// Of `woken`, the waits threads of other processes woke (the rest, their own
    /// process's threads; null: not measured).
    pub woken_by_other_procs: Option<u64>,
    pub total_wait_ms: f64,
    pub max_wait_us: f64,
    pub avg_wait_us: f64,
    /// Waiter's first frame outside libc's lock code ("" when not symbolised).
    pub caller: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Futex activity of one thread during the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FutexThreadFrame {
    pub tid: u32,
    pub pid: u32,
    /// null: not measured (as in FutexFrame).
    pub calls: Option<u64>,
    pub contended: u64,
    pub eagain: Option<u64>,
    pub wakes: Option<u64>,
    pub total_wait_ms: f64,
    pub max_wait_us: f64,
    pub avg_wait_us: f64,
}

/// A process that waited for a kernel lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LockWaiterFrame {
    pub pid: u32,
    pub comm: String,
    pub contended: u64,
    pub total_wait_ms: f64,
}

/// One kernel lock reached from one caller, during the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LockFrame {
    /// spinlock, rwlock:R/W, rwsem:R/W, mutex, mutex:spin, rtmutex, pcpu-sem:R/W, semaphore.
    #[serde(rename = "type")]
    pub kind: String,
    /// First kernel function outside the locking code, "function+0xoff".
    pub caller: String,
    /// The lock's kernel address, hex (a JSON number would lose its low bits).
    pub lock: String,
    /// The lock is some process's mm->mmap_lock.
    pub mmap_lock: bool,
    pub contended: u64,
    pub total_wait_ms: f64,
    pub max_wait_us: f64,
    pub avg_wait_us: f64,
    /// The processes that waited, most waiting first.
    pub waiters: Vec<LockWaiterFrame>,
}

/// The kernel-lock rows cut from `locks` (beyond its MAX_ROWS with the most wait),
/// summed by type, caller and mmap_lock: thread churn gives every page-table lock a row
/// of its own, and the table would otherwise leave those waits out of the Frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LockRestFrame {
    #[serde(rename = "type")]
    pub kind: String,
    pub caller: String,
    pub mmap_lock: bool,
    /// How many `locks` rows (lock addresses) this one sums.
    pub locks: u64,
    pub contended: u64,
    pub total_wait_ms: f64,
    pub max_wait_us: f64,
    pub avg_wait_us: f64,
    /// The processes that waited, most waiting first.
    pub waiters: Vec<LockWaiterFrame>,
}

/// "pid R (holder) held pid V's (victim's) mmap_lock hold_ms; `waiters` threads of
/// waiter_pid waited total_wait_ms", for the interval. The waiting process is usually
/// the victim itself; another process reading the victim's memory (/proc/V/environ,
/// cmdline, process_vm_readv) gets its own row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MmapLockFrame {
    pub victim_pid: u32,
    pub victim_comm: String,
    /// The process whose hold overlapped the waits most; 0 when no hold was seen.
    pub holder_pid: u32,
    pub holder_comm: String,
    /// Time the holder held the victim's lock while somebody waited for it (the same on
    /// every row of this victim and holder).
    pub hold_ms: f64,
    /// The process the waiting threads belong to.
    pub waiter_pid: u32,
    /// Distinct threads that waited.
    pub waiters: u32,
    /// Contended acquisitions.
    pub waits: u64,
    pub total_wait_ms: f64,
    pub max_wait_us: f64,
    /// Where in user code the holder held the lock, and where its waiters waited (the
    /// stack of the thread with the most waits this interval): CALLER and frames,
    /// innermost first, as for futex waiters. Empty when no stack was kept.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub holder_caller: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub holder_stack: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub waiter_caller: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiter_stack: Vec<String>,
}

/// Contention events lost during the interval, by map (the Sample's counters, diffed).
pub type ContentionDropsFrame = ContentionDrops;

/// The contention part of a Frame (flattened into it: the keys are top level).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ContentionFrame {
    /// Futex words by contended waits, then total wait.
    pub futexes: Vec<FutexFrame>,
    /// Threads by futex calls.
    pub futex_threads: Vec<FutexThreadFrame>,
    /// Kernel locks by total wait, the MAX_ROWS with the most.
    pub locks: Vec<LockFrame>,
    /// The rest of the kernel-lock rows, summed by caller.
    pub locks_rest: Vec<LockRestFrame>,
    /// mmap_lock (victim, holder) pairs by total wait.
    pub mmap_lock: Vec<MmapLockFrame>,
    /// Contention events lost this interval, by map.
    pub contention_drops: ContentionDropsFrame,
    /// Kernel-lock stacks taken this interval: walked, cached, wrong.
    pub kernel_stacks: KernelStacks,
    /// User stack frames named this interval, and why the others were not.
    pub user_frames: UserFrames,
    /// The stack maps after this interval: ids held, of how many, and ids freed in the
    /// interval (no live entry referred to them). Empty without the contention probes.
    pub stack_maps: Vec<crate::model::contention::StackMapFill>,
    /// Which of the tables above were measured: false means the probes were off
    /// (--no-futex, a kernel without them, or no eBPF), so an empty table says nothing.
    pub contention_measured: ContentionMeasured,
    /// Every lock's contention summed by type (not cut to MAX_ROWS): what counters add.
    #[serde(skip)]
    pub lock_types: Vec<super::lock_types::LockTypeTotal>,
    /// Futex waits that slept in the interval by duration (the Sample's log2 slots) and
    /// their total ns: what the metrics' histogram adds. Empty where not measured.
    #[serde(skip)]
    pub futex_wait_hist: Vec<u64>,
    #[serde(skip)]
    pub futex_wait_hist_ns: u64,
}

/// Which contention probe groups ran this interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ContentionMeasured {
    /// `futexes`, `futex_threads`, `procs[].futex_slept` / `futex_wait_ms`.
    pub futex: bool,
    /// Every futex call was hooked for the whole interval: `calls`, `eagain`, `wakes`
    /// and `procs[].futex_calls` are measured (--futex-calls, -p, --comm, or the
    /// dashboard's futex view open). false with `futex` true: only waits that slept,
    /// from the scheduler; those are null.
    pub futex_calls: bool,
    /// Who woke the futex waits (`futexes[].waker_pid`, `waker_comm`,
    /// `woken_by_other_procs`) was measured for the whole interval: only by the
    /// scheduler programs, so false with `futex_calls` (the per-call hooks count wakes
    /// from the waker's side and do not link a wake to the wait it ended).
    pub futex_wakers: bool,
    /// `locks`.
    pub locks: bool,
    /// `mmap_lock`.
    pub mmap_lock: bool,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn avg_us(ns: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        ns as f64 / n as f64 / 1e3
    }
}

/// The interval max, never below the average (a max from a racing generation bump
/// may be missing).
fn max_us(max_ns: u64, total_ns: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        us(max_ns).max(avg_us(total_ns, n))
    }
}

/// "private"/"shared" plus the variants seen (TTOP_FUTEX_* bits).
pub fn futex_kind(flags: u32) -> String {
    let mut s = String::from(if flags & 1 != 0 { "shared" } else { "private" });
    for (bit, name) in [(2, "+pi"), (4, "+waitv"), (16, "+futex2")] {
        if flags & bit != 0 {
            s.push_str(name);
        }
    }
    s
}

fn index<K: std::hash::Hash + Eq, T>(rows: Option<&[T]>, key: impl Fn(&T) -> K) -> HashMap<K, &T> {
    rows.map(|r| r.iter().map(|x| (key(x), x)).collect())
        .unwrap_or_default()
}

fn drops(prev: Option<&ContentionSample>, cur: &ContentionSample) -> ContentionDropsFrame {
    let p = prev.map(|p| p.drops.clone()).unwrap_or_default();
    let c: &ContentionDrops = &cur.drops;
    ContentionDropsFrame {
        futexes: delta(p.futexes, c.futexes),
        futex_threads: delta(p.futex_threads, c.futex_threads),
        futex_procs: delta(p.futex_procs, c.futex_procs),
        locks: delta(p.locks, c.locks),
        mmap: delta(p.mmap, c.mmap),
        stacks: delta(p.stacks, c.stacks),
        lock_nest: delta(p.lock_nest, c.lock_nest),
    }
}

fn kernel_stacks(prev: Option<&ContentionSample>, cur: &ContentionSample) -> KernelStacks {
    let p = prev.map(|p| p.kernel_stacks.clone()).unwrap_or_default();
    let c = &cur.kernel_stacks;
    KernelStacks {
        walked: delta(p.walked, c.walked),
        cached: delta(p.cached, c.cached),
        wrong: delta(p.wrong, c.wrong),
        spilled: delta(p.spilled, c.spilled),
        shed: delta(p.shed, c.shed),
        clocked_ns: delta(p.clocked_ns, c.clocked_ns),
    }
}

fn user_frames(prev: Option<&ContentionSample>, cur: &ContentionSample) -> UserFrames {
    let p = prev.map(|p| p.user_frames).unwrap_or_default();
    let c = &cur.user_frames;
    UserFrames {
        named: delta(p.named, c.named),
        no_mapping: delta(p.no_mapping, c.no_mapping),
        no_symbol: delta(p.no_symbol, c.no_symbol),
        unreadable: delta(p.unreadable, c.unreadable),
        stack_cut: delta(p.stack_cut, c.stack_cut),
        no_caller: delta(p.no_caller, c.no_caller),
        walks: delta(p.walks, c.walks),
        copies: delta(p.copies, c.copies),
        unwound: delta(p.unwound, c.unwound),
        kept_ns: delta(p.kept_ns, c.kept_ns),
        named_ns: delta(p.named_ns, c.named_ns),
        copies_held: c.copies_held,
        maps_reads: delta(p.maps_reads, c.maps_reads),
    }
}

/// The contention part of the Frame for the interval between `prev` and `cur`, and the
/// per-process futex columns filled into `procs`. With no previous sample, all empty.
pub fn derive_contention(
    prev: Option<&ContentionSample>,
    cur: Option<&ContentionSample>,
    has_prev: bool,
    scan: &[ProcScan],
    procs: &mut [ProcFrame],
) -> ContentionFrame {
    let Some(cur) = cur else {
        return ContentionFrame::default();
    };
    let measured = ContentionMeasured {
        futex: cur.futex_ok,
        futex_calls: cur.futex_ok && cur.futex_calls_ok,
        futex_wakers: cur.futex_ok && cur.futex_wakers_ok,
        locks: cur.locks_ok,
        mmap_lock: cur.mmap_ok,
    };
    if !has_prev {
        if cur.futex_ok {
            for p in procs.iter_mut() {
                if cur.futex_calls_ok {
                    p.futex_calls = Opt::some(0);
                }
                p.futex_slept = Opt::some(0);
                p.futex_wait_ms = Opt::some(0.0);
            }
        }
        return ContentionFrame {
            contention_measured: measured,
            ..Default::default()
        };
    }
    // A process is named as the scan saw it, or, gone at the scan (it exited during the
    // interval), as its row is: from the kernel at its exit or the previous scan.
    let comms = KeyMap::new(scan.iter().map(|p| (p.pid, &*p.comm)));
    let gone = KeyMap::new(
        procs
            .iter()
            .filter(|p| p.gone && !p.comm.is_empty())
            .map(|p| (p.pid, p.comm.to_string()))
            .collect::<Vec<_>>(),
    );
    let comm = |pid: u32| {
        comms
            .get(pid)
            .map(|s| s.to_string())
            .or_else(|| gone.get(pid).cloned())
            .unwrap_or_default()
    };
    let by_tgid = |v: &[FutexProcSample]| {
        KeyMap::new(
            v.iter()
                .map(|f| (f.tgid, (f.calls, f.wait_ns, f.contended))),
        )
    };
    let pp = prev.map_or_else(KeyMap::empty, |p| by_tgid(&p.futex_procs));
    let cp = by_tgid(&cur.futex_procs);
    // Without the futex probes the columns stay unmeasured, never zero.
    for row in procs.iter_mut().filter(|_| cur.futex_ok) {
        let c = cp.get(row.pid).copied().unwrap_or_default();
        let p = pp.get(row.pid).copied().unwrap_or_default();
        if cur.futex_calls_ok {
            row.futex_calls = Opt::some(delta(p.0, c.0));
        }
        row.futex_wait_ms = Opt::some(ms(delta(p.1, c.1)));
        row.futex_slept = Opt::some(delta(p.2, c.2));
    }
    // Each kernel entry's part of the interval, once: the rows and the totals by type.
    let deltas = super::lock_types::entry_deltas(prev, cur);
    let lock_types = super::lock_types::lock_types(&deltas);
    let (locks, locks_rest) = lock_rows(deltas, &comm);
    ContentionFrame {
        futexes: futex_rows(prev, cur, &comm),
        futex_threads: futex_thread_rows(prev, cur),
        locks,
        locks_rest,
        mmap_lock: mmap_rows(prev, cur, &comm),
        contention_drops: drops(prev, cur),
        kernel_stacks: kernel_stacks(prev, cur),
        user_frames: user_frames(prev, cur),
        stack_maps: stack_maps(prev, cur),
        contention_measured: measured,
        lock_types,
        futex_wait_hist: futex_wait_hist(prev, cur),
        futex_wait_hist_ns: prev.map_or(0, |p| delta(p.futex_wait_hist_ns, cur.futex_wait_hist_ns)),
    }
}

/// The interval's futex wait histogram: empty unless both samples have one.
fn futex_wait_hist(prev: Option<&ContentionSample>, cur: &ContentionSample) -> Vec<u64> {
    match prev {
        Some(p)
            if !p.futex_wait_hist.is_empty()
                && p.futex_wait_hist.len() == cur.futex_wait_hist.len() =>
        {
            p.futex_wait_hist
                .iter()
                .zip(&cur.futex_wait_hist)
                .map(|(a, b)| delta(*a, *b))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The stack maps' fill after the interval, and the ids freed in it.
fn stack_maps(
    prev: Option<&ContentionSample>,
    cur: &ContentionSample,
) -> Vec<crate::model::contention::StackMapFill> {
    let before = |m: &str| {
        prev.and_then(|p| p.stack_maps.iter().find(|f| f.map == m))
            .map_or(0, |f| f.freed)
    };
    cur.stack_maps
        .iter()
        .map(|f| crate::model::contention::StackMapFill {
            freed: delta(before(&f.map), f.freed),
            ..f.clone()
        })
        .collect()
}

#[path = "futex_rows.rs"]
mod futex_rows;
#[path = "lock_rows.rs"]
mod lock_rows;
#[path = "mmap.rs"]
mod mmap;
pub use futex_rows::SHARED_ROWS;
use futex_rows::{futex_rows, futex_thread_rows};
use lock_rows::lock_rows;
use mmap::mmap_rows;

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
