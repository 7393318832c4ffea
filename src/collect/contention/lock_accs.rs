//! Each CPU's sums for the kernel-lock entry it counted last (bpf/contention_locks.h,
//! `lock_accs`), which reach the `locks` map only when that CPU counts another entry.
//! An entry's counts are the map's plus every CPU's sums for the same key.
//!
//! The order of the reads keeps each entry's sum from going down: the map first, then
//! the sums. A CPU that moves its sums into the map between the two reads leaves them
//! out of this read (they are in the next one) instead of counting them twice.

use std::collections::HashMap;

use libbpf_rs::MapCore;

use crate::collect::bpf::common::from_bytes;

use super::types::{ttop_lock_acc, ttop_lock_key, ttop_lock_stats};

/// Reads of the per-CPU copies before giving up on a whole one: a CPU changes its copy
/// for well under a microsecond, so a second read nearly always finds it whole.
const TRIES: usize = 1000;

/// Every CPU's sums, each copy whole (seq_begin == seq_end), empty ones left out.
pub fn read(map: &dyn MapCore) -> Vec<(ttop_lock_key, ttop_lock_stats)> {
    let mut last = Vec::new();
    for _ in 0..TRIES {
        let Ok(Some(per_cpu)) = map.lookup_percpu(&0u32.to_ne_bytes(), libbpf_rs::MapFlags::ANY)
        else {
            return Vec::new();
        };
        let accs: Vec<ttop_lock_acc> = per_cpu.iter().map(|b| from_bytes(b)).collect();
        let whole = accs.iter().all(|a| a.seq_begin == a.seq_end);
        last = accs
            .into_iter()
            .filter(|a| a.key.lock != 0)
            .map(|a| (a.key, a.s))
            .collect();
        if whole {
            break;
        }
    }
    last
}

/// What tells two entries apart: the key's fields, without its padding.
pub fn id(k: &ttop_lock_key) -> (u64, i64, u32, u32, u32) {
    (k.lock, i64::from(k.kstack), k.tgid, k.flags, k.is_mmap)
}

/// Add `accs` to the entries with their key, or as entries of their own: one pass over
/// the entries (a machine with many CPUs has one copy each, and a full map 16k entries).
pub fn merge(
    entries: &mut Vec<(ttop_lock_key, ttop_lock_stats)>,
    accs: Vec<(ttop_lock_key, ttop_lock_stats)>,
    max_of: impl Fn(u64, u64) -> u64,
) {
    let mut by_key: HashMap<_, Vec<ttop_lock_stats>> = HashMap::new();
    let mut order = Vec::new();
    for (k, s) in accs {
        let v = by_key.entry(id(&k)).or_default();
        if v.is_empty() {
            order.push(k);
        }
        v.push(s);
    }
    if by_key.is_empty() {
        return;
    }
    let add = |e: &mut ttop_lock_stats, s: &ttop_lock_stats| {
        e.contended += s.contended;
        e.wait_ns += s.wait_ns;
        // Both maxima are this tick's or zero once max_of has seen them.
        if max_of(s.max_wait_ns, s.max_gen) > max_of(e.max_wait_ns, e.max_gen) {
            e.max_wait_ns = s.max_wait_ns;
            e.max_gen = s.max_gen;
        }
        if s.last_ns > e.last_ns {
            e.last_ns = s.last_ns;
            e.last_tid = s.last_tid;
        }
    };
    for (k, e) in entries.iter_mut() {
        if let Some(v) = by_key.remove(&id(k)) {
            v.iter().for_each(|s| add(e, s));
        }
    }
    // Sums whose key has no entry yet: one entry per key, in the CPUs' order.
    for k in order {
        if let Some(v) = by_key.remove(&id(&k)) {
            let mut it = v.into_iter();
            let mut e = it.next().expect("a key has its sums");
            it.for_each(|s| add(&mut e, &s));
            entries.push((k, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(lock: u64, tgid: u32) -> ttop_lock_key {
        ttop_lock_key {
            lock,
            tgid,
            ..Default::default()
        }
    }

    fn stats(contended: u64, wait_ns: u64, max: u64, gen_: u64, last: u64) -> ttop_lock_stats {
        ttop_lock_stats {
            contended,
            wait_ns,
            max_wait_ns: max,
            max_gen: gen_,
            last_ns: last,
            ..Default::default()
        }
    }

    /// This tick is generation 5: maxima of other generations were read before.
    fn max_of(v: u64, g: u64) -> u64 {
        if g == 5 { v } else { 0 }
    }

    #[test]
    fn sums_join_their_entry_or_stand_alone() {
        let mut entries = vec![(key(1, 10), stats(100, 1000, 40, 5, 7))];
        let accs = vec![
            // Two CPUs on the same entry, one with a larger maximum this tick.
            (key(1, 10), stats(5, 50, 90, 5, 9)),
            (key(1, 10), stats(3, 30, 20, 5, 8)),
            // Another process on the same lock: an entry of its own.
            (key(1, 11), stats(2, 20, 10, 5, 9)),
        ];
        merge(&mut entries, accs, max_of);
        assert_eq!(entries.len(), 2);
        let (_, a) = &entries[0];
        assert_eq!((a.contended, a.wait_ns), (108, 1080));
        assert_eq!(max_of(a.max_wait_ns, a.max_gen), 90);
        assert_eq!(a.last_ns, 9);
        assert_eq!(entries[1].0.tgid, 11);
        assert_eq!(entries[1].1.contended, 2);
    }

    #[test]
    fn two_cpus_on_a_key_with_no_entry_make_one() {
        let mut entries = vec![(key(1, 10), stats(1, 10, 40, 5, 7))];
        let accs = vec![
            (key(2, 10), stats(5, 50, 90, 5, 9)),
            (key(2, 10), stats(3, 30, 95, 5, 8)),
        ];
        merge(&mut entries, accs, max_of);
        assert_eq!(entries.len(), 2);
        let (k, a) = &entries[1];
        assert_eq!((k.lock, a.contended, a.wait_ns), (2, 8, 80));
        assert_eq!((max_of(a.max_wait_ns, a.max_gen), a.last_ns), (95, 9));
    }

    #[test]
    fn a_maximum_of_an_earlier_tick_does_not_count() {
        let mut entries = vec![(key(1, 10), stats(1, 10, 40, 5, 7))];
        merge(
            &mut entries,
            vec![(key(1, 10), stats(1, 10, 900, 4, 3))],
            max_of,
        );
        assert_eq!(max_of(entries[0].1.max_wait_ns, entries[0].1.max_gen), 40);
        assert_eq!(entries[0].1.last_ns, 7);
    }
}
