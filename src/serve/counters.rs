//! The `_total` families: `Totals` and `Groups` as OpenMetrics counters, in base units
//! (seconds; counts without a unit). Names follow Prometheus's conventions: the encoder
//! appends the unit and `_total` (`futex_wait` + seconds -> `ttop_futex_wait_seconds_total`).

use prometheus_client::registry::Unit;

use super::groups::{GroupCounts, Groups};
use super::out::{Labels, Out, l};
use super::totals::{IPI_KINDS, TLB_REASONS, Totals};
use crate::model::procs::fields::group_counters;

fn n(v: u64) -> Option<f64> {
    Some(v as f64)
}

fn on(v: Option<u64>) -> Option<f64> {
    v.map(|v| v as f64)
}

pub fn totals(o: &mut Out, t: &Totals) {
    let s = || Some(Unit::Seconds);
    o.counter(
        "collected",
        "Seconds of intervals these counters cover (since serve started)",
        s(),
        Some(t.seconds),
    );
    o.counter("frames", "Intervals counted", None, n(t.frames));
    o.counter(
        "threads_created",
        "Threads created (eBPF task_newtask)",
        None,
        on(t.threads_created),
    );
    o.counter(
        "threads_exited",
        "Threads that exited (eBPF sched_process_exit)",
        None,
        on(t.threads_exited),
    );
    o.counter(
        "ghost_threads",
        "Threads born and dead between two /proc scans (no scan saw them)",
        None,
        on(t.ghost_threads),
    );
    o.counter(
        "context_switches",
        "Context switches per /proc/stat ctxt",
        None,
        n(t.ctxt),
    );
    o.counter(
        "forks",
        "Processes and threads forked per /proc/stat",
        None,
        n(t.forks),
    );
    o.counter(
        "futex_waits",
        "Futex waits that slept, every process",
        None,
        on(t.futex_waits),
    );
    o.counter(
        "futex_wait",
        "Time threads spent asleep in futex waits, summed over threads",
        s(),
        t.futex_wait_s,
    );
    let lock_rows = |f: fn(&(u64, f64)) -> f64| {
        t.locks
            .iter()
            .map(move |(k, v)| (l(&[("type", k.clone())]), Some(f(v))))
            .collect::<Vec<_>>()
    };
    if t.locks_measured {
        o.counters(
            "kernel_lock_contentions",
            "Kernel lock contentions (lock:contention_begin), by lock type",
            None,
            lock_rows(|v| v.0 as f64),
        );
        o.counters(
            "kernel_lock_wait",
            "Time spent waiting for kernel locks, by lock type",
            s(),
            lock_rows(|v| v.1),
        );
    }
    o.counter(
        "cpu_true",
        "On-CPU seconds of every process measured at context switches (exited threads included)",
        s(),
        t.cpu_true_s,
    );
    o.counter(
        "cpu_scan",
        "On-CPU seconds of every process per /proc utime+stime (what top adds up)",
        s(),
        Some(t.cpu_scan_s),
    );
    o.counter(
        "runqueue_wait",
        "Seconds threads spent runnable but waiting for a CPU",
        s(),
        t.runq_wait_s,
    );
    let cpu = |c: u32| l(&[("cpu", c.to_string())]);
    o.counters(
        "cpu_busy",
        "CPU busy seconds per /proc/stat",
        s(),
        t.cpus.iter().map(|(c, v)| (cpu(*c), Some(v.busy_s))),
    );
    o.counters(
        "cpu_switches",
        "Context switches on this CPU (eBPF sched_switch)",
        None,
        t.cpus.iter().map(|(c, v)| (cpu(*c), on(v.switches))),
    );
    o.counters(
        "cpu_migrations",
        "Threads migrated to this CPU (eBPF sched_migrate_task)",
        None,
        t.cpus.iter().map(|(c, v)| (cpu(*c), on(v.migrations))),
    );
    o.counters(
        "cpu_tlb_shootdowns",
        "TLB shootdown IPIs received",
        None,
        t.cpus.iter().map(|(c, v)| (cpu(*c), on(v.tlb_shootdowns))),
    );
    let ipis: Vec<(Labels, Option<f64>)> = t
        .cpus
        .iter()
        .flat_map(|(c, v)| {
            IPI_KINDS.iter().enumerate().map(move |(i, k)| {
                (
                    l(&[("cpu", c.to_string()), ("kind", k.to_string())]),
                    v.ipis.and_then(|a| a[i]).map(|n| n as f64),
                )
            })
        })
        .collect();
    o.counters("cpu_ipis", "IPIs received, by kind", None, ipis);
    o.counters(
        "tlb_flushes",
        "TLB flushes (tlb:tlb_flush), by reason",
        None,
        TLB_REASONS
            .iter()
            .zip(t.tlb_reasons)
            .map(|(r, v)| (l(&[("reason", r.to_string())]), on(v))),
    );
    o.counter(
        "tlb_shootdowns",
        "Remote TLB flushes run (what /proc/interrupts TLB counts)",
        None,
        on(t.tlb_shootdowns),
    );
    o.counter("tlb_ipis", "TLB shootdown IPIs sent", None, on(t.tlb_ipis));
    o.counter(
        "sched_wakeups",
        "Wake-ups whose scheduling latency was measured",
        None,
        on(t.sched_wakeups),
    );
    if !t.latency.is_empty() {
        let fam = prometheus_client::metrics::family::Family::<
            Labels,
            super::histogram::SetHist,
        >::default();
        for (c, h) in &t.latency {
            fam.get_or_create(&cpu(*c)).set(h);
        }
        o.reg.register_with_unit(
            "cpu_sched_latency",
            "Scheduling latency (wake-up to on-CPU) on this CPU, power-of-two buckets",
            Unit::Seconds,
            fam,
        );
    }
    if let Some(h) = &t.futex_wait_hist {
        let m = super::histogram::SetHist::default();
        m.set(h);
        // Not `futex_wait`: ttop_futex_wait_seconds is already the family of the
        // counter ttop_futex_wait_seconds_total, and one name cannot hold two families.
        o.reg.register_with_unit(
            "futex_wait_duration",
            "Futex waits that slept, by time asleep, power-of-two buckets",
            Unit::Seconds,
            m,
        );
    }
    o.counter(
        "dropped_events",
        "Events lost (a full kernel map, a lock wait nested too deep, a scheduler event not delivered)",
        None,
        n(t.drops),
    );
    o.counter(
        "sched_gaps",
        "Scheduler events this kernel did not deliver",
        None,
        n(t.sched_gaps),
    );
    o.counter(
        "stacks_unstored",
        "Waits counted whose stack could not be stored",
        None,
        n(t.stacks_unstored),
    );
}

/// The bounded per-process-name families: the named groups, then `comm=""` (the rest).
/// The field table's group counters first, then the two that are no field's (futex wait
/// seconds and the processes count: no column of the process table shows them).
pub fn groups(o: &mut Out, g: &Groups) {
    let rows = |f: &dyn Fn(&GroupCounts) -> f64| {
        g.named
            .iter()
            .map(|(k, v)| (l(&[("comm", k.clone())]), Some(f(v))))
            .chain([(l(&[("comm", String::new())]), Some(f(&g.other)))])
            .collect::<Vec<_>>()
    };
    let s = || Some(Unit::Seconds);
    for (id, c) in group_counters() {
        let unit = if c.seconds { s() } else { None };
        o.counters(c.name, c.help, unit, rows(&|v| v.field(id)));
    }
    o.counters(
        "process_group_futex_wait",
        "Seconds the threads of these processes slept in futex waits",
        s(),
        rows(&|v| v.futex_wait_s),
    );
    o.family(
        "process_group_processes",
        "Processes with this comm in the last interval",
        rows(&|v| v.procs as f64),
    );
}
