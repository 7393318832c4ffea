//! Bounded per-process counters. Processes are grouped by command name (`comm`), an
//! identity that survives restarts and pid reuse, unlike a pid; the N groups that rank
//! highest by the keys the user chose get their own series and every other process adds
//! to one `other` series, so a host that starts a new pid every millisecond still
//! exports at most N + 1 series per family.
//!
//! Every series is a true counter (it never goes down): a group's series starts at 0
//! when the group is promoted and ends when it is demoted; what a process did while its
//! group had no series of its own stays in `other`. The ranking is a decayed score
//! (half-life HALF_LIFE frames) and a group only displaces the weakest named one when it
//! scores REPLACE times more, at most once a frame, so groups do not flap in and out.
//! `Ranked` is that scheme for any key; the cgroup counters (`cgroup_counters.rs`) use it
//! too, keyed by cgroup path.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::Frame;
use crate::model::procs::fields::{ProcField, group_counters};

/// What ranks the groups (`--top-by`; several add up: seconds with seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TopBy {
    /// On-CPU seconds (eBPF's, else the scan's).
    Cpu,
    /// Seconds runnable but waiting for a CPU.
    RunqWait,
    /// Threads created.
    Threads,
    /// Seconds blocked in futex waits.
    FutexWait,
}

/// The default ranking: CPU and run-queue wait.
pub const DEFAULT_TOP_BY: [TopBy; 2] = [TopBy::Cpu, TopBy::RunqWait];
/// Frames for a group's score to halve.
const HALF_LIFE: f64 = 30.0;
/// How many times the weakest named group's score a newcomer needs to displace it.
const REPLACE: f64 = 2.0;
/// Scores kept for groups without a series of their own (the rest are forgotten).
const MAX_SCORED: usize = 4096;

/// One group's counts (per interval, or summed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupCounts {
    /// The field table's group counters (`fields::group_counters`), in its order:
    /// seconds or counts.
    pub fields: Vec<f64>,
    /// Seconds asleep in futex waits: not a field of the process table (no column shows
    /// it), so not in `fields`.
    pub futex_wait_s: f64,
    /// Processes of the group in the last frame (a level, not summed).
    pub procs: u64,
}

/// Counts a ranked series holds: added interval by interval, scored by the user's keys.
pub trait Counts: Default {
    /// Add one interval's counts.
    fn add(&mut self, d: &Self);
    /// The score an interval adds under the ranking `by`.
    fn key(&self, by: &[TopBy]) -> f64;
}

impl Counts for GroupCounts {
    fn add(&mut self, d: &GroupCounts) {
        if self.fields.len() < d.fields.len() {
            self.fields.resize(d.fields.len(), 0.0);
        }
        for (a, b) in self.fields.iter_mut().zip(&d.fields) {
            *a += b;
        }
        self.futex_wait_s += d.futex_wait_s;
    }

    fn key(&self, by: &[TopBy]) -> f64 {
        by.iter()
            .map(|b| match b {
                TopBy::Cpu => self.field(ProcField::CpuTrue),
                TopBy::RunqWait => self.field(ProcField::RunqWait),
                TopBy::Threads => self.field(ProcField::Created),
                TopBy::FutexWait => self.futex_wait_s,
            })
            .sum()
    }
}

impl GroupCounts {
    /// The group counter of field `id` (0 for a field without one, or none counted yet).
    pub fn field(&self, id: ProcField) -> f64 {
        group_counters()
            .position(|(f, _)| f == id)
            .and_then(|i| self.fields.get(i))
            .copied()
            .unwrap_or(0.0)
    }
}

/// The keys with a series of their own, and `other`.
#[derive(Debug, Clone)]
pub struct Ranked<C> {
    n: usize,
    by: Vec<TopBy>,
    pub named: BTreeMap<String, C>,
    pub other: C,
    score: HashMap<String, f64>,
}

/// The processes grouped by command name.
pub type Groups = Ranked<GroupCounts>;

/// A process's group name: its comm, "?" when empty (empty is `other`'s label).
pub fn group_of(comm: &str) -> &str {
    if comm.is_empty() { "?" } else { comm }
}

impl<C: Counts> Ranked<C> {
    pub fn new(n: usize, by: &[TopBy]) -> Ranked<C> {
        let by = if by.is_empty() {
            DEFAULT_TOP_BY.to_vec()
        } else {
            by.to_vec()
        };
        Ranked {
            n: n.max(1),
            by,
            named: BTreeMap::new(),
            other: C::default(),
            score: HashMap::new(),
        }
    }

