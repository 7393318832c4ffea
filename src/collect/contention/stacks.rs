//! The user stacks of the contention collector: the futex words with the most contended
//! waits each tick get their most frequent waiter stack named, and every mmap_lock row
//! its waiter's (or contended holder's) stack, unwound from the BPF side's copies (DWARF)
//! or walked by frame pointers, and cached; copies of gone processes are deleted from
//! the kernel map.

use crate::collect::bpf::map_read;
use libbpf_rs::{MapCore, MapFlags};

use super::skel::types;
use super::{ContentionCollector, TOP_STACKS};
use crate::collect::bpf::common::from_bytes;
use crate::collect::stacks::symbols::MAX_NEW_PER_TICK;
use crate::collect::stacks::unwind::{StackCopy, Stop};
use crate::model::contention::{FutexSample, MmapSample};

/// The key of a stack copy as `struct ttop_futex_key`: (0, process, word) for a futex
/// word, (thread, process, role) for an mmap_lock row.
fn copy_key(pid: u32, uaddr: u64, id: i32) -> Vec<u8> {
    let k = types::ttop_futex_key {
        tid: id as u32,
        tgid: pid,
        uaddr,
    };
    // SAFETY: a plain #[repr(C)] struct generated from BTF, read as its bytes.
    unsafe {
        std::slice::from_raw_parts(
            (&k as *const types::ttop_futex_key).cast::<u8>(),
            std::mem::size_of::<types::ttop_futex_key>(),
        )
    }
    .to_vec()
}

/// Stack ids from this on name stacks in a stack map's spill map, less this (TTOP_STACKS
/// in bpf/ttop.h: no main stack map has more buckets, so their own ids are below). See
/// stackid_or_spill in bpf/contention_futex.h.
pub(super) const SPILL_BASE: u32 = 4096;

/// The map that holds stack `id` (the main map `main` or its spill map), and its key there.
pub(super) fn spill_map<'m>(
    main: &'m libbpf_rs::Map<'m>,
    spill: &'m libbpf_rs::Map<'m>,
    id: u32,
) -> (&'m libbpf_rs::Map<'m>, u32) {
    match id.checked_sub(SPILL_BASE) {
        Some(k) => (spill, k),
        None => (main, id),
    }
}

/// The frames of stack `id` of `main` or its spill map (empty: none, or freed).
pub(super) fn ips_or_spill(main: &libbpf_rs::Map, spill: &libbpf_rs::Map, id: i32) -> Vec<u64> {
    if id < 0 {
        return Vec::new();
    }
    let (map, key) = spill_map(main, spill, id as u32);
    stack_ips(map, key as i32)
}

/// A stack of the stack map, innermost first (empty: none).
pub(super) fn stack_ips(map: &libbpf_rs::Map, id: i32) -> Vec<u64> {
    if id < 0 {
        return Vec::new();
    }
    let Ok(Some(v)) = map.lookup(&(id as u32).to_ne_bytes(), MapFlags::ANY) else {
        return Vec::new();
    };
    v.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .take_while(|&ip| ip != 0)
        .collect()
}

/// The stacks unwound from the copies of one futex word (or mmap_lock thread and role),
/// each weighted by the contended waits of the intervals in which it was the word's
/// latest copy: the BPF side re-copies a waiter's stack with each frame-pointer walk it
/// keeps (an entry's first contended wait, then one in 64), so when two call sites end
/// their frame-pointer walks at one libc instruction (one stack id), the copies still
/// sample both and the heavier one is shown.
#[derive(Default)]
pub(super) struct DwarfStacks {
    /// Hash of the copy last unwound: an unchanged copy is no new sample.
    last_copy: u64,
    /// `stacks` index of the latest copy's stack (None: it did not unwind).
    latest: Option<usize>,
    stacks: Vec<DwarfStack>,
}

struct DwarfStack {
    ips: Vec<u64>,
    waits: u64,
    caller: String,
    frames: Vec<String>,
}

/// Distinct unwound stacks remembered per word; a new one replaces the
/// lightest, never the heaviest.
const DWARF_STACKS_PER_WORD: usize = 4;

