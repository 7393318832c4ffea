//! A cgroup's figures for one interval: CPU, throttling, pressure, memory, I/O from
//! cgroupfs, and from eBPF (summed over the processes in it and below it) its runnable
//! threads and run-queue wait. Built by `cgroup_frames`, pure;
//! `derive` places them in the Frame.
//!
//! JSON keys are a public contract (`ttop --json` `cgroups[]`, docs/json.md): add fields,
//! never rename them.

use std::collections::HashMap;

use serde::Serialize;

use super::name::readable;
use super::sample::{CgroupScan, Pressure};
use crate::model::procs::proc_frame::ProcFrame;
use crate::model::rates::delta;
use crate::model::sample::Sample;

/// The busiest processes a cgroup names (JSON `top_pids`, findings).
pub const TOP_PIDS: usize = 5;

/// One pressure file over the interval: the kernel's 10-second averages (percent) and
/// the share of this interval stalled, from the totals (percent; null in the first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PressureFrame {
    pub some_avg10: f64,
    pub full_avg10: Option<f64>,
    pub some_pct: Option<f64>,
    pub full_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CgroupFrame {
    /// Path below the cgroup2 mount ("/" is the root).
    pub path: String,
    /// Readable name: systemd units as they are, container and pod ids shortened.
    pub name: String,
    /// Levels below the top of the tree shown (the root, or the --cgroup PATH).
    pub depth: u32,
    /// CPU used (cpu.stat usage_usec), percent of one CPU; the cgroup and below.
    pub cpu_pct: Option<f64>,
    /// cpu.max as CPUs (quota / period); null without a quota.
    pub cpu_limit: Option<f64>,
    /// Enforcement periods in the interval, those in which it was throttled, their share
    /// (percent), and the time its threads were held off the CPU (ms). Null without the
    /// cpu controller; the share null when no period elapsed.
    pub periods: Option<u64>,
    pub throttled_periods: Option<u64>,
    pub throttled_pct: Option<f64>,
    pub throttled_ms: Option<f64>,
    pub cpu_pressure: Option<PressureFrame>,
    pub memory_pressure: Option<PressureFrame>,
    pub io_pressure: Option<PressureFrame>,
    /// Bytes. memory_max and memory_high null for "max" (no limit) or no memory controller.
    pub memory_current: Option<u64>,
    pub memory_max: Option<u64>,
    pub memory_high: Option<u64>,
    /// memory.events in the interval: OOM kills, and times over memory.high.
    pub oom_kills: Option<u64>,
    pub high_events: Option<u64>,
    /// io.stat over the interval, per second.
    pub io_read_bps: Option<f64>,
    pub io_write_bps: Option<f64>,
    pub io_read_iops: Option<f64>,
    pub io_write_iops: Option<f64>,
    /// Processes directly in this cgroup, and in it and below it, and their threads.
    pub pids: Vec<u32>,
    pub procs_total: u32,
    pub threads_total: u32,
    /// Its busiest processes (CPU, eBPF's where measured), in it or below, most first.
    pub top_pids: Vec<u32>,
    /// eBPF, summed over its processes and those below: threads runnable (on a CPU or
    /// waiting for one), time-weighted, and time they waited for a CPU (ms).
    pub runnable_avg: Option<f64>,
    pub runq_wait_ms: Option<f64>,
}

/// An avg10 as the kernel prints it (two decimals), not as an f32 widens.
fn avg(v: f32) -> f64 {
    (f64::from(v) * 100.0).round() / 100.0
}

fn pressure(p: Option<&Pressure>, c: Option<&Pressure>, ns: Option<u64>) -> Option<PressureFrame> {
    let c = c?;
    let pct = |a: u64, b: u64, ns: u64| 100.0 * delta(a, b) as f64 * 1e3 / ns as f64;
    let p = p.filter(|_| ns.is_some());
    Some(PressureFrame {
        some_avg10: avg(c.some.avg10),
        full_avg10: c.full.map(|f| avg(f.avg10)),
        some_pct: p.map(|p| pct(p.some.total_us, c.some.total_us, ns.unwrap_or(1))),
        full_pct: match (p.and_then(|p| p.full), c.full) {
            (Some(a), Some(b)) => Some(pct(a.total_us, b.total_us, ns.unwrap_or(1))),
            _ => None,
        },
    })
}

