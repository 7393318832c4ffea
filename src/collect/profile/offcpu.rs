//! Off-CPU time from the profiler's switch records: each watched thread's waits, from
//! leaving a CPU to coming back on one. When waits come faster than the reader can
//! unwind, the BPF side keeps the stack of one wait in N at random (N per CPU, from its
//! rate) and sends only who, why and when for the others. Every wait's time is counted
//! here, exactly, per thread and reason; the kept stacks share that time out, each in
//! proportion to its own time times the N it stood for. A thread whose waits for a
//! reason kept no stack in a settle has its time shared out by its process's kept stacks
//! for that reason, and failing those it is counted under `[stack not kept]`.

use foldhash::{HashMap, HashMapExt};

use crate::model::profile::{LocatedStack, StackKey};

/// A wait's stack: its names, and its lines when the profiler keeps them.
pub type Stack = (StackKey, Option<LocatedStack>);

/// Waits counted together: (process, thread, reason).
type Stratum = (u32, u32, u32);

/// µs of a (process, reason) that no kept stack could take.
pub type Unkept = ((u32, u32), u64);

#[derive(Default)]
pub struct OffCpuWaits {
    /// Each watched thread's current wait: with its stack (when it began, the N its
    /// CPU kept one in), or without one (its stratum and when it began).
    with_stack: HashMap<u32, (Stack, u32, u64, u64)>,
    without: HashMap<u32, (Stratum, u64)>,
    /// Since the last settle: each stratum's whole time in µs, and its waits that kept
    /// a stack, each with its µs times its N.
    totals: HashMap<Stratum, u64>,
    kept: HashMap<Stratum, Vec<(Stack, u64)>>,
}

impl OffCpuWaits {
    /// Thread `tid` left a CPU at `ts` (ns) for `reason`, its stack kept, one of
    /// `one_in` on its CPU.
    pub fn left_with_stack(&mut self, tid: u32, stack: Stack, reason: u32, ts: u64, one_in: u32) {
        self.without.remove(&tid);
        self.with_stack
            .insert(tid, (stack, reason, ts, u64::from(one_in.max(1))));
    }

    /// Thread `tid` of `pid` left a CPU at `ts` for `reason`, no stack kept.
    pub fn left_without_stack(&mut self, pid: u32, tid: u32, reason: u32, ts: u64) {
        self.with_stack.remove(&tid);
        self.without.insert(tid, ((pid, tid, reason), ts));
    }

    /// Thread `tid` came back on a CPU at `ts` (a wait whose start was lost has none).
    pub fn came_back(&mut self, tid: u32, ts: u64) {
        if let Some((stack, reason, since, one_in)) = self.with_stack.remove(&tid) {
            self.end_with_stack(tid, stack, reason, ts.saturating_sub(since) / 1000, one_in);
        } else if let Some((stratum, since)) = self.without.remove(&tid) {
            *self.totals.entry(stratum).or_default() += ts.saturating_sub(since) / 1000;
        }
    }

    fn end_with_stack(&mut self, tid: u32, stack: Stack, reason: u32, us: u64, one_in: u64) {
        let stratum = (stack.0.pid, tid, reason);
        *self.totals.entry(stratum).or_default() += us;
        self.kept
            .entry(stratum)
            .or_default()
            .push((stack, us * one_in));
    }

    /// Count every wait still going on as ending at `now` (ns): a thread asleep at the
    /// end of the window spent it off the CPU.
    pub fn end_all(&mut self, now: u64) {
        let tids: Vec<u32> = self
            .with_stack
            .keys()
            .chain(self.without.keys())
            .copied()
            .collect();
        for tid in tids {
            self.came_back(tid, now);
        }
    }

    /// The time counted since the last settle: stacks with their µs, and the µs per
    /// (process, reason) that no kept stack could take.
    pub fn settle(&mut self) -> (Vec<(Stack, u64)>, Vec<Unkept>) {
        let totals = std::mem::take(&mut self.totals);
        let mut kept = std::mem::take(&mut self.kept);
        let mut strata: Vec<(Stratum, u64)> = totals.into_iter().collect();
        strata.sort_unstable();
        let mut out = Vec::new();
        // Per (process, reason): the kept stacks of all its threads, and the time of
        // threads that kept none.
        let mut pooled: HashMap<(u32, u32), Vec<(Stack, u64)>> = HashMap::new();
        let mut orphan: Vec<Unkept> = Vec::new();
        for ((pid, tid, reason), total) in strata {
            let stacks = kept.remove(&(pid, tid, reason)).unwrap_or_default();
            if stacks.iter().all(|(_, w)| *w == 0) {
                orphan.push(((pid, reason), total));
                continue;
            }
            out.extend(share_out(&stacks, total));
            pooled.entry((pid, reason)).or_default().extend(stacks);
        }
        let mut unkept = Vec::new();
        for (key, total) in orphan {
            match pooled.get(&key) {
                Some(stacks) => out.extend(share_out(stacks, total)),
                None => unkept.push((key, total)),
            }
        }
        (out, unkept)
    }
}

/// `total` µs shared by `stacks` in proportion to their weighted times.
fn share_out(stacks: &[(Stack, u64)], total: u64) -> Vec<(Stack, u64)> {
    let sum: u128 = stacks.iter().map(|(_, w)| u128::from(*w)).sum();
    if sum == 0 {
        return Vec::new();
    }
    stacks
        .iter()
        .map(|(s, w)| (s.clone(), (u128::from(*w) * u128::from(total) / sum) as u64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(pid: u32, f: &str) -> Stack {
        (
            StackKey {
                pid,
                process: "p".into(),
                thread: "t".into(),
                frames: vec![f.into()],
            },
            None,
        )
    }

    fn of(out: &[(Stack, u64)], f: &str) -> u64 {
        out.iter()
            .filter(|(s, _)| s.0.frames[0] == f)
            .map(|(_, n)| n)
            .sum()
    }

    #[test]
    fn every_wait_counts_and_kept_stacks_share_it_by_their_weight() {
        let mut w = OffCpuWaits::default();
        // Thread 11: one kept wait of 10 µs at a in 1 (weight 10), one kept wait of
        // 10 µs at b on a CPU keeping 1 in 3 (weight 30), and 60 µs of waits that kept
        // nothing: 80 µs, shared 1:3.
        w.left_with_stack(11, stack(1, "a"), 2, 0, 1);
        w.came_back(11, 10_000);
        w.left_with_stack(11, stack(1, "b"), 2, 20_000, 3);
        w.came_back(11, 30_000);
        w.left_without_stack(1, 11, 2, 40_000);
        w.came_back(11, 100_000);
        // Thread 12 of the same process kept none: its 40 µs go the same way. Thread
        // 13 waited for another reason and kept none: not kept.
        w.left_without_stack(1, 12, 2, 0);
        w.came_back(12, 40_000);
        w.left_without_stack(1, 13, 3, 0);
        // A stack kept, but its wait's start was lost: its return alone counts nothing.
        w.came_back(14, 5_000);
        w.end_all(7_000);
        let (out, unkept) = w.settle();
        assert_eq!(of(&out, "a"), 20 + 10);
        assert_eq!(of(&out, "b"), 60 + 30);
        assert_eq!(unkept, vec![((1, 3), 7)]);
        // Settled: nothing twice.
        assert_eq!(w.settle(), (Vec::new(), Vec::new()));
    }
}
