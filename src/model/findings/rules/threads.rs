//! Thread and CPU rules: thread_churn, scan_undercount, cpu_saturation, sched_stall.

use super::*;

pub(super) fn thread_churn(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
    for p in &fr.procs {
        let (Some(created), Some(exited)) = (p.threads_created, p.threads_exited) else {
            continue;
        };
        let rate = created as f64 / secs;
        if rate < CHURN_CREATED_PER_S || (exited as f64) < CHURN_EXIT_SHARE * created as f64 {
            continue;
        }
        let ghost_pct = p.ghost_cpu_ms.get().unwrap_or(0.0) / 10.0 / secs;
        let tlb = p.tlb_shootdowns_caused.get().unwrap_or(0) as f64 / secs;
        let futex_ms = p.futex_wait_ms.get().unwrap_or(0.0) / secs;
        let figures = fig(&[
            ("created_per_s", rate),
            ("exited_per_s", exited as f64 / secs),
            (
                "ghost_threads_per_s",
                p.ghost_threads.unwrap_or(0) as f64 / secs,
            ),
            ("ghost_cpu_pct", ghost_pct),
            ("futex_wait_ms_per_s", futex_ms),
            ("tlb_shootdowns_per_s", tlb),
        ]);
        // Where its threads queue, when the waiters' stacks were named.
        let evidence = stack_cache_evidence(fr, p.pid, secs);
        let head = format!(
            "{} creates {:.0} short-lived threads/s; their ghosts burn {:.0}% CPU no thread \
             row can show (top counts it in the process, top -H on its main thread)",
            name(fr, p.pid),
            rate,
            ghost_pct
        );
        out.push(Finding {
            kind: "thread_churn",
            severity: if ghost_pct >= CHURN_GHOST_CPU_CRIT_PCT {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: vec![p.pid],
            evidence_at: head.len(),
            summary: head + ": reuse threads (a pool) instead of creating one per task",
            evidence,
            figures,
            view: FindingView::Main,
            key: key(&[u64::from(p.pid)]),
            ..Default::default()
        });
    }
}

pub(super) fn scan_undercount(fr: &Frame, out: &mut Vec<Finding>) {
    let r = &fr.runnable;
    let Some(avg) = r.true_avg else { return };
    let scan = f64::from(r.scan_running);
    let gap = avg - scan;
    if gap < UNDERCOUNT_MIN_GAP || avg < UNDERCOUNT_RATIO * scan.max(1e-9) && scan > 0.0 {
        return;
    }
    let ghosts: u64 = fr.procs.iter().filter_map(|p| p.ghost_threads).sum();
    let ghost_ms: f64 = fr.procs.iter().filter_map(|p| p.ghost_cpu_ms.get()).sum();
    let secs = fr.interval_s.max(1e-3);
    let mut pids: Vec<_> = fr.procs.iter().filter(|p| p.miss() > 0.0).collect();
    pids.sort_by(|a, b| b.miss().total_cmp(&a.miss()).then(a.pid.cmp(&b.pid)));
    let mut figures = fig(&[
        ("true_avg", avg),
        ("scan_running", scan),
        ("gap", gap),
        ("ghost_threads_per_s", ghosts as f64 / secs),
        ("ghost_cpu_pct", ghost_ms / 10.0 / secs),
    ]);
    // Why, when the scan is top's view: the running threads top's order could not see.
    let why = match &r.top_view {
        Some(tv) => {
            figures.extend(fig(&[
                ("unlisted_running", f64::from(tv.unlisted_running)),
                ("skipped_running", f64::from(tv.skipped_running)),
                ("vanished", f64::from(tv.vanished)),
                ("top_scan_s", tv.top_s),
            ]));
            if let Some(o) = tv.other {
                figures.extend(fig(&[("other", o)]));
            }
            format!(
                " (of the running threads, {} were born after top listed their process, {} \
                 came after a thread that had ended and {} ended before their turn)",
                tv.unlisted_running, tv.skipped_running, tv.vanished
            )
        }
        None => String::new(),
    };
    out.push(Finding {
        kind: "scan_undercount",
        severity: Severity::Info,
        pids: pids.iter().take(3).map(|p| p.pid).collect(),
        summary: format!(
            "{avg:.1} threads were runnable on average but a /proc scan saw {}{why}: short \
             bursts and short-lived threads hide from top; trust the eBPF figures",
            r.scan_running
        ),
        figures,
        view: FindingView::Main,
        key: 0,
        ..Default::default()
    });
}

pub(super) fn cpu_saturation(fr: &Frame, out: &mut Vec<Finding>) {
    let Some(avg) = fr.runnable.true_avg else {
        return;
    };
    let n = f64::from(fr.ncpus.max(1));
    if avg < SATURATION_PER_CPU * n || avg - n < SATURATION_MIN_EXCESS {
        return;
    }
    let mut w: Vec<_> = fr
        .procs
        .iter()
        .filter_map(|p| Some((p.pid, p.runq_wait_ms?)))
        .filter(|&(_, ms)| ms > 0.0)
        .collect();
    w.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let secs = fr.interval_s.max(1e-3);
    let top = w
        .first()
        .map(|&(pid, ms)| format!("; {} waits most ({:.0} ms/s)", name(fr, pid), ms / secs))
        .unwrap_or_default();
    out.push(Finding {
        kind: "cpu_saturation",
        severity: if avg >= SATURATION_CRIT_PER_CPU * n {
            Severity::Critical
        } else {
            Severity::Warning
        },
        pids: w.iter().take(3).map(|&(p, _)| p).collect(),
        summary: format!(
            "{avg:.1} runnable threads for {} CPUs{top}: fewer busy threads, or more CPUs",
            fr.ncpus
        ),
        figures: fig(&[
            ("runnable_avg", avg),
            ("ncpus", n),
            (
                "top_runq_wait_ms_per_s",
                w.first().map_or(0.0, |&(_, ms)| ms / secs),
            ),
        ]),
        view: FindingView::Main,
        key: 0,
        ..Default::default()
    });
}

pub(super) fn sched_stall(fr: &Frame, out: &mut Vec<Finding>) {
    let Some(l) = &fr.latency else { return };
    // The worst thread per process.
    let mut seen = std::collections::BTreeSet::new();
    for t in &l.threads {
        let ms = t.max_us / 1e3;
        if ms < SCHED_STALL_MS || !seen.insert(t.pid) {
            continue;
        }
        let cpu = worst_cpu(fr, t.max_at);
        let when = clock(t.max_at);
        out.push(Finding {
            kind: "sched_stall",
            severity: if ms >= SCHED_STALL_CRIT_MS {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: vec![t.pid],
            tids: vec![t.tid],
            cpus: cpu.into_iter().collect(),
            summary: format!(
                "{}({}) waited {ms:.0} ms runnable for a CPU at {when} UTC{}: CPUs busy \
                 with other threads; lower their priority or give this one a CPU",
                t.comm,
                t.tid,
                cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default()
            ),
            figures: fig(&[("max_wait_ms", ms), ("p99_us", t.p99_us), ("at", t.max_at)]),
            view: FindingView::Latency,
            key: key(&[u64::from(t.pid)]),
            ..Default::default()
        });
    }
}

/// The CPU whose worst wake-up latency happened at `at` (the thread's worst).
pub(super) fn worst_cpu(fr: &Frame, at: f64) -> Option<u32> {
    let l = fr.latency.as_ref()?;
    l.cpus
        .iter()
        .filter_map(|c| Some((c.cpu, (c.max_at? - at).abs())))
        .filter(|&(_, d)| d < 1e-6)
        .map(|(c, _)| c)
        .next()
}

pub(super) fn clock(t: f64) -> String {
    let s = t.max(0.0);
    let day = s % 86_400.0;
    format!(
        "{:02}:{:02}:{:06.3}",
        (day / 3600.0) as u32,
        (day % 3600.0 / 60.0) as u32,
        day % 60.0
    )
}
