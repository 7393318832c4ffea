//! One Frame as OpenMetrics text (prometheus-client's encoder). Everything is a gauge
//! about the last interval: counts are divided by the measured interval (`_per_second`),
//! as the dashboard shows them. Series with a process or futex label are limited to the
//! `top` rows, so the label cardinality does not grow with the number of processes;
//! CPU and lock-type labels are bounded by the machine and the kernel.

use prometheus_client::encoding::text::encode;

use super::out::{Out, l};
use crate::model::Frame;
use crate::model::procs::fields::FIELDS;

/// The OpenMetrics text of `f`'s gauges alone, with at most `top` processes and `top`
/// futex words.
pub fn render(f: &Frame, top: usize) -> String {
    let mut o = Out::new();
    gauges(&mut o, f, top);
    let mut text = String::new();
    encode(&mut text, &o.reg).expect("writing to a String cannot fail");
    text
}

/// The gauges of the last interval (`..._per_second`, levels), as before counters.
pub fn gauges(o: &mut Out, f: &Frame, top: usize) {
    let per_s = |n: f64| (f.interval_s > 0.0).then(|| n / f.interval_s);
    o.one(
        "frame_seq",
        "Sequence number of the Sample this frame ends with (the JSON frame's seq)",
        Some(f.seq as f64),
    );
    o.one(
        "frame_timestamp_seconds",
        "End of the interval, seconds since the Unix epoch",
        Some(f.t),
    );
    o.one(
        "interval_seconds",
        "Measured length of the interval",
        Some(f.interval_s),
    );
    o.one(
        "bpf_mode",
        "1 when eBPF runs, 0 in procfs-only mode",
        Some(f64::from(u8::from(f.mode == "bpf"))),
    );
    let r = &f.runnable;
    o.one(
        "runnable_true_avg",
        "Runnable threads (running + waiting for a CPU), time-weighted over the interval (eBPF)",
        r.true_avg,
    );
    o.one(
        "runnable_true_max",
        "Most runnable threads at any instant in the interval (eBPF)",
        r.true_max,
    );
    o.one(
        "runnable_scan_running",
        "Threads in state R seen by the /proc scan (top's view)",
        Some(f64::from(r.scan_running)),
    );
    o.one(
        "runnable_procs_running",
        "procs_running from /proc/stat at the end of the interval",
        Some(f64::from(r.procs_running)),
    );
    o.one(
        "runnable_undercount",
        "true_avg / scan_running when the scan undercounts",
        r.undercount,
    );

    let cpu = |c: u32| l(&[("cpu", c.to_string())]);
    o.family(
        "cpu_util_percent",
        "CPU busy share from /proc/stat",
        f.cpus.iter().map(|c| (cpu(c.cpu), Some(c.util))),
    );
    o.family(
        "cpu_runqueue_avg",
        "Run-queue length (running + waiting), time-weighted",
        f.cpus.iter().map(|c| (cpu(c.cpu), c.runq_avg)),
    );
    o.family(
        "cpu_runqueue_max",
        "Longest run queue at any instant",
        f.cpus
            .iter()
            .map(|c| (cpu(c.cpu), c.runq_max.map(f64::from))),
    );
    o.family(
        "cpu_tlb_shootdowns_per_second",
        "TLB shootdown IPIs received",
        f.cpus
            .iter()
            .map(|c| (cpu(c.cpu), c.tlb_shootdowns.and_then(|n| per_s(n as f64)))),
    );
    let ipi_rows = f.cpus.iter().flat_map(|c| {
        let kinds = c.ipi.as_ref().map(|i| {
            [
                ("call", Some(i.call)),
                ("call_function", i.call_function),
                ("call_function_single", i.call_function_single),
                ("reschedule", Some(i.reschedule)),
                ("irq_work", Some(i.irq_work)),
            ]
        });
        let kinds = kinds.into_iter().flatten();
        kinds.filter_map(|(k, n)| Some((k, n?))).map(move |(k, n)| {
            (
                l(&[("cpu", c.cpu.to_string()), ("kind", k.to_string())]),
                per_s(n as f64),
            )
        })
    });
    o.family(
        "cpu_ipis_per_second",
        "IPIs received, by kind",
        ipi_rows.collect::<Vec<_>>(),
    );
    if let Some(lat) = &f.latency {
        let us = |v: Option<f64>| v.map(|v| v / 1e6);
        o.family(
            "cpu_latency_p99_seconds",
            "Scheduling latency (wakeup to on-CPU), 99th percentile",
            lat.cpus.iter().map(|c| (cpu(c.cpu), us(c.p99_us))),
        );
        o.family(
            "cpu_latency_max_seconds",
            "Scheduling latency, worst in the interval",
            lat.cpus.iter().map(|c| (cpu(c.cpu), us(c.max_us))),
        );
    }
    if let Some(t) = &f.tlb {
        o.one(
            "tlb_shootdowns_per_second",
            "Remote TLB flushes run (what /proc/interrupts TLB counts)",
            t.shootdowns.and_then(|n| per_s(n as f64)),
        );
        o.one(
            "tlb_ipis_per_second",
            "TLB shootdown IPIs sent",
            t.ipis.and_then(|n| per_s(n as f64)),
        );
    }

    // The top processes by thread creations, then true CPU: the churners seed 000 is about.
    let mut procs: Vec<_> = f.procs.iter().collect();
    procs.sort_by(|a, b| {
        let key = |p: &crate::model::frame::ProcFrame| {
            (
                p.threads_created.unwrap_or(0),
                p.cpu_pct_true.or(p.cpu_pct_scan.get()).unwrap_or(0.0),
            )
        };
        let (ka, kb) = (key(a), key(b));
        kb.0.cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(a.pid.cmp(&b.pid))
    });
    procs.truncate(top);
    let pl = |p: &crate::model::frame::ProcFrame| {
        l(&[("pid", p.pid.to_string()), ("comm", p.comm.to_string())])
    };
    // The per-process families: one for each field of the field table that has a metric.
    for m in FIELDS.iter().filter_map(|fld| fld.metric) {
        o.family(
            m.name,
            m.help,
            procs.iter().map(|p| (pl(p), (m.value)(p, f.interval_s))),
        );
    }

    let c = &f.contention;
    let words = c.futexes.iter().take(top);
    let fl = |w: &crate::model::contention::frame::FutexFrame| {
        l(&[
            ("pid", w.pid.to_string()),
            ("comm", w.comm.clone()),
            ("uaddr", format!("{:#x}", w.uaddr)),
        ])
    };
    let words: Vec<_> = words.collect();
    o.family(
        "futex_contended_waits_per_second",
        "Futex waits that slept (top words by contended waits)",
        words.iter().map(|w| (fl(w), per_s(w.contended as f64))),
    );
    o.family(
        "futex_wait_seconds_per_second",
        "Time asleep in futex waits per second, summed over threads",
        words.iter().map(|w| (fl(w), per_s(w.total_wait_ms / 1e3))),
    );
    // Every lock's waits, not the `locks` table's rows (cut to the worst 64).
    let mut by_type: std::collections::BTreeMap<&str, (u64, f64)> = Default::default();
    for t in &c.lock_types {
        let e = by_type.entry(t.kind.as_str()).or_default();
        e.0 += t.contended;
        e.1 += t.wait_ns as f64 / 1e6;
    }
    o.family(
        "kernel_lock_contended_per_second",
        "Kernel lock contentions, by lock type",
        by_type
            .iter()
            .map(|(k, v)| (l(&[("type", k.to_string())]), per_s(v.0 as f64))),
    );
    o.family(
        "kernel_lock_wait_seconds_per_second",
        "Time waiting for kernel locks per second, by lock type",
        by_type
            .iter()
            .map(|(k, v)| (l(&[("type", k.to_string())]), per_s(v.1 / 1e3))),
    );
    o.one(
        "drops",
        "Events lost this interval (a full kernel map, a lock wait nested too deep, a scheduler event the kernel did not deliver); a stack that could not be stored is not one",
        Some(f.drops as f64),
    );
    o.one(
        "stacks_unstored",
        "Waits counted this interval whose stack could not be stored (named ?)",
        Some(f.contention.contention_drops.stacks as f64),
    );
    let maps = &f.contention.stack_maps;
    o.family(
        "stack_map_held",
        "Stack ids a contention stack map holds after the interval",
        maps.iter()
            .map(|m| (l(&[("map", m.map.clone())]), Some(m.held as f64))),
    );
    o.family(
        "stack_map_capacity",
        "Stack ids a contention stack map can hold",
        maps.iter()
            .map(|m| (l(&[("map", m.map.clone())]), Some(m.capacity as f64))),
    );
    o.one(
        "sched_gaps",
        "Scheduler events this kernel did not deliver this interval",
        Some(f.drops_by_map.sched_gaps as f64),
    );
    super::cgroup_metrics::render(o, f, top);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::derive;
    use crate::model::fixtures::{synthetic, system};

    #[test]
    fn labels_are_bounded_by_top() {
        let (a, mut b) = (synthetic(300, 2, 10), synthetic(300, 2, 20));
        b.mono_ns = a.mono_ns + 1_000_000_000;
        b.wall_ns = a.wall_ns + 1_000_000_000;
        let f = derive(&system(), Some(&a), &b);
        assert!(f.procs.len() >= 300);
        let text = render(&f, 5);
        let series = text
            .lines()
            .filter(|l| l.starts_with("ttop_process_cpu_scan_percent{"))
            .count();
        assert_eq!(series, 5);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains(&format!("ttop_frame_seq {}", f.seq)));
    }
}
