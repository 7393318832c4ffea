//! Which ids of a BPF stack map may be freed. The kernel's stack maps hand out an id per
//! distinct stack (its hash bucket) and never let one go: without BPF_F_REUSE_STACKID a
//! stack whose bucket is taken is refused, so a long run (`ttop record --dir` for a
//! week) ends with every new call path refused and named `?`. (Reusing buckets instead
//! would rename the entries that still hold the old id.)
//!
//! So user space deletes the ids that no live entry of the maps that hold stack ids
//! refers to. An id freed while a BPF program is about to store it in a new entry would
//! leave that entry naming whatever stack later takes the bucket: an id is freed only
//! once two reads in a row found no entry referring to it (a program that took it
//! before the first of them has long stored its entry by the second), and the kernel
//! lock stacks' cache is told to check its ids again (`kstack_epoch`, see
//! bpf/lock_stacks.h). What is left is a program taking the id between the second read
//! and the delete (microseconds, for a stack no entry used for a whole interval and
//! more): that entry's stack is stored again by the next wait of that path, at the same
//! id.

use foldhash::HashSet;

#[derive(Default)]
pub struct StackIds {
    /// The ids the map holds, as far as user space knows: every id seen in an entry (or
    /// among the map's keys, when they are listed) and not freed since.
    known: HashSet<u32>,
    /// Ids no live entry referred to at the last read.
    doomed: HashSet<u32>,
    /// Ids freed so far.
    pub freed: u64,
}

impl StackIds {
    /// Ids freed at the previous sweep may still be in a BPF cache: true when the next
    /// sweep may free some (the caller makes the cache check its ids first).
    pub fn freeing_next(&self) -> bool {
        !self.doomed.is_empty()
    }

    /// The ids the live entries refer to at this read: returns the ids to delete from
    /// the map now (none of them was referred to at this read or the one before).
    pub fn sweep(&mut self, live: &HashSet<u32>) -> Vec<u32> {
        self.known.extend(live.iter().copied());
        let free: Vec<u32> = self
            .doomed
            .iter()
            .copied()
            .filter(|id| !live.contains(id))
            .collect();
        for id in &free {
            self.known.remove(id);
        }
        self.freed += free.len() as u64;
        self.doomed = self
            .known
            .iter()
            .copied()
            .filter(|id| !live.contains(id))
            .collect();
        free
    }

    /// Ids found among the map's keys: stored by a program whose entry user space never
    /// read (the entry's map was full, or it went before a read). Freed like the rest.
    pub fn listed(&mut self, keys: impl IntoIterator<Item = u32>) {
        self.known.extend(keys);
    }

    /// Ids the map holds, as far as user space knows.
    pub fn held(&self) -> u64 {
        self.known.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u32]) -> HashSet<u32> {
        v.iter().copied().collect()
    }

    #[test]
    fn an_id_is_freed_after_two_reads_without_a_reference() {
        let mut s = StackIds::default();
        assert!(s.sweep(&set(&[1, 2, 3])).is_empty());
        assert_eq!(s.held(), 3);
        // 3 unreferenced once: not yet.
        assert!(s.sweep(&set(&[1, 2])).is_empty());
        assert!(s.freeing_next());
        // Referenced again in between: kept.
        assert!(s.sweep(&set(&[1, 3])).is_empty());
        // 2 unreferenced twice: freed; 3 once more unreferenced after its use: next time.
        assert_eq!(s.sweep(&set(&[1])), [2]);
        let mut f = s.sweep(&set(&[1]));
        f.sort_unstable();
        assert_eq!(f, [3]);
        assert_eq!((s.held(), s.freed), (1, 2));
        assert!(!s.freeing_next());
        // An id found only among the keys goes the same way.
        s.listed([9]);
        assert!(s.sweep(&set(&[1])).is_empty());
        assert_eq!(s.sweep(&set(&[1])), [9]);
        assert_eq!(s.held(), 1);
    }
}