impl DwarfStacks {
    /// The latest copy unwound to `ips` (named by `name` when new): that stack is the
    /// latest, or None when it cannot be kept (no naming budget left, or every slot is
    /// heavier and full).
    fn sample(
        &mut self,
        ips: Vec<u64>,
        name: impl FnOnce(&[u64]) -> Option<(String, Vec<String>)>,
    ) -> Option<usize> {
        if let Some(i) = self.stacks.iter().position(|s| s.ips == ips) {
            return Some(i);
        }
        let (caller, frames) = name(&ips)?;
        let new = DwarfStack {
            ips,
            waits: 0,
            caller,
            frames,
        };
        if self.stacks.len() < DWARF_STACKS_PER_WORD {
            self.stacks.push(new);
            return Some(self.stacks.len() - 1);
        }
        let heaviest = self.heaviest()?;
        let (i, _) = self
            .stacks
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != heaviest)
            .min_by_key(|(_, s)| s.waits)?;
        self.stacks[i] = new;
        Some(i)
    }

    fn heaviest(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, s) in self.stacks.iter().enumerate() {
            if best.is_none_or(|b| s.waits > self.stacks[b].waits) {
                best = Some(i);
            }
        }
        best
    }

    /// (caller, frames) of the stack with the most waits.
    fn top(&self) -> Option<(&str, &[String])> {
        self.heaviest().map(|i| {
            (
                self.stacks[i].caller.as_str(),
                self.stacks[i].frames.as_slice(),
            )
        })
    }
}

/// A futex word whose waiter stack could be named this tick.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Candidate {
    /// Contended waits this interval.
    waits: u64,
    /// Threads that slept on it this interval.
    waiters: u32,
    /// Index into the tick's futex words.
    index: usize,
    /// Its most frequent kept user stack (BPF stack id).
    id: i32,
}

/// The `n` words whose stacks are named this tick: words several threads slept on
/// before one-waiter words (a lock before a hundred pthread_join words), then by waits;
/// one word per distinct stack before a second word of a stack already chosen, so the
/// named rows show `n` places in the code, not one place `n` times.
fn words_to_name(mut ranked: Vec<Candidate>, n: usize) -> Vec<Candidate> {
    ranked.sort_by(|a, b| {
        (b.waiters >= 2)
            .cmp(&(a.waiters >= 2))
            .then(b.waits.cmp(&a.waits))
            .then(a.index.cmp(&b.index))
    });
    let mut chosen: Vec<Candidate> = Vec::with_capacity(n);
    let mut rest = Vec::new();
    for c in ranked {
        if chosen.len() == n {
            break;
        }
        if chosen.iter().any(|x| x.id == c.id) {
            rest.push(c);
        } else {
            chosen.push(c);
        }
    }
    let room = n - chosen.len();
    chosen.extend(rest.into_iter().take(room));
    chosen
}

impl ContentionCollector {
    /// The latest copy of stack `id` of futex word `uaddr` of `pid`, when the BPF side
    /// kept one: (hash of the copy, the stack unwound from it with the modules' unwind
    /// tables, or None when the walk did not get past the first frame).
    fn dwarf_copy(
        &mut self,
        pid: u32,
        uaddr: u64,
        id: i32,
        last_copy: u64,
        now: u64,
    ) -> Option<(u64, Option<Vec<u64>>)> {
        if !cfg!(target_arch = "x86_64") || self.no_dwarf {
            return None;
        }
        let key = copy_key(pid, uaddr, id);
        // mmap_lock rows keep their copies in a map of their own (bpf/contention_futex.h).
        let maps = &self.skel.maps;
        let copies = if self.syms.mm_rows {
            &maps.mmap_ustack_copies
        } else {
            &maps.ustack_copies
        };
        let v = copies.lookup(&key, MapFlags::ANY).ok()??;
        let c: types::ttop_ustack_copy = from_bytes(&v);
        if c.len == 0 || c.tgid != pid {
            return None;
        }
        let bytes = &c.bytes[..(c.len as usize).min(c.bytes.len())];
        let hash = {
            use std::hash::BuildHasher;
            foldhash::fast::FixedState::default().hash_one((c.ip, c.sp, c.bp, bytes))
        };
        if hash == last_copy {
            return Some((hash, None));
        }
        let copy = StackCopy {
            ip: c.ip,
            sp: c.sp,
            bp: c.bp,
            bytes,
        };
        self.syms.frames.unwound += 1;
        let syms = &mut self.syms;
        let (ips, stop) = self
            .unwinder
            .unwind(pid, &copy, now, |a| syms.mapping(pid, a, now));
        if stop == Stop::StackCut {
            self.syms.frames.stack_cut += 1;
        }
        Some((hash, (ips.len() > 1).then_some(ips)))
    }

