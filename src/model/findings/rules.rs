//! The rules: which patterns one Frame shows, before hysteresis (`findings::judge`).
//! Every threshold is a named constant with the reason beside it; README "Findings"
//! lists them. A rule that needs eBPF figures sees None in procfs-only mode and stays
//! silent: it never guesses from the scan.

use crate::model::findings::evidence::stack_cache_evidence;
use crate::model::findings::{Finding, FindingView, Severity, fig};
use crate::model::frame::Frame;

/// thread_churn: threads created per second by one process. A thread pool creates none
/// once warm; services that spawn a thread per request stay well under this. Seed 000
/// created thousands a second.
pub const CHURN_CREATED_PER_S: f64 = 200.0;
/// ...and most of them must be short-lived: exits at least half the creations (a
/// process starting a big pool creates many once and keeps them).
pub const CHURN_EXIT_SHARE: f64 = 0.5;
/// Critical when the ghost threads (born and dead between scans) burn this much CPU,
/// percent of one CPU: work no thread's own counter shows. (A per-process scan, plain
/// top, sees it: a process's own counter holds its exited threads' CPU; procps top -H
/// shows that counter on the main thread's row.)
pub const CHURN_GHOST_CPU_CRIT_PCT: f64 = 50.0;

/// scan_undercount: true runnable / what the scan saw. The Frame marks 1.5 already;
/// a finding asks for twice, so the scan is plainly wrong, not just unlucky.
pub const UNDERCOUNT_RATIO: f64 = 2.0;
/// ...and at least this many threads missing: one thread is a coin toss of a scan
/// landing while a short burst runs.
pub const UNDERCOUNT_MIN_GAP: f64 = 1.5;

/// cpu_saturation: runnable threads per CPU, time-averaged. Above 1 someone waits;
/// 1.25 means threads wait for a CPU a fifth of the time on average.
pub const SATURATION_PER_CPU: f64 = 1.25;
/// ...and at least one whole thread more than CPUs (on 1-2 CPUs, 1.25x is a fraction).
pub const SATURATION_MIN_EXCESS: f64 = 1.0;
/// Critical at twice as many runnable threads as CPUs.
pub const SATURATION_CRIT_PER_CPU: f64 = 2.0;

/// hot_lock: contended waits per second on one futex word. Each is a sleep and a wake,
/// two context switches; fewer than this costs little.
pub const HOT_LOCK_WAITS_PER_S: f64 = 100.0;
/// ...and more than one thread wants it at once, shown either way: its waiters sleep
/// more than one thread's worth of time (wait ms per ms: a queue; one thread sleeping
/// on its own wait never exceeds 1), or waits that found the word changed (EAGAIN)
/// are at least as many as those that slept (other threads took and released it in
/// between: a handoff between one waiter and one waker has almost none).
pub const HOT_LOCK_WAIT_SHARE: f64 = 1.0;
pub const HOT_LOCK_EAGAIN_PER_WAIT: f64 = 1.0;
/// ...or this many threads slept on it within the interval, in a process that wants CPU
/// (its threads runnable, on a CPU or waiting for one, at least STORM_MAX_CPU_PCT of a
/// thread on average: below it, parked threads woken for nothing are seed 003's idle
/// storm, not a lock; runnable, not CPU, as a storm starved of CPU by a busy machine got
/// 6% of one and still made 990 waits/s). A queue of short waits, or one whose holder waits
/// for a CPU between them, sleeps less than a thread's worth in all: 4 threads storming
/// one mutex on 2 CPUs made 1,000-10,000 waits/s with 0.7-0.8 threads asleep (and
/// EAGAINs are not counted without the per-call hooks). A handoff between one waiter
/// and one waker (a ticker, a pthread_join) has one.
pub const HOT_LOCK_MIN_WAITERS: u32 = 2;
/// ...the waits are ended by wakes on the word (woken >= half the waits), not by
/// timeouts: a timed wait that expires has nobody waking it.
pub const HOT_LOCK_WOKEN_SHARE: f64 = 0.5;
/// ...and short: a waiter for a lock waits for critical sections to pass (micro- to
/// milliseconds); idle workers on a condition variable sleep until work comes.
pub const HOT_LOCK_MAX_AVG_WAIT_MS: f64 = 20.0;
/// Critical when waiters sleep this many threads' worth of time (a real convoy).
pub const HOT_LOCK_CRIT_SHARE: f64 = 4.0;

