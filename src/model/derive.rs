//! derive(previous sample, sample) -> Frame: the one function that turns raw cumulative
//! counters into what the screen shows. Live and replay both call it, so a replay shows
//! exactly what the live screen showed. Pure: no I/O, no clocks.

use std::collections::HashMap;

use super::frame::{CpuFrame, DropsFrame, Frame, Runnable};
use super::procs::rows::{ScanRows, scan_rows};
use super::procs::threads::Interval;
use super::rates::delta;
use super::sample::{CpuTimes, Sample, SystemInfo};

fn delta128(prev: u128, cur: u128) -> u128 {
    if cur >= prev { cur - prev } else { cur }
}

/// The smallest gap (threads) and ratio that count as an undercount worth a warning.
const UNDERCOUNT_MIN_GAP: f64 = 1.0;
const UNDERCOUNT_MIN_RATIO: f64 = 1.5;

/// Ratio of true runnable threads to what the scan saw, when the scan undercounts.
pub fn undercount(true_avg: f64, scan_running: u32) -> Option<f64> {
    let scan = f64::from(scan_running);
    if true_avg - scan < UNDERCOUNT_MIN_GAP {
        return None;
    }
    let ratio = true_avg / scan.max(1.0);
    (ratio >= UNDERCOUNT_MIN_RATIO).then_some(ratio)
}

fn cpu_frame(prev: Option<&CpuTimes>, cur: &CpuTimes) -> CpuFrame {
    let p = prev.copied().unwrap_or_default();
    let d = |a: u64, b: u64| delta(a, b) as f64;
    let total = delta(p.total(), cur.total()).max(1) as f64;
    let pct = |x: f64| 100.0 * x / total;
    let idle = pct(d(p.idle, cur.idle));
    let iowait = pct(d(p.iowait, cur.iowait));
    CpuFrame {
        cpu: cur.cpu,
        util: if prev.is_some() {
            (100.0 - idle - iowait).clamp(0.0, 100.0)
        } else {
            0.0
        },
        user: pct(d(p.user, cur.user) + d(p.nice, cur.nice)),
        system: pct(d(p.system, cur.system)),
        irq: pct(d(p.irq, cur.irq)),
        softirq: pct(d(p.softirq, cur.softirq)),
        iowait,
        steal: pct(d(p.steal, cur.steal)),
        idle,
        ..Default::default()
    }
}