    /// Give `waits` contended waits of word `uaddr` of `pid` (stack `id`) to the stack of
    /// its latest copy, unwinding the copy when it is new (`budget`: new stacks that may
    /// still be named this tick), and return the word's heaviest DWARF stack.
    fn dwarf_named(
        &mut self,
        pid: u32,
        uaddr: u64,
        id: i32,
        waits: u64,
        budget: &mut usize,
        now: u64,
    ) -> Option<(String, Vec<String>)> {
        let mut w = self
            .dwarf_words
            .remove(&(pid, uaddr, id))
            .unwrap_or_default();
        if let Some((hash, unwound)) = self.dwarf_copy(pid, uaddr, id, w.last_copy, now)
            && hash != w.last_copy
        {
            // A new stack that could not be named this tick (no budget left) is tried
            // again next tick: marked as seen, it stayed unnamed until the BPF side's
            // next copy (one in 64 waits), and the row showed the frame-pointer walk,
            // cut in libc (seen in the first frames of a watched mmap_lock stall).
            let mut refused = false;
            w.latest = unwound.and_then(|ips| {
                w.sample(ips, |ips| {
                    if *budget == 0 {
                        refused = true;
                        return None;
                    }
                    *budget -= 1;
                    Some(self.syms.name_user_ips(pid, ips, now))
                })
            });
            if !refused {
                w.last_copy = hash;
            }
        }
        if let Some(i) = w.latest {
            w.stacks[i].waits += waits;
        }
        let top = w.top().map(|(c, f)| (c.to_string(), f.to_vec()));
        if !w.stacks.is_empty() || w.last_copy != 0 {
            self.dwarf_words.insert((pid, uaddr, id), w);
        }
        top
    }

    /// The stack of one row of process `pid`: the heaviest stack unwound from the copies
    /// kept under (`copy_id`, `pid`, `uaddr`), else the frame-pointer walk `id`, named
    /// once and cached; None when neither is known yet (`budget`: new stacks that may
    /// still be named this tick). A futex word's copy is kept per word (`copy_id` 0), an
    /// mmap_lock row's per (thread, role): see bpf/contention_futex.h, contention_mmap.h.
    #[allow(clippy::too_many_arguments)]
    fn row_stack(
        &mut self,
        pid: u32,
        uaddr: u64,
        copy_id: i32,
        id: i32,
        waits: u64,
        budget: &mut usize,
        now: u64,
    ) -> Option<(String, Vec<String>)> {
        // Unwound from the BPF side's copies: the heaviest of the stacks sampled.
        if let Some(named) = self.dwarf_named(pid, uaddr, copy_id, waits, budget, now) {
            return Some(named);
        }
        // Named before: neither the stack map nor /proc is read again.
        if let Some((caller, frames)) = self.syms.user_cached(pid, id) {
            return Some((caller.to_string(), frames.to_vec()));
        }
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        let m = &self.skel.maps;
        let ips = if self.syms.mm_rows {
            ips_or_spill(&m.mmap_ustacks, &m.mmap_ustacks_spill, id)
        } else {
            ips_or_spill(&m.ustacks, &m.ustacks_spill, id)
        };
        if ips.is_empty() {
            return None;
        }
        let ips = self.syms.fp_trusted(pid, &ips, now).to_vec();
        Some(self.syms.user_stack(pid, id, &ips, now))
    }