/// idle_futex_storm: futex calls per second by one process. Seed 003's idle Go ticker
/// made thousands; a process that is really idle makes a handful.
pub const STORM_CALLS_PER_S: f64 = 1000.0;
/// Without the per-call hooks (the default) only waits that slept are counted: each
/// park-and-wake cycle is a wait that slept and the wake call that ended it, so a
/// slept wait stands for two calls (seed 003's 1 kHz ticker: 1000 slept, 2000 calls).
pub const STORM_CALLS_PER_SLEPT: f64 = 2.0;
/// ...while it uses little CPU (percent of one CPU): a busy program may call futex
/// often for real work; an idle one should not.
pub const STORM_MAX_CPU_PCT: f64 = 20.0;

/// mmap_lock_stall: the longest wait for a process's mmap_lock held by another
/// process. A page fault takes microseconds; 10 ms is a stall a user can feel.
pub const MMAP_STALL_MAX_WAIT_MS: f64 = 10.0;
/// Critical at 100 ms (seed 002's stalls were hundreds of ms).
pub const MMAP_STALL_CRIT_MS: f64 = 100.0;

/// sched_stall: a thread waited this long runnable (from its wake-up or preemption) to
/// running. A few scheduler
/// slices (a few ms each) is normal under load; 50 ms is a visible hiccup.
pub const SCHED_STALL_MS: f64 = 50.0;
/// Critical at 250 ms (a request timeout's worth).
pub const SCHED_STALL_CRIT_MS: f64 = 250.0;

/// tlb_storm: remote TLB shootdowns per second caused by one process. Each interrupts
/// another CPU for a few microseconds; an ordinary program causes tens.
pub const TLB_STORM_PER_S: f64 = 1000.0;
/// Critical at 20,000/s: seed 000's storm, CPUs spend percent of their time flushing.
pub const TLB_STORM_CRIT_PER_S: f64 = 20_000.0;

/// lost_data: scheduler events the kernel skipped per second. A skipped switch costs one
/// latency sample, no CPU time (that is read from the kernel's own counter). On 6.18 in a
/// VM an idle machine shows one to three a second that perf's own trace misses too
/// (idle-to-kworker switches), and CI saw six in half a second while processes exited;
/// fifty a second is a kernel or collector dropping events in earnest. Any event a full
/// map dropped counts at once.
pub const LOST_SCHED_GAPS_PER_S: f64 = 50.0;
/// ... and at least this many in the interval, so a short interval (`-d 0.1`) is not
/// judged on a burst of a few.
pub const LOST_SCHED_GAPS_MIN: f64 = 20.0;

/// The skipped scheduler events that make an interval of `secs` lose data.
pub fn lost_gaps_threshold(secs: f64) -> f64 {
    (LOST_SCHED_GAPS_PER_S * secs).max(LOST_SCHED_GAPS_MIN)
}

