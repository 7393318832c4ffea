//! The previous scan's task for a tid (its ticks and its process's start time), looked
//! up for every task of the current scan while `proc_rows` builds its rows.
//!
//! When both scans list their tasks in ascending tid order (a machine of
//! single-threaded processes does), a cursor steps through the previous scan's tasks
//! alongside the current ones. Checking that order up front cost two extra passes over
//! every task list of both scans (a quarter of the thread rows' time at 10,000
//! processes), so it is checked as the cursor goes instead: lookups out of order switch
//! to a table from there on, and a previous scan found out of order afterwards makes
//! `proc_rows` redo the answers the cursor gave (`stale`).

use crate::model::join::KeyMap;
use crate::model::sample::ProcScan;

/// A previous-scan task's ticks (utime + stime) and its process's start time.
pub type PrevTask = (u64, u64);

pub struct PrevTasks<'a> {
    procs: &'a [ProcScan],
    /// The cursor, while lookups come in ascending tid order.
    walk: Option<TaskWalk>,
    /// Every task by tid (the last of a tid listed twice), once the cursor is given up.
    table: Option<KeyMap<PrevTask>>,
    /// Whether the previous scan's tids strictly ascend; known once the table is built.
    ascending: Option<bool>,
    /// The largest tid sought so far.
    sought: u32,
    /// Lookups the cursor answered.
    walked: usize,
}

/// A cursor over the tasks of a scan: the first task with a tid >= the last sought.
struct TaskWalk {
    pi: usize,
    ti: usize,
    /// One more than the tid of the last task stepped over (0: none yet); every task
    /// the cursor reaches must have a tid at least this.
    floor: u64,
}

impl<'a> PrevTasks<'a> {
    pub fn new(procs: &'a [ProcScan]) -> Self {
        PrevTasks {
            procs,
            walk: Some(TaskWalk {
                pi: 0,
                ti: 0,
                floor: 0,
            }),
            table: None,
            ascending: None,
            sought: 0,
            walked: 0,
        }
    }

    /// The previous task with this tid, as a table of every task would find it.
    #[inline]
    pub fn get(&mut self, tid: u32) -> Option<PrevTask> {
        if let Some(w) = self.walk.as_mut()
            && tid >= self.sought
        {
            self.sought = tid;
            if let Some(found) = w.seek(self.procs, tid) {
                self.walked += 1;
                return found;
            }
        }
        self.table().get(tid).copied()
    }

    /// Gives up the cursor (if not yet) and returns the table.
    fn table(&mut self) -> &KeyMap<PrevTask> {
        if self.table.is_none() {
            self.walk = None;
            let (t, ascending) = table(self.procs);
            self.table = Some(t);
            self.ascending = Some(ascending);
        }
        self.table.as_ref().expect("built above")
    }

    /// After the last lookup: how many of the first answers were the cursor's and are
    /// wrong to keep, because the previous scan turned out not to be in tid order (a tid
    /// listed twice or out of place, which a table answers differently). Redo them
    /// with `get`, in the same order.
    pub fn stale(&mut self) -> usize {
        let ascending = match (&self.walk, self.ascending) {
            (Some(w), _) => w.rest_ascends(self.procs),
            (None, Some(a)) => a,
            (None, None) => true,
        };
        if ascending {
            return 0;
        }
        let n = self.walked;
        self.table();
        self.walked = 0;
        n
    }
}

impl TaskWalk {
    /// The task with this tid, if tids are sought in ascending order; None (and the
    /// cursor is no longer usable) when a task reached is out of tid order.
    #[inline]
    fn seek(&mut self, procs: &[ProcScan], tid: u32) -> Option<Option<PrevTask>> {
        while let Some(q) = procs.get(self.pi) {
            match q.tasks.get(self.ti) {
                Some(t) if u64::from(t.tid) < self.floor => return None,
                Some(t) if t.tid < tid => {
                    self.floor = u64::from(t.tid) + 1;
                    self.ti += 1;
                }
                Some(t) => {
                    return Some((t.tid == tid).then_some((t.utime + t.stime, q.starttime)));
                }
                None => {
                    self.pi += 1;
                    self.ti = 0;
                }
            }
        }
        Some(None)
    }

    /// Whether the tasks from the cursor on keep ascending strictly.
    fn rest_ascends(&self, procs: &[ProcScan]) -> bool {
        let mut floor = self.floor;
        let mut ti = self.ti;
        for q in procs.get(self.pi..).unwrap_or_default() {
            for t in q.tasks.get(ti..).unwrap_or_default() {
                if u64::from(t.tid) < floor {
                    return false;
                }
                floor = u64::from(t.tid) + 1;
            }
            ti = 0;
        }
        true
    }
}

/// Every task of the scan by tid, and whether the tids strictly ascend in scan order.
fn table(procs: &[ProcScan]) -> (KeyMap<PrevTask>, bool) {
    let mut v = Vec::with_capacity(procs.iter().map(|q| q.tasks.len()).sum());
    let mut floor = 0u64;
    let mut ascending = true;
    for q in procs {
        for t in &q.tasks {
            ascending &= u64::from(t.tid) >= floor;
            floor = u64::from(t.tid) + 1;
            v.push((t.tid, (t.utime + t.stime, q.starttime)));
        }
    }
    (KeyMap::new(v), ascending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::synthetic;

    /// Answers as a table of every task gives them, with the redo `stale` asks for.
    fn answers(prev: &[ProcScan], tids: &[u32]) -> Vec<Option<PrevTask>> {
        let mut p = PrevTasks::new(prev);
        let mut out: Vec<_> = tids.iter().map(|&t| p.get(t)).collect();
        let n = p.stale();
        for (o, &t) in out.iter_mut().zip(tids).take(n) {
            *o = p.get(t);
        }
        out
    }

    fn by_table(prev: &[ProcScan], tids: &[u32]) -> Vec<Option<PrevTask>> {
        let (t, _) = table(prev);
        tids.iter().map(|&k| t.get(k).copied()).collect()
    }

    #[test]
    fn agrees_with_a_table_in_any_order() {
        let s = synthetic(30, 3, 10);
        let all: Vec<u32> = s
            .procs
            .iter()
            .flat_map(|p| p.tasks.iter().map(|t| t.tid))
            .collect();
        let mut queries = vec![all.clone()];
        // Unknown tids, repeats, and a descent part way through.
        let mut q: Vec<u32> = all.iter().flat_map(|&t| [t, t + 1, t]).collect();
        queries.push(q.clone());
        q.insert(40, 3);
        queries.push(q);
        queries.push(all.iter().rev().copied().collect());
        let mut prevs = vec![s.procs.clone()];
        // A previous scan out of order late (a tid listed again), early, and at once.
        let mut late = s.procs.clone();
        let dup = late[2].tasks[1].clone();
        late.last_mut().unwrap().tasks.push(dup);
        prevs.push(late);
        let mut early = s.procs.clone();
        early.swap(0, 1);
        prevs.push(early);
        let mut empty = s.procs.clone();
        empty[4].tasks.clear();
        prevs.push(empty);
        prevs.push(Vec::new());
        for prev in &prevs {
            for q in &queries {
                assert_eq!(answers(prev, q), by_table(prev, q));
            }
        }
    }
}