    /// Name the user stacks of the mmap_lock rows: where the waiter waited, or where a
    /// holder held the lock while others waited. Rows are few (a stall, not a storm), so
    /// every row with a stack is named; each stack once, then from the caches.
    /// `ids`: each row's frame-pointer stack id and the thread whose copy it kept.
    pub(super) fn symbolise_mmap(&mut self, rows: &mut [MmapSample], ids: &[(i32, u32)], now: u64) {
        let prev = std::mem::take(&mut self.prev_mmap);
        let mut budget = MAX_NEW_PER_TICK;
        self.syms.mm_rows = true;
        self.mmap_pids.clear();
        self.mmap_tids.clear();
        for (r, &(id, tid)) in rows.iter_mut().zip(ids) {
            let key = (r.victim, r.holder, r.waiter_tid);
            let n = r.waits + r.holds;
            self.prev_mmap.insert(key, n);
            if tid == 0 {
                continue;
            }
            // The row's process: the waiter's, or on a holder row the holder's.
            let pid = r.waiter_tgid;
            self.mmap_pids.push(pid);
            let new = n.saturating_sub(prev.get(&key).copied().unwrap_or(0));
            let role = u64::from(r.waiter_tid == 0);
            self.mmap_tids.push(tid);
            if let Some((caller, frames)) =
                self.row_stack(pid, role, tid as i32, id, new, &mut budget, now)
            {
                r.caller = caller;
                r.stack = frames;
            }
        }
        self.syms.mm_rows = false;
        self.mmap_pids.sort_unstable();
        self.mmap_pids.dedup();
        self.mmap_tids.sort_unstable();
        self.mmap_tids.dedup();
    }

    /// Name the waiter stacks of the futex words with the most contended waits this
    /// interval (and keep naming those already cached).
    pub(super) fn symbolise_top_futexes(
        &mut self,
        futexes: &mut [FutexSample],
        stacks: &[(usize, i32)],
        now: u64,
    ) {
        let ranked: Vec<Candidate> = stacks
            .iter()
            .map(|&(i, id)| {
                let f = &futexes[i];
                let prev = self
                    .prev_contended
                    .get(&(f.tgid, f.uaddr))
                    .copied()
                    .unwrap_or(0);
                Candidate {
                    waits: f.contended.saturating_sub(prev),
                    waiters: f.waiters.unwrap_or(0),
                    index: i,
                    id,
                }
            })
            .filter(|r| r.waits > 0)
            .collect();
        let mut new_budget = MAX_NEW_PER_TICK;
        for Candidate {
            waits,
            index: i,
            id,
            ..
        } in words_to_name(ranked, TOP_STACKS)
        {
            let pid = futexes[i].tgid;
            let uaddr = futexes[i].uaddr;
            if let Some((caller, frames)) =
                self.row_stack(pid, uaddr, 0, id, waits, &mut new_budget, now)
            {
                futexes[i].caller = caller;
                futexes[i].stack = frames;
            }
        }
        self.syms.forget_files(now);
        // Reuse the table's allocation: it holds every futex word, every tick.
        self.prev_contended.clear();
        self.prev_contended
            .extend(futexes.iter().map(|f| ((f.tgid, f.uaddr), f.contended)));
        if self.prev_contended.len() < 4096 {
            // Only the few processes with something cached need a liveness check.
            let cached = self.syms.pids();
            if !cached.is_empty() {
                let mut live = vec![false; cached.len()];
                for p in futexes.iter().map(|f| &f.tgid).chain(&self.mmap_pids) {
                    if let Ok(j) = cached.binary_search(p) {
                        live[j] = true;
                    }
                }
                self.syms
                    .retain_pids(|p| cached.binary_search(&p).is_ok_and(|j| live[j]));
            }
        }
        self.forget_dead_copies(futexes);
    }