/// The figures cgroupfs gives for `c` over the interval from `p` (None: first sight).
fn from_files(p: Option<&CgroupScan>, c: &CgroupScan, ns: Option<u64>) -> CgroupFrame {
    let secs = ns.map(|n| n as f64 / 1e9);
    let d = |f: fn(&CgroupScan) -> Option<u64>| Some(delta(f(p?)?, f(c)?));
    let (pc, cc) = (p.and_then(|p| p.cpu), c.cpu);
    let bw = |f: fn(&super::CpuStat) -> u64| match (pc, cc) {
        (Some(a), Some(b)) if a.bandwidth && b.bandwidth && ns.is_some() => {
            Some(delta(f(&a), f(&b)))
        }
        _ => None,
    };
    let periods = bw(|s| s.nr_periods);
    let throttled = bw(|s| s.nr_throttled);
    let io = |f: fn(&super::IoStat) -> u64| {
        let (a, b, s) = (p?.io?, c.io?, secs?);
        Some(delta(f(&a), f(&b)) as f64 / s)
    };
    CgroupFrame {
        path: c.path.clone(),
        name: readable(&c.path),
        cpu_pct: match (pc, cc, secs) {
            (Some(a), Some(b), Some(s)) => Some(delta(a.usage_usec, b.usage_usec) as f64 / 1e4 / s),
            _ => None,
        },
        cpu_limit: c
            .cpu_max
            .and_then(|(q, per)| Some(q? as f64 / per.max(1) as f64)),
        periods,
        throttled_periods: throttled,
        throttled_pct: match (periods, throttled) {
            (Some(n), Some(t)) if n > 0 => Some(100.0 * t as f64 / n as f64),
            _ => None,
        },
        throttled_ms: bw(|s| s.throttled_usec).map(|us| us as f64 / 1e3),
        cpu_pressure: pressure(
            p.and_then(|p| p.cpu_pressure.as_ref()),
            c.cpu_pressure.as_ref(),
            ns,
        ),
        memory_pressure: pressure(
            p.and_then(|p| p.memory_pressure.as_ref()),
            c.memory_pressure.as_ref(),
            ns,
        ),
        io_pressure: pressure(
            p.and_then(|p| p.io_pressure.as_ref()),
            c.io_pressure.as_ref(),
            ns,
        ),
        memory_current: c.memory_current,
        memory_max: c.memory_max.filter(|&b| b != super::NO_LIMIT),
        memory_high: c.memory_high.filter(|&b| b != super::NO_LIMIT),
        oom_kills: d(|s| s.oom_kill),
        high_events: d(|s| s.high_events),
        io_read_bps: io(|s| s.rbytes),
        io_write_bps: io(|s| s.wbytes),
        io_read_iops: io(|s| s.rios),
        io_write_iops: io(|s| s.wios),
        ..Default::default()
    }
}

/// The CPU a process row shows, eBPF's where measured (for picking the busiest).
fn proc_cpu(p: &ProcFrame) -> f64 {
    p.cpu_pct_true.or(p.cpu_pct_scan.get()).unwrap_or(0.0)
}

/// The cgroup `path` and its ancestors, itself first ("/a/b" -> "/a/b", "/a", "/").
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let cur = next?;
        next = match cur.rfind('/') {
            _ if cur == "/" => None,
            Some(0) => Some("/"),
            Some(i) => Some(&cur[..i]),
            None => None,
        };
        Some(cur)
    })
}

/// The Frame's `cgroups` from the Samples' cgroupfs reads and the interval's process rows
/// (empty without a cgroup read); `derive` places them.
pub fn cgroup_frames(prev: Option<&Sample>, cur: &Sample, procs: &[ProcFrame]) -> Vec<CgroupFrame> {
    let Some(cs) = cur.cgroups.as_ref() else {
        return Vec::new();
    };
    let ns = prev.map(|p| cur.mono_ns.saturating_sub(p.mono_ns).max(1));
    let prev_by: HashMap<&str, &CgroupScan> = prev
        .and_then(|p| p.cgroups.as_ref())
        .map(|s| s.cgroups.iter().map(|c| (c.path.as_str(), c)).collect())
        .unwrap_or_default();
    let top_depth = cs.cgroups.first().map_or(0, |c| depth(&c.path));
    let mut rows: Vec<CgroupFrame> = cs
        .cgroups
        .iter()
        .map(|c| {
            let mut r = from_files(prev_by.get(c.path.as_str()).copied(), c, ns);
            r.depth = depth(&c.path).saturating_sub(top_depth);
            r
        })
        .collect();
    let index: HashMap<&str, usize> = cs
        .cgroups
        .iter()
        .enumerate()
        .map(|(i, c)| (c.path.as_str(), i))
        .collect();
    let rows_by_pid: HashMap<u32, &ProcFrame> = procs.iter().map(|p| (p.pid, p)).collect();
    let bpf = cur.bpf.is_some();
    let mut busy: Vec<Vec<(f64, u32)>> = vec![Vec::new(); rows.len()];
    for p in &cur.procs {
        if p.cgroup.is_empty() {
            continue;
        }
        let row = rows_by_pid.get(&p.pid);
        let mut direct = true;
        for a in ancestors(&p.cgroup) {
            let Some(&i) = index.get(a) else {
                continue;
            };
            let r = &mut rows[i];
            if direct {
                r.pids.push(p.pid);
                direct = false;
            }
            r.procs_total += 1;
            r.threads_total += p.num_threads;
            if let Some(row) = row {
                busy[i].push((proc_cpu(row), p.pid));
                if bpf {
                    *r.runnable_avg.get_or_insert(0.0) += row.runnable_avg.get().unwrap_or(0.0);
                    *r.runq_wait_ms.get_or_insert(0.0) += row.runq_wait_ms.unwrap_or(0.0);
                }
            }
        }
    }
    for (r, mut b) in rows.iter_mut().zip(busy) {
        b.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        r.top_pids = b.iter().take(TOP_PIDS).map(|&(_, pid)| pid).collect();
        r.pids.sort_unstable();
        if bpf && r.runnable_avg.is_none() {
            (r.runnable_avg, r.runq_wait_ms) = (Some(0.0), Some(0.0));
        }
    }
    rows
}

fn depth(path: &str) -> u32 {
    path.split('/').filter(|s| !s.is_empty()).count() as u32
}

#[cfg(test)]
mod tests {
    use super::ancestors;

    #[test]
    fn ancestors_walk_up_to_the_root() {
        let v: Vec<&str> = ancestors("/a/b.slice/c").collect();
        assert_eq!(v, ["/a/b.slice/c", "/a/b.slice", "/a", "/"]);
        assert_eq!(ancestors("/").collect::<Vec<_>>(), ["/"]);
    }
}
