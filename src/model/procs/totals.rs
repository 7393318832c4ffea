//! Per-process cumulative BPF totals: the counters of its live threads plus what its
//! exited threads left behind. `derive` needs them for every process of the previous
//! and the current Sample.

use std::cell::Cell;

use crate::model::join::{KeyMap, for_run};
use crate::model::procs::wall::Cumulative;
use crate::model::sample::{BpfProc, BpfThread, OFF_CAUSES};

/// One process's totals (zero for a process BPF never saw).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ProcTotals {
    pub oncpu_ns: u64,
    pub runq_wait_ns: u64,
    pub created: u64,
    pub exited: u64,
    pub ghosts: u64,
    pub ghost_oncpu_ns: u64,
    pub off_ns: [u64; OFF_CAUSES],
    pub oncpu_wall_ns: u64,
}

impl ProcTotals {
    fn add_thread(&mut self, t: &BpfThread) {
        self.oncpu_ns += t.oncpu_ns;
        self.runq_wait_ns += t.runq_wait_ns;
        for (a, b) in self.off_ns.iter_mut().zip(t.off_ns) {
            *a += b;
        }
        self.oncpu_wall_ns += t.oncpu_wall_ns;
    }

    /// What the wall-time split is taken from.
    pub fn cumulative(&self) -> Cumulative {
        Cumulative {
            oncpu_ns: self.oncpu_wall_ns,
            runq_wait_ns: self.runq_wait_ns,
            off_ns: self.off_ns,
        }
    }

    /// A process entry's dead-thread sums add; its counts replace (the last entry of
    /// a tgid listed twice wins).
    fn add_proc(&mut self, p: &BpfProc) {
        self.oncpu_ns += p.dead_oncpu_ns;
        self.runq_wait_ns += p.dead_runq_wait_ns;
        for (a, b) in self.off_ns.iter_mut().zip(p.dead_off_ns) {
            *a += b;
        }
        self.oncpu_wall_ns += p.dead_oncpu_wall_ns;
        self.created = p.created;
        self.exited = p.exited;
        self.ghosts = p.ghosts;
        self.ghost_oncpu_ns = p.ghost_oncpu_ns;
    }
}

/// Totals by tgid. When both lists are in tgid order, a process's totals are summed
/// from its run of rows when asked for (lookups in ascending tgid order walk each list
/// once, and nothing is copied); otherwise they are summed up front into a table.
pub struct Totals<'a> {
    threads: &'a [BpfThread],
    procs: &'a [BpfProc],
    next_thread: Cell<usize>,
    next_proc: Cell<usize>,
    table: Option<KeyMap<ProcTotals>>,
}

impl<'a> Totals<'a> {
    pub fn new(threads: &'a [BpfThread], procs: &'a [BpfProc]) -> Self {
        let in_order = threads.is_sorted_by_key(|t| t.tgid) && procs.is_sorted_by_key(|p| p.tgid);
        Totals {
            threads,
            procs,
            next_thread: Cell::new(0),
            next_proc: Cell::new(0),
            table: (!in_order).then(|| table(threads, procs)),
        }
    }

    #[inline]
    pub fn get(&self, tgid: u32) -> ProcTotals {
        if let Some(t) = &self.table {
            return t.get(tgid).copied().unwrap_or_default();
        }
        let mut e = ProcTotals::default();
        for_run(
            self.threads,
            |t| t.tgid,
            &self.next_thread,
            tgid,
            |t| e.add_thread(t),
        );
        for_run(
            self.procs,
            |p| p.tgid,
            &self.next_proc,
            tgid,
            |p| e.add_proc(p),
        );
        e
    }
}

/// Every process's totals, sorted by tgid. Thread counters of a process add up (in
/// any order: integer sums); for a tgid listed twice in `procs`, the sums add and the
/// last entry's counts win.
fn table(threads: &[BpfThread], procs: &[BpfProc]) -> KeyMap<ProcTotals> {
    let mut live: Vec<&BpfThread> = threads.iter().collect();
    if !live.is_sorted_by_key(|t| t.tgid) {
        live.sort_unstable_by_key(|t| t.tgid);
    }
    let mut by_proc: Vec<&BpfProc> = procs.iter().collect();
    if !by_proc.is_sorted_by_key(|p| p.tgid) {
        by_proc.sort_by_key(|p| p.tgid); // stable: the last of equal tgids stays last
    }
    let mut out: Vec<(u32, ProcTotals)> = Vec::with_capacity(procs.len() + 64);
    let (mut i, mut j) = (0, 0);
    while i < live.len() || j < by_proc.len() {
        let tgid = match (live.get(i), by_proc.get(j)) {
            (Some(t), Some(p)) => t.tgid.min(p.tgid),
            (Some(t), None) => t.tgid,
            (None, Some(p)) => p.tgid,
            (None, None) => break,
        };
        let mut e = ProcTotals::default();
        while let Some(t) = live.get(i).filter(|t| t.tgid == tgid) {
            e.add_thread(t);
            i += 1;
        }
        while let Some(p) = by_proc.get(j).filter(|p| p.tgid == tgid) {
            e.add_proc(p);
            j += 1;
        }
        out.push((tgid, e));
    }
    KeyMap::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: u32, tgid: u32, on: u64) -> BpfThread {
        BpfThread {
            tid,
            tgid,
            oncpu_ns: on,
            runq_wait_ns: on / 10,
            ..Default::default()
        }
    }

    fn proc(tgid: u32, created: u64, dead: u64) -> BpfProc {
        BpfProc {
            tgid,
            created,
            dead_oncpu_ns: dead,
            ..Default::default()
        }
    }

    /// Summed on demand from lists in order, or up front from lists out of order: the
    /// same totals, duplicates included.
    #[test]
    fn in_order_and_out_of_order_agree() {
        let threads = vec![
            thread(10, 10, 100),
            thread(11, 10, 50),
            thread(20, 20, 7),
            thread(31, 30, 1),
            thread(32, 30, 2),
        ];
        let procs = vec![
            proc(10, 3, 1000),
            proc(25, 1, 5),
            proc(30, 1, 0),
            proc(30, 4, 9),
        ];
        let sorted = Totals::new(&threads, &procs);
        assert!(sorted.table.is_none());
        let (mut t2, mut p2) = (threads.clone(), procs.clone());
        t2.reverse();
        p2.swap(0, 1); // out of order, equal tgids still in their order
        let shuffled = Totals::new(&t2, &p2);
        assert!(shuffled.table.is_some());
        let keys = [0, 10, 20, 25, 30, 31, 10, 30, 5];
        for k in keys {
            assert_eq!(sorted.get(k), shuffled.get(k), "tgid {k}");
        }
        let s = Totals::new(&threads, &procs);
        let t = s.get(10);
        assert_eq!((t.oncpu_ns, t.runq_wait_ns, t.created), (1150, 15, 3));
        let t = s.get(30);
        assert_eq!(
            (t.oncpu_ns, t.created),
            (12, 4),
            "the last entry's counts win"
        );
        assert_eq!(s.get(25).oncpu_ns, 5);
        assert_eq!(s.get(99), ProcTotals::default());
    }
}