    /// Add one interval's counts by key, then re-rank. A key without a series of its own
    /// adds to `other` when `to_other` says so (it always scores).
    pub fn count<'a>(
        &mut self,
        now: impl IntoIterator<Item = (&'a str, &'a C)>,
        to_other: impl Fn(&str, &BTreeMap<String, C>) -> bool,
    ) where
        C: 'a,
    {
        let decay = 0.5f64.powf(1.0 / HALF_LIFE);
        self.score.values_mut().for_each(|s| *s *= decay);
        let mut seen = HashSet::new();
        for (name, d) in now {
            *self.score.entry(name.to_string()).or_default() += d.key(&self.by);
            seen.insert(name);
            if let Some(g) = self.named.get_mut(name) {
                g.add(d);
            } else if to_other(name, &self.named) {
                self.other.add(d);
            }
        }
        self.rerank(&seen);
    }

    /// Promote the best scored into free places, and one newcomer over the weakest. A
    /// key `seen` in this interval stays a candidate at a score of 0, so a free place
    /// goes to an idle key too (a cgroup frozen when serve starts has its series before
    /// it runs).
    fn rerank(&mut self, seen: &HashSet<&str>) {
        let named = &self.named;
        self.score
            .retain(|k, s| *s > 1e-9 || named.contains_key(k) || seen.contains(k.as_str()));
        if self.score.len() > MAX_SCORED {
            let mut v: Vec<f64> = self.score.values().copied().collect();
            v.sort_by(|a, b| b.total_cmp(a));
            let floor = v[MAX_SCORED - 1];
            let named = &self.named;
            self.score
                .retain(|k, s| *s >= floor || named.contains_key(k));
        }
        let mut cands: Vec<(&String, f64)> = self
            .score
            .iter()
            .filter(|(k, _)| !self.named.contains_key(*k))
            .map(|(k, s)| (k, *s))
            .collect();
        cands.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let mut promote: Vec<String> = Vec::new();
        let free = self.n.saturating_sub(self.named.len());
        promote.extend(cands.iter().take(free).map(|(k, _)| (*k).clone()));
        let mut demote = None;
        if let Some((k, s)) = cands.get(free) {
            let weakest = self
                .named
                .keys()
                .map(|n| (n, self.score.get(n).copied().unwrap_or(0.0)))
                .min_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(a.0)));
            if let Some((w, ws)) = weakest
                && *s > REPLACE * ws
            {
                demote = Some(w.clone());
                promote.push((*k).clone());
            }
        }
        if let Some(w) = demote {
            self.named.remove(&w);
        }
        for k in promote {
            self.named.insert(k, C::default());
        }
    }
}

impl Groups {
    /// Add the interval `f`, then re-rank.
    pub fn add(&mut self, f: &Frame) {
        let iv = f.interval_s;
        let mut now: HashMap<&str, GroupCounts> = HashMap::new();
        for p in &f.procs {
            let e = now.entry(group_of(&p.comm)).or_default();
            if e.fields.is_empty() {
                e.fields = group_counters().map(|_| 0.0).collect();
            }
            for (v, (_, g)) in e.fields.iter_mut().zip(group_counters()) {
                *v += (g.amount)(p, iv);
            }
            e.futex_wait_s += p.futex_wait_ms.get().unwrap_or(0.0) / 1e3;
            e.procs += 1;
        }
        self.count(now.iter().map(|(k, v)| (*k, v)), |_, _| true);
        // Levels after the re-rank, so a group promoted or demoted now is counted where
        // its series is.
        self.other.procs = f.procs.len() as u64;
        for (name, g) in self.named.iter_mut() {
            g.procs = now.get(name.as_str()).map_or(0, |d| d.procs);
            self.other.procs -= g.procs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::frame::ProcFrame;
    use crate::model::name::Name;

    fn frame(procs: &[(u32, &str, f64)]) -> Frame {
        Frame {
            interval_s: 1.0,
            procs: procs
                .iter()
                .map(|&(pid, comm, cpu)| ProcFrame {
                    cpu_pct_true: Some(cpu),
                    ..ProcFrame::named(pid, Name::from(comm), Name::default())
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn churning_pids_of_one_name_are_one_series_and_counters_never_fall() {
        let mut g = Groups::new(2, &[TopBy::Cpu]);
        let mut last: BTreeMap<String, f64> = BTreeMap::new();
        let mut last_other = 0.0;
        let mut fed = 0.0;
        for i in 0..200u32 {
            fed += 0.1 + 0.5 + (1.0 + f64::from(i % 20)) / 100.0;
            // A new pid each frame for "sh", a steady "db", and a new name now and then.
            let odd = format!("job{}", i / 20);
            g.add(&frame(&[
                (1000 + i, "sh", 10.0),
                (7, "db", 50.0),
                (5000 + i, &odd, 1.0 + f64::from(i % 20)),
            ]));
            assert!(g.named.len() <= 2);
            for (k, v) in &g.named {
                if let Some(p) = last.get(k) {
                    assert!(v.field(ProcField::CpuTrue) >= *p, "{k} fell");
                }
            }
            last = g
                .named
                .iter()
                .map(|(k, v)| (k.clone(), v.field(ProcField::CpuTrue)))
                .collect();
            let other = g.other.field(ProcField::CpuTrue);
            assert!(other >= last_other);
            last_other = other;
        }
        assert!(g.named.contains_key("db") && g.named.contains_key("sh"));
        // Everything is counted once: the named groups (since promotion) plus other.
        let named: f64 = g.named.values().map(|v| v.field(ProcField::CpuTrue)).sum();
        let other = g.other.field(ProcField::CpuTrue);
        assert!(named + other <= fed + 1e-9);
        assert!(named + other > 0.5 * fed);
        assert!(other > 0.0);
    }
}
