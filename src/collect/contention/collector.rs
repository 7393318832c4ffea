//! The contention collector: loads bpf/contention.bpf.c, attaches each probe on its own
//! (futex: the futex syscalls' tracepoints, or raw_syscalls sys_enter/sys_exit without
//! tracefs; kernel locks: lock:contention_begin/end;
//! mmap_lock: mmap_lock:start_locking/acquire_returned/released) and reads the maps
//! once per tick. A kernel that lacks a group loses that group, with a reason in
//! `problems`, and the rest works.

use foldhash::HashMap;

use libbpf_rs::{Link, MapCore};

use crate::collect::bpf::common::{c_str, from_bytes};
use crate::collect::bpf::map_read;
use crate::collect::stacks::symbols::Symbolizer;
use crate::collect::stacks::unwind::DwarfUnwinder;
use crate::model::contention::{
    ContentionDrops, ContentionSample, FUTEX_HIST_SLOTS, KernelStacks, LockSample, MmapSample,
    StackMapFill,
};
use crate::model::features::Feature;
use crate::model::shed::{NOT_SAMPLED, PartClocks};

#[path = "futex_totals.rs"]
mod futex_totals;
#[path = "hooks.rs"]
mod hooks;
#[path = "load.rs"]
mod load;
#[path = "lock_accs.rs"]
mod lock_accs;
#[path = "stack_ids.rs"]
mod stack_ids;
#[path = "stacks.rs"]
mod stacks;
use futex_totals::{Counts, Entry, FutexTotals};
pub use hooks::FutexHooks;
use hooks::FutexLinks;
use stacks::{ips_or_spill, spill_map};

mod skel {
    include!(concat!(env!("OUT_DIR"), "/contention.skel.rs"));
}
use skel::{ContentionSkel, types};

/// Entries idle longer than this (or 3 intervals, if longer) are deleted from the maps.
const IDLE_NS: u64 = 10_000_000_000;
/// Futex words per tick whose waiter stack is symbolised.
const TOP_STACKS: usize = 8;
/// The stack id bpf/lock_stacks.h gives a contention the ceiling left without a stack
/// (TTOP_KSTACK_SHED).
const KSTACK_SHED: i32 = -4096;

pub struct ContentionCollector {
    skel: ContentionSkel<'static>,
    _links: Vec<Link>,
    /// The futex programs' links and which ones run.
    futex: FutexLinks,
    /// Probe groups that could not attach, with why.
    pub problems: Vec<String>,
    /// What they measure on this kernel, and through which hooks.
    pub features: Vec<Feature>,
    locks_ok: bool,
    mmap_ok: bool,
    syms: Symbolizer,
    /// Unwinds the copied user stacks from .eh_frame (see unwind.rs).
    unwinder: DwarfUnwinder,
    /// TTOP_NO_DWARF=1: frame pointers only (to compare; the tests use it).
    no_dwarf: bool,
    /// (process, word, stack id) -> the stacks unwound from its copies, weighted.
    dwarf_words: HashMap<(u32, u64, i32), stacks::DwarfStacks>,
    last_read_ns: u64,
    /// Cumulative contended count per futex word at the previous read (to pick the top).
    prev_contended: HashMap<(u32, u64), u64>,
    /// Cumulative waits + holds per mmap_lock row (victim, holder, waiter tid) at the
    /// previous read (to weigh its unwound stacks).
    prev_mmap: HashMap<(u32, u32, u32), u64>,
    /// Processes with an mmap_lock row this read: their cached stacks are kept; and the
    /// threads whose stack copies those rows use (sorted).
    mmap_pids: Vec<u32>,
    mmap_tids: Vec<u32>,
    /// Futex totals per word, thread and process, summed from the kernel's
    /// (thread, word) entries.
    futex_totals: FutexTotals,
    /// futexes, locks, mmap_waits (the TTOP_INS_* order).
    walks: [map_read::Tracked; 3],
    /// The stack maps' ids, to free those no entry uses: kstacks, ustacks, mmap_ustacks.
    stack_ids: [stack_ids::StackIds; 3],
    /// Reads so far (the stack maps' keys are listed every STACK_KEYS_EVERY reads).
    reads: u64,
    /// Lock entries read with a kernel stack id that no longer names a stack (the id
    /// was freed while a cached call site still held it): named "?" and counted with
    /// the stacks lost (`contention_drops.stacks`), once per entry and read.
    unnamed_kstacks: u64,
    /// Possible CPUs: the rows of bpf/lock_stacks.h's `kstack_stats` that are summed
    /// (all of them when unknown).
    pub(super) ncpus: usize,
}