/// Turn the previous and the current Sample into the Frame for the interval between them.
/// With no previous sample (the very first tick), rates are zero.
pub fn derive(sys: &SystemInfo, prev: Option<&Sample>, cur: &Sample) -> Frame {
    let interval_ns = prev
        .map_or(0, |p| cur.mono_ns.saturating_sub(p.mono_ns))
        .max(1);
    let interval_s = interval_ns as f64 / 1e9;
    let tck = sys.clk_tck.max(1) as f64;

    // Per-CPU utilisation from /proc/stat.
    let prev_cpus: HashMap<u32, &CpuTimes> = prev
        .map(|p| p.stat.cpus.iter().map(|c| (c.cpu, c)).collect())
        .unwrap_or_default();
    let mut cpus: Vec<CpuFrame> = cur
        .stat
        .cpus
        .iter()
        .map(|c| cpu_frame(prev_cpus.get(&c.cpu).copied(), c))
        .collect();

    // Per-CPU run queues from BPF.
    let cur_bpf = cur.bpf.as_ref();
    let prev_bpf = prev.and_then(|p| p.bpf.as_ref());
    let mut true_avg = None;
    let mut true_max = None;
    if let Some(b) = cur_bpf {
        let prev_bc: HashMap<u32, _> = prev_bpf
            .map(|p| p.cpus.iter().map(|c| (c.cpu, c)).collect())
            .unwrap_or_default();
        let mut sum = 0.0;
        for bc in &b.cpus {
            let pc = prev_bc.get(&bc.cpu).copied().copied().unwrap_or_default();
            let avg = if prev.is_some() {
                delta128(pc.runq_area_ns, bc.runq_area_ns) as f64 / interval_ns as f64
            } else {
                f64::from(bc.runq_now)
            };
            sum += avg;
            let cf = match cpus.iter_mut().find(|c| c.cpu == bc.cpu) {
                Some(c) => c,
                None => {
                    cpus.push(CpuFrame {
                        cpu: bc.cpu,
                        ..Default::default()
                    });
                    cpus.last_mut().unwrap()
                }
            };
            cf.runq_avg = Some(avg);
            cf.runq_max = Some(bc.runq_max.max(bc.runq_now));
            cf.switches = Some(delta(pc.switches, bc.switches));
            cf.migrations = Some(delta(pc.migrations, bc.migrations));
        }
        cpus.sort_by_key(|c| c.cpu);
        true_avg = Some(sum);
        true_max = Some(f64::from(b.runq_peak).max(sum.ceil()));
    }

    // Processes and their threads: the scan, joined with the BPF counters.
    let at = Interval {
        ns: interval_ns,
        s: interval_s,
        tck,
        has_prev: prev.is_some(),
        bpf: cur_bpf.is_some(),
        boot_s: (cur.stat.uptime_s > 0.0).then(|| cur.wall_ns as f64 / 1e9 - cur.stat.uptime_s),
    };
    let ScanRows {
        mut procs,
        mut threads,
        scan_running,
    } = scan_rows(prev, cur, &at, sys.page_size.max(1) / 1024);
    // The kernel-lock parts of the split need lock:contention_begin (5.19); before it,
    // and in recordings made before they existed, they are not measured (null).
    if !super::features::is_known_measured(&cur.mode.features, "time_split_locks") {
        for p in &mut procs {
            p.time = p.time.without_locks();
        }
        for t in &mut threads {
            t.time = t.time.without_locks();
        }
    }

    // With a filter every panel is about the watched processes: their runnable threads
    // are their on-CPU plus run-queue time over the interval (no instantaneous max).
    let (true_avg, true_max) = match (&cur.filter, true_avg) {
        (Some(_), Some(_)) => (
            Some(procs.iter().filter_map(|p| p.runnable_avg.get()).sum()),
            None,
        ),
        _ => (true_avg, true_max),
    };
    let ghost_cpu_s = cur_bpf.map(|_| {
        procs
            .iter()
            .filter_map(|p| p.ghost_cpu_ms.get())
            .sum::<f64>()
            / 1e3
    });
    let top_view = cur.top_scan.as_ref().map(|t| {
        super::procs::top_view::top_view(t, true_avg, scan_running, ghost_cpu_s, interval_s)
    });
    let runnable = Runnable {
        true_avg,
        true_max,
        scan_running,
        scan_all_running: scan_running
            + top_view
                .as_ref()
                .map_or(0, |v| v.skipped_running + v.unlisted_running),
        top_view,
        procs_running: cur.stat.procs_running,
        procs_blocked: cur.stat.procs_blocked,
        loadavg: cur.stat.loadavg,
        undercount: true_avg.and_then(|t| undercount(t, scan_running)),
    };

    let (drops, drops_by_map) = match (cur_bpf, prev_bpf) {
        (Some(c), p) => {
            let pd = p.map(|p| p.drops.clone()).unwrap_or_default();
            let d = DropsFrame {
                threads: delta(pd.threads, c.drops.threads),
                procs: delta(pd.procs, c.drops.procs),
                sched_gaps: delta(pd.sched_gaps, c.drops.sched_gaps),
                lat_threads: delta(pd.lat_threads, c.drops.lat_threads),
                lat_stale: delta(pd.lat_stale, c.drops.lat_stale),
                ipi_senders: delta(pd.ipi_senders, c.drops.ipi_senders),
            };
            (
                d.threads + d.procs + d.sched_gaps + d.lat_threads + d.lat_stale + d.ipi_senders,
                d,
            )
        }
        _ => (0, DropsFrame::default()),
    };

    let mut frame = Frame {
        t: cur.wall_ns as f64 / 1e9,
        interval_s: if prev.is_some() { interval_s } else { 0.0 },
        mode: if cur.mode.bpf { "bpf" } else { "procfs" }.to_string(),
        filter: cur.filter.as_ref().map(filter_label),
        ghost_groups: super::procs::ghosts::ghost_groups(prev, cur),
        blocked: super::procs::blocked::blocked(cur),
        problems: cur.mode.problems.clone(),
        features: cur.mode.features.clone(),
        host: sys.host.clone(),
        kernel: sys.kernel.clone(),
        ncpus: sys.ncpus,
        uptime_s: cur.stat.uptime_s,
        seq: cur.seq,
        runnable,
        ctxt: prev.map_or(0, |p| delta(p.stat.ctxt, cur.stat.ctxt)),
        forks: prev.map_or(0, |p| delta(p.stat.forks, cur.stat.forks)),
        cpus,
        procs,
        threads,
        drops,
        drops_by_map,
        profile: cur.profile.as_ref().map(super::profile::ProfileFrame::of),
        own: cur.own.as_ref().map(|o| {
            let p = prev.and_then(|p| p.own.as_ref());
            super::own::derive(p, o, cur.mono_ns, interval_s)
        }),
        ..Default::default()
    };
    // The contention tables, the per-process futex columns, and the contention events
    // lost added to the Frame's total.
    // With a filter, the watched processes' part of each contention Sample
    // (scope.rs: before the tables are cut to their rows).
    let scoped = |s: Option<&super::contention::ContentionSample>| {
        let f = cur.filter.as_ref()?;
        s.map(|s| super::scope::scope_contention(s, &f.matched))
    };
    let (prev_c, cur_c) = (
        scoped(prev.and_then(|p| p.contention.as_ref())),
        scoped(cur.contention.as_ref()),
    );
    frame.contention = super::contention::frame::derive_contention(
        prev_c.as_ref().or(prev.and_then(|p| p.contention.as_ref())),
        cur_c.as_ref().or(cur.contention.as_ref()),
        prev.is_some(),
        &cur.procs,
        &mut frame.procs,
    );
    frame.drops += frame.contention.contention_drops.events_lost();
    place_irq(&mut frame, super::irq::irq_frame(prev, cur));
    frame.latency = super::latency::latency_frame(prev, cur);
    frame.cgroups = super::cgroup::cgroup_frames(prev, cur, &frame.procs);
    if let Some(f) = &cur.filter {
        super::scope::scope_to_filter(&mut frame, &f.matched);
    }
    frame
}

