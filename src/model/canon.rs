//! One order for every list a Sample reads out of a kernel hash map (by its key), so
//! consecutive Samples line up. BPF map iteration order shuffles from tick to tick; in a
//! recording a shuffled list costs a zstd match per entry even when nothing changed,
//! which made an idle machine's frames 5x bigger. Called by the collector, so live and
//! replay see the same, deterministic Samples.

use super::Sample;

impl Sample {
    /// Sort every list read out of a kernel hash map by its key (see the module).
    pub fn canonical_order(&mut self) {
        canonical_order(self);
    }
}

fn canonical_order(s: &mut Sample) {
    if let Some(b) = s.bpf.as_mut() {
        // Keys unique within each list (a map's keys): an unstable sort gives the same
        // order, faster (10,000 threads and their latencies sorted every tick).
        b.threads.sort_unstable_by_key(|t| t.tid);
        b.procs.sort_unstable_by_key(|p| p.tgid);
        b.ghost_names
            .sort_by(|x, y| (x.tgid, &x.comm).cmp(&(y.tgid, &y.comm)));
        b.latency.threads.sort_unstable_by_key(|t| (t.id, t.tgid));
    }
    if let Some(c) = s.contention.as_mut() {
        c.futexes.sort_by_key(|f| (f.tgid, f.uaddr));
        c.futex_threads.sort_by_key(|t| (t.tid, t.tgid));
        c.futex_procs.sort_by_key(|p| p.tgid);
        c.locks.sort_by_key(|l| (l.lock, l.tgid));
        c.mmap
            .sort_by_key(|m| (m.victim, m.holder_tid, m.waiter_tid));
    }
    if let Some(i) = s.irq.as_mut() {
        i.senders
            .sort_by(|x, y| (x.tgid, x.kind, &x.func).cmp(&(y.tgid, y.kind, &y.func)));
    }
}

#[cfg(test)]
mod tests {
    use crate::model::fixtures::synthetic;

    #[test]
    fn shuffled_lists_come_out_in_key_order() {
        let mut s = synthetic(3, 4, 10);
        let b = s.bpf.as_mut().unwrap();
        b.threads.reverse();
        b.procs.reverse();
        let mut sorted = s.clone();
        sorted.canonical_order();
        let tids: Vec<u32> = sorted
            .bpf
            .as_ref()
            .unwrap()
            .threads
            .iter()
            .map(|t| t.tid)
            .collect();
        assert!(tids.windows(2).all(|w| w[0] <= w[1]), "{tids:?}");
        let mut again = sorted.clone();
        again.canonical_order();
        assert_eq!(again, sorted);
    }
}