/// bpf/lock_stacks.h: the counters in each CPU's row of `kstack_stats`, and the slot of
/// the clocked ns (KSTACK_NS).
const KSTACK_COUNTERS: usize = 6;
const KSTACK_NS: usize = 5;

/// Every this many reads the stack maps' keys are listed, so that ids stored by a
/// program whose entry was never read are freed too (a few thousand syscalls at most).
const STACK_KEYS_EVERY: u64 = 64;

impl Drop for ContentionCollector {
    /// Detaching a syscall tracepoint waits for kernel grace periods (~40 ms each on
    /// 6.18). The kernel serialises part of it, but dropping the ten futex links side by
    /// side still cut `ttop probe`'s exit from 0.94 to 0.61 s (raw_syscalls: 0.23 s).
    fn drop(&mut self) {
        let mut links = std::mem::take(&mut self._links);
        links.extend(self.futex.take_links());
        std::thread::scope(|s| {
            for l in links {
                s.spawn(move || drop(l));
            }
        });
    }
}

impl ContentionCollector {
    /// The knobs and counters shared with the scheduler object's switch program
    /// (.data.fshare, bpf/futex_shared.h).
    fn fshare(&mut self) -> &mut types::data_fshare {
        self.skel
            .maps
            .data_fshare_data
            .as_deref_mut()
            .expect(".data.fshare is mmapped")
    }

    /// The futex wait histogram summed over CPUs, and its total ns (empty if unread).
    fn futex_wait_hist(&self) -> (Vec<u64>, u64) {
        const _: () =
            assert!(std::mem::size_of::<types::ttop_futex_hist>() == (FUTEX_HIST_SLOTS + 2) * 8);
        let Ok(Some(per_cpu)) = self
            .skel
            .maps
            .futex_hist
            .lookup_percpu(&0u32.to_ne_bytes(), libbpf_rs::MapFlags::ANY)
        else {
            return (Vec::new(), 0);
        };
        // The slots, sum_ns, then the programs' scratch word (left out).
        let mut slots = vec![0u64; FUTEX_HIST_SLOTS + 2];
        for cpu in &per_cpu {
            for (acc, c) in slots.iter_mut().zip(cpu.chunks_exact(8)) {
                *acc += u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
            }
        }
        slots.pop();
        let ns = slots.pop().unwrap_or(0);
        (slots, ns)
    }

    fn bss(&mut self) -> &mut types::bss {
        self.skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect(".bss is mmapped")
    }

    /// Hook every futex call (`on`: the dashboard's futex view opened) or go back to
    /// counting the waits that slept (it closed). Only when loaded for it (the
    /// dashboard without --futex-calls, -p or --comm); a failure is a problems line and
    /// leaves the previous programs attached (Err: the problems line).
    pub fn set_futex_calls(&mut self, on: bool) -> Result<(), String> {
        // Nothing to do (not loaded for it, or already so): the marks below would make
        // the programs drop the waits in flight.
        if !self.futex.would_switch(on) {
            return Ok(());
        }
        // State older than this is from before the switch (see calls_since_ns).
        let now = crate::util::mono_ns();
        // SAFETY (both blocks): a live &mut into an mmapped section that BPF programs
        // read concurrently.
        if on {
            // The scheduler's switch program stops first: no wait is counted twice.
            self.set_sched_counts(false);
            let bss = self.bss();
            unsafe { std::ptr::write_volatile(&mut bss.calls_since_ns, now) };
        } else {
            let fshare = self.fshare();
            unsafe { std::ptr::write_volatile(&mut fshare.sleeps_since_ns, now) };
        }
        // The futex2 syscalls' problems were said at start.
        let r = self.futex.switch(&self.skel, on, &mut Vec::new());
        self.set_sched_counts(self.futex.sched_counts());
        r
    }

    /// Have the scheduler object's switch program count the futex waits that slept, or
    /// not (futex_sleeps_on, bpf/futex_shared.h).
    pub(super) fn set_sched_counts(&mut self, on: bool) {
        let fshare = self.fshare();
        // SAFETY: a live &mut into the mmapped .data.fshare that BPF programs read.
        unsafe { std::ptr::write_volatile(&mut fshare.futex_sleeps_on, u32::from(on)) };
    }

    /// bpf/lock_stacks.h's counters (walked, cached, wrong, spilled, shed, clocked ns),
    /// summed over the CPUs' rows.
    fn kstack_totals(&mut self) -> [u64; KSTACK_COUNTERS] {
        let cpus = self.ncpus;
        let bss = self.bss();
        let mut sum = [0u64; KSTACK_COUNTERS];
        for row in bss.kstack_stats.iter().take(cpus) {
            for (s, v) in sum.iter_mut().zip(row) {
                // SAFETY: a read of the mmapped .bss that BPF programs write.
                *s += unsafe { std::ptr::read_volatile(v) };
            }
        }
        sum
    }