/// Stable key of a candidate (a process, a word, a lock), mixed from its parts.
fn key(parts: &[u64]) -> u64 {
    parts.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &p| {
        (h ^ p).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The candidates one frame shows.
pub fn observe(fr: &Frame) -> Vec<Finding> {
    let mut out = Vec::new();
    // From cgroupfs: procfs-only mode has these too.
    super::cgroup::observe(fr, &mut out);
    if fr.mode != "bpf" {
        return out;
    }
    let secs = fr.interval_s.max(1e-3);
    thread_churn(fr, secs, &mut out);
    scan_undercount(fr, &mut out);
    cpu_saturation(fr, &mut out);
    hot_lock(fr, secs, &mut out);
    idle_futex_storm(fr, secs, &mut out);
    mmap_lock_stall(fr, &mut out);
    sched_stall(fr, &mut out);
    tlb_storm(fr, secs, &mut out);
    lost_data(fr, &mut out);
    out
}

/// `pids` without repeats, in order.
fn dedup(pids: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(pids.len());
    for &p in pids {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn name(fr: &Frame, pid: u32) -> String {
    fr.procs
        .iter()
        .find(|p| p.pid == pid)
        .map(|p| format!("{}({pid})", p.comm.as_ref()))
        .unwrap_or_else(|| format!("pid {pid}"))
}

fn thread_churn(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
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

fn scan_undercount(fr: &Frame, out: &mut Vec<Finding>) {
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

fn cpu_saturation(fr: &Frame, out: &mut Vec<Finding>) {
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

fn hot_lock(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
    for w in &fr.contention.futexes {
        let rate = w.contended as f64 / secs;
        let share = w.total_wait_ms / 1e3 / secs;
        let avg_ms = w.avg_wait_us / 1e3;
        // EAGAINs are counted only when every futex call is hooked (--futex-calls);
        // otherwise the wait share and the waiters tell a queue.
        let waiters = w.waiters.unwrap_or(0);
        let works = fr
            .procs
            .iter()
            .find(|p| p.pid == w.pid)
            .and_then(|p| p.runnable_avg.get())
            .is_some_and(|r| r * 100.0 >= STORM_MAX_CPU_PCT);
        let queue = share > HOT_LOCK_WAIT_SHARE
            || (waiters >= HOT_LOCK_MIN_WAITERS && works)
            || w.eagain
                .is_some_and(|e| e as f64 >= HOT_LOCK_EAGAIN_PER_WAIT * w.contended as f64);
        if rate < HOT_LOCK_WAITS_PER_S
            || !queue
            || (w.woken as f64) < HOT_LOCK_WOKEN_SHARE * w.contended as f64
            || avg_ms > HOT_LOCK_MAX_AVG_WAIT_MS
        {
            continue;
        }
        let at = if w.caller.is_empty() {
            String::new()
        } else {
            format!(" at {}", w.caller)
        };
        out.push(Finding {
            kind: "hot_lock",
            severity: if share >= HOT_LOCK_CRIT_SHARE {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: vec![w.pid],
            addrs: vec![format!("{}:{:#x}", w.pid, w.uaddr)],
            summary: format!(
                "futex {:x} in {}({}){at}: {rate:.0} waits/s{by}, {retries}{share:.1} threads \
                 asleep on it: shorten the critical section or shard the lock",
                w.uaddr,
                w.comm,
                w.pid,
                by = if waiters >= HOT_LOCK_MIN_WAITERS {
                    format!(" by {waiters} threads")
                } else {
                    String::new()
                },
                retries = w
                    .eagain
                    .map(|e| format!("{:.0} retries/s, ", e as f64 / secs))
                    .unwrap_or_default(),
            ),
            figures: {
                let mut f = fig(&[
                    ("contended_per_s", rate),
                    ("wait_ms_per_s", w.total_wait_ms / secs),
                    ("avg_wait_us", w.avg_wait_us),
                    ("max_wait_us", w.max_wait_us),
                    ("woken_per_s", w.woken as f64 / secs),
                    ("waiters_avg", share),
                    ("waiters", f64::from(waiters)),
                ]);
                if let Some(e) = w.eagain {
                    f.extend(fig(&[("eagain_per_s", e as f64 / secs)]));
                }
                f
            },
            view: FindingView::Futexes,
            key: key(&[u64::from(w.pid), w.uaddr]),
            ..Default::default()
        });
    }
}

fn idle_futex_storm(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
    for p in &fr.procs {
        // Its calls when every call is hooked, else its waits that slept.
        let (rate, what, figure) = match (p.futex_calls.get(), p.futex_slept.get()) {
            (Some(calls), _) => {
                let r = calls as f64 / secs;
                (r, "futex calls", ("futex_calls_per_s", r))
            }
            (None, Some(slept)) => {
                let r = slept as f64 / secs;
                (
                    r * STORM_CALLS_PER_SLEPT,
                    "futex waits that slept",
                    ("futex_slept_per_s", r),
                )
            }
            (None, None) => continue,
        };
        let Some(cpu) = p.cpu_pct_true.or(p.cpu_pct_scan.get()) else {
            continue;
        };
        if rate < STORM_CALLS_PER_S || cpu > STORM_MAX_CPU_PCT {
            continue;
        }
        out.push(Finding {
            kind: "idle_futex_storm",
            severity: Severity::Warning,
            pids: vec![p.pid],
            summary: format!(
                "{} makes {:.0} {what}/s while using {cpu:.1}% CPU: a timer or an \
                 idle scheduler wakes threads for nothing; tick less often or park idle workers",
                name(fr, p.pid),
                figure.1,
            ),
            figures: fig(&[
                figure,
                ("cpu_pct", cpu),
                (
                    "futex_wait_ms_per_s",
                    p.futex_wait_ms.get().unwrap_or(0.0) / secs,
                ),
            ]),
            view: FindingView::Futexes,
            key: key(&[u64::from(p.pid)]),
            ..Default::default()
        });
    }
}

fn mmap_lock_stall(fr: &Frame, out: &mut Vec<Finding>) {
    for m in &fr.contention.mmap_lock {
        let max_ms = m.max_wait_us / 1e3;
        if m.holder_pid == 0 || m.holder_pid == m.waiter_pid || max_ms < MMAP_STALL_MAX_WAIT_MS {
            continue;
        }
        out.push(Finding {
            kind: "mmap_lock_stall",
            severity: if max_ms >= MMAP_STALL_CRIT_MS {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: dedup(&[m.victim_pid, m.waiter_pid, m.holder_pid]),
            summary: format!(
                "{} waited up to {max_ms:.0} ms for {} mmap_lock held by {}({}){}: a reader \
                 of /proc/PID (environ, cmdline, maps) or a debugger; don't throttle such \
                 readers, or read less often",
                if m.waiter_pid == m.victim_pid {
                    format!("{}({})'s threads", m.victim_comm, m.victim_pid)
                } else {
                    name(fr, m.waiter_pid)
                },
                if m.waiter_pid == m.victim_pid {
                    "its".to_string()
                } else {
                    format!("{}({})'s", m.victim_comm, m.victim_pid)
                },
                m.holder_comm,
                m.holder_pid,
                // Where the holder held it, when its stack was kept.
                if m.holder_caller.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", m.holder_caller)
                }
            ),
            figures: fig(&[
                ("max_wait_ms", max_ms),
                ("total_wait_ms", m.total_wait_ms),
                ("waiters", f64::from(m.waiters)),
                ("hold_ms", m.hold_ms),
            ]),
            view: FindingView::Locks,
            key: key(&[u64::from(m.victim_pid), u64::from(m.holder_pid)]),
            ..Default::default()
        });
    }
}

fn sched_stall(fr: &Frame, out: &mut Vec<Finding>) {
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
fn worst_cpu(fr: &Frame, at: f64) -> Option<u32> {
    let l = fr.latency.as_ref()?;
    l.cpus
        .iter()
        .filter_map(|c| Some((c.cpu, (c.max_at? - at).abs())))
        .filter(|&(_, d)| d < 1e-6)
        .map(|(c, _)| c)
        .next()
}

fn clock(t: f64) -> String {
    let s = t.max(0.0);
    let day = s % 86_400.0;
    format!(
        "{:02}:{:02}:{:06.3}",
        (day / 3600.0) as u32,
        (day % 3600.0 / 60.0) as u32,
        day % 60.0
    )
}

fn tlb_storm(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
    let received: u64 = fr.cpus.iter().filter_map(|c| c.tlb_shootdowns).sum();
    for p in &fr.procs {
        let Some(n) = p.tlb_shootdowns_caused.get() else {
            continue;
        };
        let rate = n as f64 / secs;
        if rate < TLB_STORM_PER_S {
            continue;
        }
        let mut cpus: Vec<_> = fr
            .cpus
            .iter()
            .filter(|c| c.tlb_shootdowns.unwrap_or(0) > 0)
            .collect();
        cpus.sort_by_key(|c| std::cmp::Reverse(c.tlb_shootdowns.unwrap_or(0)));
        out.push(Finding {
            kind: "tlb_storm",
            severity: if rate >= TLB_STORM_CRIT_PER_S {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: vec![p.pid],
            cpus: cpus.iter().map(|c| c.cpu).collect(),
            summary: format!(
                "{} makes other CPUs flush their TLBs {rate:.0} times/s (munmap, mprotect, \
                 madvise while its threads run elsewhere): map and unmap less often, \
                 reuse memory",
                name(fr, p.pid)
            ),
            figures: fig(&[
                ("shootdowns_per_s", rate),
                ("received_per_s", received as f64 / secs),
                (
                    "ipis_per_s",
                    p.tlb_ipis_caused.get().unwrap_or(0) as f64 / secs,
                ),
            ]),
            view: FindingView::Ipi,
            key: key(&[u64::from(p.pid)]),
            ..Default::default()
        });
    }
}

/// Events lost in a frame, when enough were lost that figures on screen are floors:
/// (events a full map or an untracked nesting dropped, skipped scheduler events). A
/// stack that could not be stored is not counted: its wait is, under caller `?`
/// (`drops` leaves it out). A latency sample dropped as stale is the echo of a skipped
/// scheduler event (the wait it would have timed spans the missed switch): the same
/// loss, not another one.
pub fn lost(fr: &Frame) -> Option<(u64, u64)> {
    if fr.mode != "bpf" {
        return None;
    }
    let d = &fr.drops_by_map;
    let gaps = d.sched_gaps.max(d.lat_stale);
    let maps = fr.drops.saturating_sub(d.sched_gaps + d.lat_stale);
    let secs = fr.interval_s.max(1e-3);
    (maps > 0 || gaps as f64 >= lost_gaps_threshold(secs)).then_some((maps, gaps))
}

fn lost_data(fr: &Frame, out: &mut Vec<Finding>) {
    let Some((maps, gaps)) = lost(fr) else {
        return;
    };
    let lost = maps + gaps;
    out.push(Finding {
        kind: "lost_data",
        severity: Severity::Info,
        summary: format!(
            "{lost} events lost this interval (full kernel maps or skipped scheduler events): \
             the figures are floors"
        ),
        figures: fig(&[
            ("lost", lost as f64),
            ("sched_gaps", fr.drops_by_map.sched_gaps as f64),
            ("lat_stale", fr.drops_by_map.lat_stale as f64),
            ("map_drops", maps as f64),
        ]),
        view: FindingView::Main,
        key: 0,
        ..Default::default()
    });
}