/// Put the interval's IPI/TLB parts where the Frame shows them: each CPU's into its
/// `cpus[]` row (a CPU the Frame has no row for is left out), the totals and senders at the
/// top, what each process caused into its row.
fn place_irq(frame: &mut Frame, parts: super::irq::IrqParts) {
    for (i, name, d) in parts.interrupts {
        if let Some(cf) = frame.cpus.iter_mut().find(|c| c.cpu == i) {
            cf.interrupts.insert(name, d);
        }
    }
    for part in parts.cpus {
        if let Some(cf) = frame.cpus.iter_mut().find(|c| c.cpu == part.cpu) {
            cf.ipi = part.ipi;
            cf.ipi_sent = part.ipi_sent;
            cf.tlb_shootdowns = part.tlb_shootdowns;
        }
    }
    frame.tlb = parts.tlb;
    frame.ipi_senders = parts.ipi_senders;
    if let Some(caused) = parts.caused {
        for row in &mut frame.procs {
            (
                row.ipis_caused,
                row.tlb_ipis_caused,
                row.tlb_shootdowns_caused,
            ) = caused.of(row.pid);
        }
    }
}

/// How the header names a filter: "pid 4242,4243", "comm postgres", or both.
pub fn filter_label(f: &crate::model::sample::FilterSpec) -> String {
    let mut parts = Vec::new();
    if !f.pids.is_empty() {
        let p: Vec<String> = f.pids.iter().map(u32::to_string).collect();
        parts.push(format!("pid {}", p.join(",")));
    }
    if let Some(c) = &f.comm {
        parts.push(format!("comm {c}"));
    }
    if let Some(c) = &f.cgroup {
        parts.push(format!("cgroup {c}"));
    }
    parts.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{incident, system};
    use crate::model::sample::{BpfCpu, BpfProc, BpfSample, BpfThread, ProcScan};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn rates_use_the_measured_interval() {
        let sys = system();
        let a = incident(10, true);
        let mut b = incident(12, true); // counters advanced two seconds' worth...
        b.mono_ns = a.mono_ns + 2_000_000_000; // ...over a measured two seconds
        let f = derive(&sys, Some(&a), &b);
        assert!(close(f.interval_s, 2.0));
        // Averages are per interval length, so they match the one-second fixture.
        assert!(close(f.runnable.true_avg.unwrap(), 11.2 + 10.4 + 9.1 + 6.7));
        assert_eq!(f.cpus[0].switches, Some(82_000)); // a count for the whole interval
        let tiflash = f.procs.iter().find(|p| p.pid == 4242).unwrap();
        assert!(close(tiflash.cpu_pct_true.unwrap(), 310.0));
        assert!(close(tiflash.cpu_pct_scan.get().unwrap(), 140.0));
    }

    #[test]
    fn undercount_ratio_and_threshold() {
        let f = derive(&system(), Some(&incident(1, true)), &incident(2, true));
        let r = f.runnable.undercount.unwrap();
        assert!(close(r, 37.4 / 4.0), "{r}");
        assert_eq!(undercount(2.9, 2), None, "less than one thread apart");
        assert_eq!(undercount(3.5, 3), None, "below 1.5x");
        assert!(
            close(undercount(3.0, 0).unwrap(), 3.0),
            "a scan that sees nothing"
        );
    }

    #[test]
    fn ghosts_and_their_cpu_are_accounted() {
        let f = derive(&system(), Some(&incident(1, true)), &incident(2, true));
        let t = f.procs.iter().find(|p| p.pid == 4242).unwrap();
        assert_eq!(t.ghost_threads, Some(3050));
        assert_eq!(t.threads_created, Some(3120));
        assert!(close(t.ghost_cpu_ms.get().unwrap(), 1650.0));
        // The CPU a per-thread scan misses: true less what its threads add up to (all
        // of the fixture's scanned ticks are its main thread's); the ghosts' share is
        // in that difference, not added to it.
        assert!(close(t.cpu_pct_scan_threads.get().unwrap(), 140.0));
        assert!(close(t.scan_miss.get().unwrap(), 310.0 - 140.0));
        let g = &f.ghost_groups[0];
        assert_eq!(
            (g.pid, g.name.as_str(), g.count),
            (4242, "DeltaMerge-*", 3000)
        );
    }

    #[test]
    fn a_process_that_vanished_is_reported_gone() {
        let sys = system();
        let a = incident(1, true);
        let mut b = incident(2, true);
        b.procs.retain(|p| p.pid != 1817);
        let f = derive(&sys, Some(&a), &b);
        let pg = f.procs.iter().find(|p| p.pid == 1817).expect("gone row");
        assert!(pg.gone);
        assert_eq!(pg.state, 'X');
        assert_eq!(&*pg.comm, "postgres", "named from the previous scan");
        // A process born and dead inside the interval comes from BPF alone.
        let sh = f.procs.iter().find(|p| p.pid == 5150).unwrap();
        assert!(sh.gone && &*sh.comm == "sh" && sh.ghost_threads == Some(1));
    }

    #[test]
    fn counters_that_go_backwards_restart_from_zero() {
        assert_eq!(delta(10, 15), 5);
        assert_eq!(
            delta(u64::MAX - 1, 3),
            3,
            "a reset (or wrap) counts from zero"
        );
        let sys = system();
        let mut a = incident(5, true);
        let b = incident(6, true);
        // The BPF side was restarted between the samples: its counters are smaller.
        a.bpf = Some(BpfSample {
            cpus: vec![BpfCpu {
                cpu: 0,
                switches: u64::MAX / 2,
                runq_area_ns: u128::MAX / 2,
                ..Default::default()
            }],
            threads: vec![BpfThread {
                tid: 4242,
                tgid: 4242,
                oncpu_ns: u64::MAX / 2,
                ..Default::default()
            }],
            procs: vec![BpfProc {
                tgid: 4242,
                created: u64::MAX / 2,
                ..Default::default()
            }],
            ..Default::default()
        });
        let f = derive(&sys, Some(&a), &b);
        assert_eq!(f.cpus[0].switches, Some(41_000 * 6));
        let t = f.procs.iter().find(|p| p.pid == 4242).unwrap();
        assert_eq!(t.threads_created, Some(3120 * 6));
        assert!(t.cpu_pct_true.unwrap().is_finite());
    }

    #[test]
    fn reused_pid_does_not_inherit_the_old_cpu_time() {
        let sys = system();
        let a = incident(1, true);
        let mut b = incident(2, true);
        let p: &mut ProcScan = b.procs.iter_mut().find(|p| p.pid == 1817).unwrap();
        p.starttime += 1; // a new process with the same PID
        let f = derive(&sys, Some(&a), &b);
        let pg = f.procs.iter().find(|p| p.pid == 1817).unwrap();
        // Its first interval: nothing to take a delta from, so not measured.
        assert_eq!(pg.cpu_pct_scan.get(), None);
        assert_eq!(pg.scan_miss.get(), None);
    }

    #[test]
    fn procfs_only_has_no_truth() {
        let f = derive(&system(), Some(&incident(1, false)), &incident(2, false));
        assert_eq!(f.mode, "procfs");
        assert_eq!(f.runnable.true_avg, None);
        assert!(
            f.procs
                .iter()
                .all(|p| p.cpu_pct_true.is_none() && p.ghost_threads.is_none())
        );
        assert!(!f.problems.is_empty());
    }

    #[test]
    fn first_sample_has_zero_rates() {
        let f = derive(&system(), None, &incident(3, true));
        assert_eq!(f.interval_s, 0.0);
        assert!(f.procs.iter().all(|p| p.threads_created == Some(0)));
    }

    /// Before 5.19 (no lock:contention_begin), or in a recording from before the lock
    /// parts: they are null, the other parts are as measured and still add up.
    #[test]
    fn lock_parts_are_null_where_not_measured() {
        let (prev, mut cur) = (incident(1, true), incident(2, true));
        let with = derive(&system(), Some(&prev), &cur);
        let lock = |f: &Frame| {
            f.threads
                .iter()
                .map(|t| serde_json::to_value(t.time).unwrap())
                .collect::<Vec<_>>()
        };
        let measured = lock(&with);
        assert!(measured.iter().any(|t| t["lock"].as_f64() > Some(0.0)));
        cur.mode.features.clear();
        let without = derive(&system(), Some(&prev), &cur);
        for (a, b) in measured.iter().zip(lock(&without)) {
            assert!(b["lock"].is_null() && b["mmap_lock"].is_null(), "{b}");
            assert_eq!(a["io"], b["io"]);
        }
        for (a, b) in with.threads.iter().zip(&without.threads) {
            let locks = a.time.part(3) + a.time.part(4);
            assert!((a.time.total() - locks - b.time.total()).abs() < 1e-4);
        }
    }
}