    /// The ns the sheddable parts have taken since load, as the programs measured them
    /// (for the ceiling on ttop's own cost): the futex user stack walks and copies, and
    /// the kernel-lock stacks (sampled: bpf/lock_stacks.h `KSTACK_NS`).
    pub fn part_clocks(&mut self) -> PartClocks {
        let fshare = self.fshare();
        // SAFETY: a read of the mmapped .data.fshare that BPF programs write.
        let user_walk_ns = unsafe { std::ptr::read_volatile(&fshare.ustack_stats[2]) };
        let kernel_stacks_ns = self.kstack_totals()[KSTACK_NS];
        PartClocks {
            kernel_stacks_ns,
            user_walk_ns,
        }
    }

    /// Apply what the ceiling on ttop's own cost has shed (model/shed.rs) to the
    /// programs, through their .bss: read by them at each event, no reload.
    pub fn shed(&mut self, shed: &crate::model::shed::Shed) {
        let k = shed.bpf_kstack_shed();
        let u = u32::from(shed.user_stacks_off);
        let bss = self.bss();
        // SAFETY (both): a live &mut into an mmapped section that BPF programs read.
        unsafe {
            if bss.kstack_shed != k {
                std::ptr::write_volatile(&mut bss.kstack_shed, k);
            }
        }
        let fshare = self.fshare();
        unsafe {
            if fshare.ustacks_shed != u {
                std::ptr::write_volatile(&mut fshare.ustacks_shed, u);
            }
        }
    }

    /// Make the kernel lock stacks' cache check its ids again before it answers.
    fn bump_kstack_epoch(&mut self) {
        let bss = self.bss();
        // SAFETY: a live &mut into the mmapped .bss that BPF programs read concurrently.
        unsafe {
            std::ptr::write_volatile(&mut bss.kstack_epoch, bss.kstack_epoch.wrapping_add(1))
        };
    }

    /// Frees the stack ids no entry has referred to for two reads (`live`: the ids the
    /// entries kept at this read refer to, per map) and returns how full each map is.
    fn free_stack_ids(&mut self, live: &[foldhash::HashSet<u32>; 3]) -> Vec<StackMapFill> {
        self.reads += 1;
        let list = self.reads % STACK_KEYS_EVERY == 1;
        let mut fill = Vec::with_capacity(3);
        let mut kernel_freed = false;
        for (i, name) in ["kstacks", "ustacks", "mmap_ustacks"]
            .into_iter()
            .enumerate()
        {
            let maps = &self.skel.maps;
            let map = [&maps.kstacks, &maps.ustacks, &maps.mmap_ustacks][i];
            // Ids cover the map and, offset, its spill map.
            let spill = [
                &maps.kstacks_spill,
                &maps.ustacks_spill,
                &maps.mmap_ustacks_spill,
            ][i];
            let key_of = |k: Vec<u8>| Some(u32::from_ne_bytes(k.try_into().ok()?));
            let ids = &mut self.stack_ids[i];
            if list {
                ids.listed(map.keys().filter_map(key_of));
                let base = stacks::SPILL_BASE;
                ids.listed(spill.keys().filter_map(key_of).map(|k| k + base));
            }
            let free = ids.sweep(&live[i]);
            for &id in &free {
                let (m, key) = spill_map(map, spill, id);
                let _ = m.delete(&key.to_ne_bytes());
            }
            fill.push(StackMapFill {
                map: name.to_string(),
                held: ids.held(),
                capacity: u64::from(map.max_entries()) + u64::from(spill.max_entries()),
                freed: ids.freed,
            });
            match i {
                0 => {
                    self.syms.forget_kernel(&free);
                    kernel_freed = !free.is_empty();
                }
                1 => self.syms.forget_user(false, &free),
                _ => self.syms.forget_user(true, &free),
            }
        }
        // A cache entry that answered with a freed id between the read and the delete
        // must check it again.
        if kernel_freed {
            self.bump_kstack_epoch();
        }
        fill
    }

