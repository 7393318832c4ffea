//! Bounded per-cgroup counters since `serve` started: CPU, quota periods and throttling,
//! pressure stall time, memory.events and eBPF's run-queue wait, each `_total` in base
//! units. The cgroups are ranked as the process groups are (`groups::Ranked`, keyed by
//! path): the top N by CPU and run-queue wait get a series labelled by path and readable
//! name, every other cgroup adds to one `cgroup=""` series.
//!
//! A cgroup's files count its whole subtree, so `other` takes only the cgroups without a
//! series whose parent has one (or is the top of the tree read): each is counted with its
//! subtree and nothing below it again. A named cgroup that goes away keeps its series, at
//! its last value, until another displaces it: no counter ever falls.

use std::collections::HashMap;

use prometheus_client::registry::Unit;

use super::groups::{Counts, Ranked, TopBy};
use super::out::{Labels, Out, l};
use super::totals::{add, addf};
use crate::model::Frame;
use crate::model::cgroup::{CgroupFrame, PressureFrame, readable};

/// The pressure files, in the order `CgroupCounts::psi` keeps them.
pub const PSI_RESOURCES: [&str; 3] = ["cpu", "memory", "io"];
/// A pressure file's lines, in the same order.
pub const PSI_KINDS: [&str; 2] = ["some", "full"];

/// One cgroup's counts (per interval, or summed). None: not measured for this cgroup
/// (no cpu controller, no pressure file), and then its row is left out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgroupCounts {
    /// cpu.stat usage_usec, in seconds.
    pub cpu_s: Option<f64>,
    /// cpu.stat nr_periods, nr_throttled and throttled_usec (in seconds).
    pub periods: Option<u64>,
    pub throttled_periods: Option<u64>,
    pub throttled_s: Option<f64>,
    /// Stall seconds (the pressure files' `total=`) by PSI_RESOURCES and PSI_KINDS.
    pub psi: [[Option<f64>; 2]; 3],
    /// memory.events oom_kill and high.
    pub oom_kills: Option<u64>,
    pub high_events: Option<u64>,
    /// eBPF: seconds its threads (and those below) waited for a CPU.
    pub runq_wait_s: Option<f64>,
}

impl CgroupCounts {
    /// The interval's counts of one cgroup row (`iv`: the interval in seconds).
    pub fn of(c: &CgroupFrame, iv: f64) -> CgroupCounts {
        let stall = |p: Option<PressureFrame>| {
            [p.and_then(|p| p.some_pct), p.and_then(|p| p.full_pct)]
                .map(|v| v.map(|pct| pct / 100.0 * iv))
        };
        CgroupCounts {
            cpu_s: c.cpu_pct.map(|p| p / 100.0 * iv),
            periods: c.periods,
            throttled_periods: c.throttled_periods,
            throttled_s: c.throttled_ms.map(|ms| ms / 1e3),
            psi: [
                stall(c.cpu_pressure),
                stall(c.memory_pressure),
                stall(c.io_pressure),
            ],
            oom_kills: c.oom_kills,
            high_events: c.high_events,
            runq_wait_s: c.runq_wait_ms.map(|ms| ms / 1e3),
        }
    }

    /// Start at 0 every count `d` measures that this one has not yet: a series first
    /// seen at 0, so `increase()` counts its first interval.
    fn zero_like(&mut self, d: &CgroupCounts) {
        let z = |a: &mut Option<f64>, b: Option<f64>| {
            if b.is_some() {
                a.get_or_insert(0.0);
            }
        };
        let zu = |a: &mut Option<u64>, b: Option<u64>| {
            if b.is_some() {
                a.get_or_insert(0);
            }
        };
        z(&mut self.cpu_s, d.cpu_s);
        zu(&mut self.periods, d.periods);
        zu(&mut self.throttled_periods, d.throttled_periods);
        z(&mut self.throttled_s, d.throttled_s);
        for (a, b) in self.psi.iter_mut().flatten().zip(d.psi.iter().flatten()) {
            z(a, *b);
        }
        zu(&mut self.oom_kills, d.oom_kills);
        zu(&mut self.high_events, d.high_events);
        z(&mut self.runq_wait_s, d.runq_wait_s);
    }
}

impl Counts for CgroupCounts {
    fn add(&mut self, d: &CgroupCounts) {
        addf(&mut self.cpu_s, d.cpu_s);
        add(&mut self.periods, d.periods);
        add(&mut self.throttled_periods, d.throttled_periods);
        addf(&mut self.throttled_s, d.throttled_s);
        for (a, b) in self.psi.iter_mut().flatten().zip(d.psi.iter().flatten()) {
            addf(a, *b);
        }
        add(&mut self.oom_kills, d.oom_kills);
        add(&mut self.high_events, d.high_events);
        addf(&mut self.runq_wait_s, d.runq_wait_s);
    }

