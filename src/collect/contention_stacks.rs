//! The futex waiter stacks of the contention collector: the words with the most
//! contended waits each tick get their waiter's stack named, unwound from the BPF side's
//! copy (DWARF) or walked by frame pointers, and cached; copies of gone processes are
//! deleted from the kernel map.

use libbpf_rs::{MapCore, MapFlags};

use super::skel::types;
use super::{ContentionCollector, TOP_STACKS};
use crate::collect::bpf_common::from_bytes;
use crate::collect::symbols::MAX_NEW_PER_TICK;
use crate::collect::unwind::{StackCopy, Stop};
use crate::model::contention::FutexSample;

/// The key of a word's stack copy: (tid 0, process, word) as `struct ttop_futex_key`.
fn copy_key(pid: u32, uaddr: u64) -> Vec<u8> {
    let k = types::ttop_futex_key {
        tid: 0,
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

impl ContentionCollector {
    /// The stack of futex word `uaddr` of `pid` unwound from its copy with the modules'
    /// unwind tables, when the BPF side kept one and the walk got past the first frame.
    fn dwarf_ips(&mut self, pid: u32, uaddr: u64, now: u64) -> Option<Vec<u64>> {
        if !cfg!(target_arch = "x86_64") || self.no_dwarf {
            return None;
        }
        let key = copy_key(pid, uaddr);
        let v = self
            .skel
            .maps
            .ustack_copies
            .lookup(&key, MapFlags::ANY)
            .ok()??;
        let c: types::ttop_ustack_copy = from_bytes(&v);
        if c.len == 0 || c.tgid != pid {
            return None;
        }
        let copy = StackCopy {
            ip: c.ip,
            sp: c.sp,
            bp: c.bp,
            bytes: &c.bytes[..(c.len as usize).min(c.bytes.len())],
        };
        let syms = &mut self.syms;
        let (ips, stop) = self
            .unwinder
            .unwind(pid, &copy, now, |a| syms.mapping(pid, a, now));
        if stop == Stop::StackCut {
            self.syms.frames.stack_cut += 1;
        }
        (ips.len() > 1).then_some(ips)
    }

    /// Name the waiter stacks of the futex words with the most contended waits this
    /// interval (and keep naming those already cached).
    pub(super) fn symbolise_top_futexes(
        &mut self,
        futexes: &mut [FutexSample],
        stacks: &[(usize, i32)],
        now: u64,
    ) {
        let mut ranked: Vec<(u64, usize, i32)> = stacks
            .iter()
            .map(|&(i, id)| {
                let f = &futexes[i];
                let prev = self
                    .prev_contended
                    .get(&(f.tgid, f.uaddr))
                    .copied()
                    .unwrap_or(0);
                (f.contended.saturating_sub(prev), i, id)
            })
            .filter(|r| r.0 > 0)
            .collect();
        ranked.sort_by_key(|r| std::cmp::Reverse(r.0));
        let mut new_budget = MAX_NEW_PER_TICK;
        for &(_, i, id) in ranked.iter().take(TOP_STACKS) {
            let pid = futexes[i].tgid;
            let uaddr = futexes[i].uaddr;
            // Unwound from its copy and named before.
            if let Some((caller, frames)) = self.dwarf_named.get(&(pid, uaddr)) {
                futexes[i].caller = caller.clone();
                futexes[i].stack = frames.clone();
                continue;
            }
            if new_budget > 0
                && let Some(ips) = self.dwarf_ips(pid, uaddr, now)
            {
                new_budget -= 1;
                let (caller, frames) = self.syms.name_user_ips(pid, &ips, now);
                futexes[i].caller = caller.clone();
                futexes[i].stack = frames.clone();
                self.dwarf_named.insert((pid, uaddr), (caller, frames));
                continue;
            }
            // Named before: neither the stack map nor /proc is read again.
            if let Some((caller, frames)) = self.syms.user_cached(pid, id) {
                futexes[i].caller = caller.to_string();
                futexes[i].stack = frames.to_vec();
                continue;
            }
            if new_budget == 0 {
                continue;
            }
            new_budget -= 1;
            let ips = stack_ips(&self.skel.maps.ustacks, id);
            if ips.is_empty() {
                continue;
            }
            let (caller, frames) = self.syms.user_stack(pid, id, &ips, now);
            futexes[i].caller = caller;
            futexes[i].stack = frames;
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
                for f in futexes.iter() {
                    if let Ok(j) = cached.binary_search(&f.tgid) {
                        live[j] = true;
                    }
                }
                self.syms
                    .retain_pids(|p| cached.binary_search(&p).is_ok_and(|j| live[j]));
            }
        }
        self.forget_dead_copies(futexes);
    }

    /// Stack copies and their names of processes with no futex word left (gone): the
    /// kernel entries are deleted so the map (TTOP_USTACK_COPIES) does not fill up.
    fn forget_dead_copies(&mut self, futexes: &[FutexSample]) {
        if self.dwarf_named.is_empty() && self.no_dwarf {
            return;
        }
        let live: foldhash::HashSet<u32> = futexes.iter().map(|f| f.tgid).collect();
        self.dwarf_named.retain(|(p, _), _| live.contains(p));
        let dead: Vec<Vec<u8>> = self
            .skel
            .maps
            .ustack_copies
            .keys()
            .filter(|k| {
                let key: types::ttop_futex_key = from_bytes(k);
                !live.contains(&key.tgid)
            })
            .collect();
        for k in dead {
            let _ = self.skel.maps.ustack_copies.delete(&k);
        }
    }
}