    /// Read every map once; `mono_ns` is the sample time (CLOCK_MONOTONIC, as the
    /// programs' bpf_ktime_get_ns). Idle entries are deleted after they were reported.
    pub fn read(&mut self, mono_ns: u64) -> ContentionSample {
        let gap = if self.last_read_ns == 0 {
            0
        } else {
            mono_ns.saturating_sub(self.last_read_ns)
        };
        self.last_read_ns = mono_ns;
        let window = IDLE_NS.max(gap.saturating_mul(3));
        let fresh = |last: u64| last.saturating_add(window) >= mono_ns;
        let tick_gen = self.fshare().contention_gen;
        let bss = self.bss();
        // SAFETY: as in load().
        unsafe { std::ptr::write_volatile(&mut bss.clock_ns, mono_ns) };
        let max_of = |v: u64, g: u64| if g == tick_gen { v } else { 0 };
        let mut out = ContentionSample {
            futex_ok: self.futex.mode != FutexHooks::Off,
            futex_calls_ok: self.futex.calls_measured(),
            futex_wakers_ok: self.futex.wakers_measured(),
            locks_ok: self.locks_ok,
            mmap_ok: self.mmap_ok,
            ..Default::default()
        };
        let mut ins = self.bss().inserts;
        // The futex entries' inserts are counted where the scheduler side counts them too.
        ins[0] = self.fshare().futex_inserts;
        // Kernel stack ids may be freed at this read: the lock stacks' cache checks its
        // ids again before it answers (see stack_ids.rs).
        if self.stack_ids[0].freeing_next() {
            self.bump_kstack_epoch();
        }
        // The stack ids the entries kept at this read refer to: kstacks, ustacks,
        // mmap_ustacks.
        let mut live: [foldhash::HashSet<u32>; 3] = Default::default();
        let [live_k, live_u, live_m] = &mut live;
        let maps = &self.skel.maps;
        let [w_futexes, w_locks, w_mmap] = &mut self.walks;

        // Keys to delete, packed end to end (one batch delete per map).
        let mut stale: Vec<u8> = Vec::new();
        // A (thread, word) entry idle for a whole interval (and at least a second) is
        // deleted: its counts are in the totals already, and exited threads' entries
        // must not fill the map.
        let kernel_idle = 1_000_000_000u64.max(gap.saturating_mul(2));
        let totals = &mut self.futex_totals;
        totals.begin_tick();
        w_futexes.for_each(&maps.futexes, Some(ins[0]), |k, v| {
            let key: types::ttop_futex_key = from_bytes(k);
            let s: types::ttop_futex_stats = from_bytes(v);
            totals.feed(&Entry {
                tid: key.tid,
                tgid: key.tgid,
                uaddr: key.uaddr,
                counts: Counts {
                    calls: s.calls,
                    waits: s.waits,
                    contended: s.contended,
                    eagain: s.eagain,
                    wait_ns: s.wait_ns,
                    wakes: s.wakes,
                    woken: s.woken,
                    woken_other: s.woken_other,
                },
                max_wait_ns: max_of(s.max_wait_ns, s.max_gen),
                last_ns: s.last_ns,
                ustack: s.ustack,
                flags: s.flags,
                waker_tgid: s.waker_tgid,
            });
            if s.last_ns.saturating_add(kernel_idle) < mono_ns {
                stale.extend_from_slice(k);
                totals.forget(key.tid, key.tgid, key.uaddr);
            } else if s.ustack >= 0 {
                live_u.insert(s.ustack as u32);
            }
        });
        map_read::delete_all(&maps.futexes, &stale);
        stale.clear();
        let t = totals.end_tick(mono_ns.saturating_sub(window));
        let futex_stacks = t.stacks;
        // The words' stacks are named from these ids (maybe in a later tick, from the
        // names cached by id): in use while the totals keep them.
        live_u.extend(totals.stack_ids().filter(|&id| id >= 0).map(|id| id as u32));
        out.futexes = t.futexes;
        out.futex_threads = t.threads;
        out.futex_procs = t.procs;

        // mmap_lock waits before kernel-lock waits: a sleeping mmap_lock wait ends its
        // kernel-lock wait (contention_end) before the mmap_lock operation returns, so
        // every mmap_lock wait this read counts has its kernel-lock wait in the read
        // after it. Read the other way round, a wait ending between the two reads was in
        // the mmap_lock view a tick before the kernel-lock view (the two differed by one
        // at the end of a CI run).
        let mut mmap_ids = Vec::new();
        w_mmap.for_each(&maps.mmap_waits, Some(ins[2]), |k, v| {
            let key: types::ttop_mmap_key = from_bytes(k);
            let s: types::ttop_mmap_stats = from_bytes(v);
            if !fresh(s.last_ns) {
                stale.extend_from_slice(k);
                return;
            }
            out.mmap.push(MmapSample {
                victim: key.victim,
                holder: key.holder,
                holder_tid: s.holder_tid,
                // One row per waiting process: the frame counts its threads from
                // `threads`, and `waiter_tid` keys the row (0: the holder's row).
                waiter_tid: key.waiter_tgid,
                waiter_tgid: s.waiter_tgid,
                threads: Some(s.threads),
                waits: s.waits,
                wait_ns: s.wait_ns,
                max_wait_ns: max_of(s.max_wait_ns, s.max_gen),
                hold_ns: s.hold_ns,
                holds: s.holds,
                comm: c_str(&s.comm.map(|c| c as u8)),
                ..Default::default()
            });
            mmap_ids.push((s.ustack, s.ustack_tid));
            if s.ustack >= 0 {
                live_m.insert(s.ustack as u32);
            }
        });
        map_read::delete_all(&maps.mmap_waits, &stale);
        stale.clear();

        // The entries, and each CPU's sums not yet in them (lock_accs.rs): an entry a
        // CPU still adds to stays however long ago it was last flushed, or the sum
        // would fall to that CPU's part and read as a counter reset.
        let held: std::collections::HashSet<_> = lock_accs::read(&maps.lock_accs)
            .iter()
            .map(|(k, _)| lock_accs::id(k))
            .collect();
        let mut entries = Vec::new();
        w_locks.for_each(&maps.locks, Some(ins[1]), |k, v| {
            let key: types::ttop_lock_key = from_bytes(k);
            let s: types::ttop_lock_stats = from_bytes(v);
            if !fresh(s.last_ns) && !held.contains(&lock_accs::id(&key)) {
                stale.extend_from_slice(k);
                return;
            }
            entries.push((key, s));
        });
        map_read::delete_all(&maps.locks, &stale);
        stale.clear();
        lock_accs::merge(&mut entries, lock_accs::read(&maps.lock_accs), max_of);
        for (key, s) in entries {
            if key.kstack >= 0 {
                live_k.insert(key.kstack as u32);
            }
            // A stack id names the same stack until it is freed (its name with it):
            // read and name it once.
            let caller = match self.syms.kernel_cached(key.kstack) {
                Some(c) => c.to_string(),
                None if key.kstack == KSTACK_SHED => NOT_SAMPLED.to_string(),
                None => {
                    let ips = ips_or_spill(&maps.kstacks, &maps.kstacks_spill, key.kstack);
                    if ips.is_empty() {
                        // A negative id the program counted itself; a freed one here.
                        if key.kstack >= 0 {
                            self.unnamed_kstacks += 1;
                        }
                        String::from("?")
                    } else {
                        self.syms.kernel_caller(key.kstack, &ips)
                    }
                }
            };
            out.locks.push(LockSample {
                lock: key.lock,
                tgid: key.tgid,
                flags: key.flags,
                is_mmap: key.is_mmap != 0,
                contended: s.contended,
                wait_ns: s.wait_ns,
                max_wait_ns: max_of(s.max_wait_ns, s.max_gen),
                last_tid: s.last_tid,
                comm: c_str(&s.comm.map(|c| c as u8)),
                caller,
                stack: Vec::new(),
                kstack: Some(key.kstack.into()),
            });
        }

        let t0 = std::time::Instant::now();
        self.symbolise_mmap(&mut out.mmap, &mmap_ids, mono_ns);
        self.symbolise_top_futexes(&mut out.futexes, &futex_stacks, mono_ns);
        self.syms.frames.named_ns += t0.elapsed().as_nanos() as u64;
        out.stack_maps = self.free_stack_ids(&live);
        out.user_frames = self.syms.frames;

        if out.futex_ok {
            (out.futex_wait_hist, out.futex_wait_hist_ns) = self.futex_wait_hist();
        }
        let unnamed_kstacks = self.unnamed_kstacks;
        let fshare = self.fshare();
        out.user_frames.walks = fshare.ustack_stats[0];
        out.user_frames.copies = fshare.ustack_stats[1];
        out.user_frames.kept_ns = fshare.ustack_stats[2];
        let d = fshare.cdrops;
        out.drops = ContentionDrops {
            futexes: d[0],
            futex_threads: d[1],
            futex_procs: d[2],
            locks: d[3],
            mmap: d[4],
            stacks: d[5] + unnamed_kstacks,
            lock_nest: d[6],
        };
        let k = self.kstack_totals();
        out.kernel_stacks = KernelStacks {
            walked: k[0],
            cached: k[1],
            wrong: k[2],
            spilled: k[3],
            shed: k[4],
            clocked_ns: k[KSTACK_NS],
        };
        let fshare = self.fshare();
        // SAFETY: as in load(); starts a new interval for the max trackers.
        unsafe { std::ptr::write_volatile(&mut fshare.contention_gen, tick_gen + 1) };
        out
    }
}