#[cfg(test)]
mod place_irq_tests {
    use super::*;
    use crate::model::frame::ProcFrame;
    use crate::model::irq::{IrqCaused, IrqCpuPart, IrqParts, ProcIpi, TlbFrame};

    /// Each part lands in its row: a CPU's by its number, a process's by its pid, a CPU
    /// the Frame has no row for is left out, and a process nobody saw cause one gets 0.
    #[test]
    fn parts_land_in_their_rows() {
        let mut f = Frame {
            cpus: (0..2)
                .map(|cpu| CpuFrame {
                    cpu,
                    ..Default::default()
                })
                .collect(),
            procs: [42, 43]
                .map(|pid| ProcFrame {
                    pid,
                    ..Default::default()
                })
                .to_vec(),
            ..Default::default()
        };
        let by_pid = ProcIpi {
            ipis: 3,
            tlb_ipis: 2,
            tlb_shootdowns: 1,
        };
        place_irq(
            &mut f,
            IrqParts {
                interrupts: vec![(1, "TLB".into(), 33), (5, "TLB".into(), 9)],
                cpus: vec![IrqCpuPart {
                    cpu: 1,
                    tlb_shootdowns: Some(12),
                    ..Default::default()
                }],
                tlb: Some(TlbFrame::default()),
                ipi_senders: Vec::new(),
                caused: Some(IrqCaused {
                    sent: true,
                    caused: false,
                    per_pid: [(42, by_pid)].into_iter().collect(),
                }),
            },
        );
        assert_eq!(f.cpus[1].interrupts["TLB"], 33);
        assert!(f.cpus[0].interrupts.is_empty());
        assert_eq!(
            (f.cpus[0].tlb_shootdowns, f.cpus[1].tlb_shootdowns),
            (None, Some(12))
        );
        assert!(f.tlb.is_some());
        let caused = |i: usize| {
            let p = &f.procs[i];
            (
                p.ipis_caused.get(),
                p.tlb_ipis_caused.get(),
                p.tlb_shootdowns_caused.get(),
            )
        };
        assert_eq!(caused(0), (Some(3), Some(2), None));
        assert_eq!(caused(1), (Some(0), Some(0), None));
    }
}