    /// CPU and run-queue wait where the user chose them; CPU when they chose neither
    /// (threads and futex waits are counted per process, not per cgroup).
    fn key(&self, by: &[TopBy]) -> f64 {
        let (cpu, rq) = (self.cpu_s.unwrap_or(0.0), self.runq_wait_s.unwrap_or(0.0));
        let mut k = None;
        for b in by {
            match b {
                TopBy::Cpu => *k.get_or_insert(0.0) += cpu,
                TopBy::RunqWait => *k.get_or_insert(0.0) += rq,
                TopBy::Threads | TopBy::FutexWait => {}
            }
        }
        k.unwrap_or(cpu)
    }
}

/// The cgroups with a series, and `other`.
pub type CgroupGroups = Ranked<CgroupCounts>;

/// The parent of a cgroup path ("/a/b" -> "/a", "/a" -> "/", "/" -> None).
fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        _ if path == "/" => None,
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

impl CgroupGroups {
    /// Add the interval `f`'s cgroups, then re-rank.
    pub fn add_cgroups(&mut self, f: &Frame) {
        let now: HashMap<&str, CgroupCounts> = f
            .cgroups
            .iter()
            .map(|c| (c.path.as_str(), CgroupCounts::of(c, f.interval_s)))
            .collect();
        self.count(now.iter().map(|(k, v)| (*k, v)), |path, named| {
            parent(path).is_none_or(|p| named.contains_key(p) || !now.contains_key(p))
        });
        // A series promoted now starts at 0 for what its cgroup measures; `other` too.
        for (k, g) in self.named.iter_mut() {
            if let Some(d) = now.get(k.as_str()) {
                g.zero_like(d);
            }
        }
        for d in now.values() {
            self.other.zero_like(d);
        }
    }
}

/// The per-cgroup `_total` families: the named cgroups, then `cgroup=""` (the rest).
pub fn render(o: &mut Out, g: &CgroupGroups) {
    let lab = |path: &str| {
        let name = if path.is_empty() {
            String::new()
        } else {
            readable(path)
        };
        l(&[("cgroup", path.to_string()), ("name", name)])
    };
    let all: Vec<(Labels, &CgroupCounts)> = g
        .named
        .iter()
        .map(|(k, v)| (lab(k), v))
        .chain([(lab(""), &g.other)])
        .collect();
    let rows = |f: &dyn Fn(&CgroupCounts) -> Option<f64>| {
        all.iter()
            .map(|(k, v)| (k.clone(), f(v)))
            .collect::<Vec<_>>()
    };
    let on = |v: Option<u64>| v.map(|v| v as f64);
    let s = || Some(Unit::Seconds);
    o.counters(
        "cgroup_cpu",
        "CPU seconds used by the cgroup and below (cpu.stat usage_usec); cgroup=\"\": the cgroups without a series of their own",
        s(),
        rows(&|c| c.cpu_s),
    );
    o.counters(
        "cgroup_periods",
        "cpu.max enforcement periods (cpu.stat nr_periods)",
        None,
        rows(&|c| on(c.periods)),
    );
    o.counters(
        "cgroup_throttled_periods",
        "Periods in which the quota throttled the cgroup (cpu.stat nr_throttled)",
        None,
        rows(&|c| on(c.throttled_periods)),
    );
    o.counters(
        "cgroup_throttled",
        "Time the quota held the cgroup's threads off the CPU (cpu.stat throttled_usec)",
        s(),
        rows(&|c| c.throttled_s),
    );
    let stall: Vec<(Labels, Option<f64>)> = all
        .iter()
        .flat_map(|(k, v)| {
            PSI_RESOURCES.iter().enumerate().flat_map(move |(r, res)| {
                PSI_KINDS.iter().enumerate().map(move |(i, kind)| {
                    let mut lb = k.clone();
                    lb.push(("resource".into(), res.to_string()));
                    lb.push(("kind".into(), kind.to_string()));
                    (lb, v.psi[r][i])
                })
            })
        })
        .collect();
    o.counters(
        "cgroup_pressure_stall",
        "Time some (or all: kind=full) of the cgroup's tasks stalled on the resource (the pressure file's total=)",
        s(),
        stall,
    );
    o.counters(
        "cgroup_oom_kills",
        "Processes the OOM killer killed in the cgroup and below (memory.events oom_kill)",
        None,
        rows(&|c| on(c.oom_kills)),
    );
    o.counters(
        "cgroup_memory_high_events",
        "Times the cgroup went over memory.high and was reclaimed (memory.events high)",
        None,
        rows(&|c| on(c.high_events)),
    );
    o.counters(
        "cgroup_runqueue_wait",
        "Seconds the cgroup's threads (and those below) waited for a CPU (eBPF)",
        s(),
        rows(&|c| c.runq_wait_s),
    );
}

#[cfg(test)]
#[path = "cgroup_counters_tests.rs"]
mod tests;
