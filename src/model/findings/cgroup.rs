//! Findings about cgroups (v2), from cgroupfs alone, so procfs-only mode has them too:
//! `cpu_throttled`, `memory_pressure`, `io_pressure`. Each names the cgroup (`cgroup`)
//! and its busiest processes (`pids`). docs/findings.md lists the thresholds.

use crate::model::cgroup::{CgroupFrame, PressureFrame};
use crate::model::findings::{Finding, FindingView, Severity, fig};
use crate::model::frame::Frame;

/// cpu_throttled: the share of its cpu.max periods in which a cgroup ran out of quota.
/// One period in five (the bar) means its threads are held off the CPU every
/// half-second or so at the default 100 ms period: requests pay whole periods of delay.
pub const THROTTLED_PCT: f64 = 20.0;
/// Critical when it is throttled in most periods: it lives at its quota.
pub const THROTTLED_CRIT_PCT: f64 = 50.0;
/// ...over at least this many periods in the interval (ten a second at the default
/// period): a cgroup that woke for two periods and hit the quota in one is not a pattern.
pub const THROTTLED_MIN_PERIODS: u64 = 5;
/// ...while the machine had this much idle CPU (idle + iowait, in CPUs): the quota, not
/// the machine, is what it waits for ("slow but not busy"). Half a CPU is room for the
/// throttled time of a cgroup at the bar on a one-CPU quota with room to spare.
pub const IDLE_CPUS_MIN: f64 = 0.5;

/// memory_pressure and io_pressure: the `full` 10-second average, percent: the share of
/// time in which every non-idle task of the cgroup was stalled at once on memory
/// (reclaim, refaults, memory.high throttling) or on I/O, so the cgroup did no work at all.
/// `some` is not judged: one task waiting on a disk is an ordinary day. 10% full is a
/// tenth of the cgroup's time lost whole, 100 ms every second: latency a user sees. The
/// kernel's own PSI monitors are set at this kind of level (Documentation/accounting/
/// psi.rst's example triggers on 150 ms of 1 s), well under the 60% full at which
/// systemd-oomd's default starts killing (ManagedOOMMemoryPressureLimit).
pub const PRESSURE_FULL_PCT: f64 = 10.0;
/// Critical at systemd-oomd's default kill threshold.
pub const PRESSURE_CRIT_PCT: f64 = 60.0;

fn key(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// "name(pid), name(pid)" of a cgroup's busiest processes.
fn busiest(fr: &Frame, c: &CgroupFrame) -> String {
    let names: Vec<String> = c
        .top_pids
        .iter()
        .take(3)
        .map(|&pid| {
            fr.procs.iter().find(|p| p.pid == pid).map_or_else(
                || format!("pid {pid}"),
                |p| format!("{}({pid})", p.comm.as_ref()),
            )
        })
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("; busiest {}", names.join(", "))
    }
}

fn finding(fr: &Frame, c: &CgroupFrame, kind: &'static str, crit: bool) -> Finding {
    Finding {
        kind,
        severity: if crit {
            Severity::Critical
        } else {
            Severity::Warning
        },
        pids: c.top_pids.iter().take(3).copied().collect(),
        cgroup: Some(c.path.clone()),
        view: FindingView::Cgroups,
        key: key(&c.path),
        summary: busiest(fr, c),
        ..Default::default()
    }
}

/// Idle CPUs over the interval (idle and iowait of every CPU).
fn idle_cpus(fr: &Frame) -> f64 {
    fr.cpus.iter().map(|c| c.idle + c.iowait).sum::<f64>() / 100.0
}

