//! Lock rules: hot_lock, idle_futex_storm, mmap_lock_stall.

use super::*;

pub(super) fn hot_lock(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
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
            || (waiters >= HOT_LOCK_MIN_WAITERS && works && share >= HOT_LOCK_WAITERS_MIN_SHARE)
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
            // No stack because the ceiling on ttop's own cost stopped the walks: say so.
            let shed = fr
                .own
                .as_ref()
                .and_then(|o| o.shed.as_ref())
                .is_some_and(|s| s.user_stacks_off);
            if shed {
                " (caller not sampled: ttop's cost ceiling)".to_string()
            } else {
                String::new()
            }
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

pub(super) fn idle_futex_storm(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
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

pub(super) fn mmap_lock_stall(fr: &Frame, out: &mut Vec<Finding>) {
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