    /// Stack copies and their names of futex words with no entry left (idle past the
    /// read window, or their process gone) and of mmap_lock threads with no row left: the
    /// kernel entries are deleted so the maps (TTOP_USTACK_COPIES, and the mmap rows' own)
    /// hold only what is live. Counts the futex copies kept (`copies_held`).
    fn forget_dead_copies(&mut self, futexes: &[FutexSample]) {
        if self.dwarf_words.is_empty() && self.no_dwarf {
            return;
        }
        let words: foldhash::HashSet<(u32, u64)> =
            futexes.iter().map(|f| (f.tgid, f.uaddr)).collect();
        let live: foldhash::HashSet<u32> = self.mmap_pids.iter().copied().collect();
        // A futex word's copy lives while the word has an entry; an mmap_lock row's
        // copies are per thread (uaddr 0 or 1): those of threads with no row left go too,
        // or a churning process's dead threads fill the map.
        let tids = &self.mmap_tids;
        let row_live = |pid: u32, uaddr: u64, id: i32| {
            if uaddr > 1 {
                words.contains(&(pid, uaddr))
            } else {
                live.contains(&pid) && tids.binary_search(&(id as u32)).is_ok()
            }
        };
        self.dwarf_words.retain(|&(p, u, id), _| row_live(p, u, id));
        let maps = &self.skel.maps;
        for (i, copies) in [&maps.ustack_copies, &maps.mmap_ustack_copies]
            .into_iter()
            .enumerate()
        {
            // Keys one by one (a batch read would copy every 8 KiB value too), the
            // dead ones deleted in one call.
            let (mut n, mut dead, mut dead_keys) = (0u64, 0u64, Vec::new());
            for k in copies.keys() {
                n += 1;
                let key: types::ttop_futex_key = from_bytes(&k);
                if !row_live(key.tgid, key.uaddr, key.tid as i32) {
                    dead += 1;
                    dead_keys.extend_from_slice(&k);
                }
            }
            map_read::delete_all(copies, &dead_keys);
            if i == 0 {
                self.syms.frames.copies_held = n.saturating_sub(dead);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(ips: &[u64]) -> Option<(String, Vec<String>)> {
        Some((format!("f{}", ips[0]), vec![format!("f{}", ips[0])]))
    }

    #[test]
    fn shared_words_and_new_stacks_are_named_first() {
        let c = |waits, waiters, index, id| Candidate {
            waits,
            waiters,
            index,
            id,
        };
        // Seed 000: join words (one waiter each, one stack) outweigh the stack-cache
        // lock (many waiters); a second stack of joins comes before more of the first.
        let ranked = vec![
            c(300, 1, 0, 7),
            c(290, 1, 1, 7),
            c(280, 1, 2, 7),
            c(100, 30, 3, 9),
            c(50, 1, 4, 8),
        ];
        let got: Vec<usize> = words_to_name(ranked.clone(), 3)
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(got, [3, 0, 4]);
        let all: Vec<usize> = words_to_name(ranked, 10).iter().map(|c| c.index).collect();
        assert_eq!(all, [3, 0, 4, 1, 2]);
        assert!(words_to_name(Vec::new(), 8).is_empty());
    }

    /// Each sample's stack gets the waits given while it is the latest; the heaviest is
    /// shown; a new stack past the bound replaces the lightest, never the heaviest.
    #[test]
    fn the_heaviest_sampled_stack_is_shown() {
        let mut d = DwarfStacks::default();
        d.latest = d.sample(vec![1, 9], named);
        d.stacks[d.latest.unwrap()].waits += 10;
        assert_eq!(d.top().unwrap().0, "f1");
        d.latest = d.sample(vec![2, 9], named);
        d.stacks[d.latest.unwrap()].waits += 30;
        assert_eq!(d.top().unwrap().0, "f2");
        // The same stack again is found, not named again.
        assert_eq!(d.sample(vec![1, 9], |_| None), Some(0));
        for ip in 3..=6 {
            let i = d.sample(vec![ip, 9], named).unwrap();
            d.stacks[i].waits += 1;
        }
        assert_eq!(d.stacks.len(), DWARF_STACKS_PER_WORD);
        assert_eq!(d.top().unwrap().0, "f2");
        // No naming budget: a new stack is not kept.
        assert_eq!(d.sample(vec![7, 9], |_| None), None);
    }
}

#[cfg(test)]
mod spill_tests {
    /// The spill ids' base is kstacks' bucket count, as bpf/ttop.h sets it.
    #[test]
    fn the_spill_base_is_ttop_stacks() {
        let h = include_str!("../../../bpf/ttop.h");
        assert!(h.contains(&format!("#define TTOP_STACKS {}\n", super::SPILL_BASE)));
    }
}