fn cpu_throttled(fr: &Frame, out: &mut Vec<Finding>) {
    let idle = idle_cpus(fr);
    if idle < IDLE_CPUS_MIN {
        return;
    }
    for c in &fr.cgroups {
        let (Some(pct), Some(n)) = (c.throttled_pct, c.periods) else {
            continue;
        };
        if pct < THROTTLED_PCT || n < THROTTLED_MIN_PERIODS {
            continue;
        }
        let mut f = finding(fr, c, "cpu_throttled", pct >= THROTTLED_CRIT_PCT);
        let limit = c
            .cpu_limit
            .map_or_else(String::new, |l| format!(" (cpu.max {l:.2} CPUs)"));
        f.summary = format!(
            "{} throttled in {pct:.0}% of its periods{limit} while {idle:.1} CPUs sat idle{}: \
             raise cpu.max or spread the work",
            c.name, f.summary
        );
        f.figures = fig(&[
            ("throttled_pct", pct),
            (
                "throttled_ms_per_s",
                c.throttled_ms.unwrap_or(0.0) / fr.interval_s.max(1e-3),
            ),
            ("cpu_pct", c.cpu_pct.unwrap_or(0.0)),
            ("cpu_limit", c.cpu_limit.unwrap_or(0.0)),
            ("idle_cpus", idle),
        ]);
        out.push(f);
    }
}

/// A cgroup whose `full` avg10 is over the bar, unless one below it is too (pressure adds
/// up the tree: the deepest cgroup over the bar is the one to name).
fn pressured(
    fr: &Frame,
    get: fn(&CgroupFrame) -> Option<PressureFrame>,
) -> Vec<(&CgroupFrame, f64)> {
    let over: Vec<(&CgroupFrame, f64)> = fr
        .cgroups
        .iter()
        .filter_map(|c| Some((c, get(c)?.full_avg10?)))
        .filter(|&(_, v)| v >= PRESSURE_FULL_PCT)
        .collect();
    over.iter()
        .filter(|(c, _)| {
            let below = format!("{}/", c.path.trim_end_matches('/'));
            !over.iter().any(|(d, _)| d.path.starts_with(&below))
        })
        .copied()
        .collect()
}

fn memory_pressure(fr: &Frame, out: &mut Vec<Finding>) {
    for (c, full) in pressured(fr, |c| c.memory_pressure) {
        let mut f = finding(fr, c, "memory_pressure", full >= PRESSURE_CRIT_PCT);
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        let limit = match (c.memory_high, c.memory_max) {
            (Some(h), _) => format!(", memory.high {:.2} GiB", gib(h)),
            (None, Some(m)) => format!(", memory.max {:.2} GiB", gib(m)),
            _ => String::new(),
        };
        f.summary = format!(
            "{}: all its tasks stalled on memory {full:.0}% of the time (full avg10){limit}{}: \
             raise memory.high/max or cut its memory use",
            c.name, f.summary
        );
        f.figures = fig(&[
            ("memory_full_avg10", full),
            (
                "memory_current_mib",
                c.memory_current.unwrap_or(0) as f64 / 1048576.0,
            ),
            ("high_events", c.high_events.unwrap_or(0) as f64),
            ("oom_kills", c.oom_kills.unwrap_or(0) as f64),
        ]);
        out.push(f);
    }
}

fn io_pressure(fr: &Frame, out: &mut Vec<Finding>) {
    for (c, full) in pressured(fr, |c| c.io_pressure) {
        let mut f = finding(fr, c, "io_pressure", full >= PRESSURE_CRIT_PCT);
        f.summary = format!(
            "{}: all its tasks waited on I/O {full:.0}% of the time (full avg10){}: \
             less I/O, a faster device, or io.max/io.weight on what competes with it",
            c.name, f.summary
        );
        f.figures = fig(&[
            ("io_full_avg10", full),
            ("io_read_bytes_per_s", c.io_read_bps.unwrap_or(0.0)),
            ("io_write_bytes_per_s", c.io_write_bps.unwrap_or(0.0)),
        ]);
        out.push(f);
    }
}

/// The cgroup findings one frame shows.
pub fn observe(fr: &Frame, out: &mut Vec<Finding>) {
    cpu_throttled(fr, out);
    memory_pressure(fr, out);
    io_pressure(fr, out);
}
