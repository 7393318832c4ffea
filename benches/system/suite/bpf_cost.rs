//! Item 2: what ttop's BPF programs cost in the kernel, per program, under the storms
//! (the kernel's own BPF statistics; the stacks' part is in stack_cost.rs).

use std::time::Instant;

use super::bpfstats::{self, ProgStat, wait_progs};
use super::procs::{Storm, Workload, kv_f64, spawn_quiet, storms, terminate, ttop_bin};
use super::{Opts, Row, ncpus, pct, rate, say, secs};

/// Item 2 also measures a storm on one fixed kernel path: the mutex storm's kernel
/// lock contentions swing with its phases, and this one's program cost per event does
/// not.
fn spin_storm(secs_each: f64) -> Storm {
    Storm {
        key: "spin",
        label:
            "futex hash-bucket spinlock storm (2 threads, FUTEX_WAIT on a word that never matches)"
                .into(),
        bin: "bench_spinlock",
        args: vec!["2".into(), format!("{secs_each}")],
        units: "ops",
        unit: "call",
    }
}

/// Item 2: what ttop's BPF programs cost in the kernel, per program.
pub fn bpf_cost(o: &Opts) -> Vec<Row> {
    say("2: BPF program cost under churn and a mutex storm");
    let mut rows = Vec::new();
    let ttop = spawn_quiet(&ttop_bin(), &["--json", "-d", "1"]);
    let ids = wait_progs(ttop.id(), secs(20.0));
    let stats = bpfstats::enable_stats();
    if let Err(e) = &stats {
        say(e);
    }
    let mut all = storms(o.bpf_secs);
    all.push(spin_storm(o.bpf_secs));
    for s in all {
        let a = bpfstats::snapshot(&ids);
        let t0 = Instant::now();
        let w = Workload::spawn(s.bin, &s.args);
        let (kv, wl_cpu) = w.finish(secs(o.bpf_secs + 60.0));
        let el = t0.elapsed().as_secs_f64();
        let b = bpfstats::snapshot(&ids);
        let mut d: Vec<ProgStat> = bpfstats::diff(&a, &b);
        d.sort_by_key(|p| std::cmp::Reverse(p.run_time_ns));
        let total_ns: u64 = d.iter().map(|p| p.run_time_ns).sum();
        let total_pct = 100.0 * total_ns as f64 / 1e9 / el;
        let wl = wl_cpu.unwrap_or(f64::NAN);
        let wl_rate = kv_f64(&kv, "rate");
        rows.push(
            Row::new(
                2,
                &format!("bpf-{}-total", s.key),
                format!(
                    "all ttop eBPF programs ({}) under {}, {:.0} s: kernel time, % of one CPU",
                    d.len(),
                    s.label,
                    el
                ),
            )
            .ttop(format!(
                "{} of one CPU ({} of the machine)",
                pct(total_pct),
                pct(total_pct / ncpus())
            ))
            .baseline(format!(
                "the workload's own CPU: {} ({})",
                pct(100.0 * wl / el),
                rate(wl_rate)
            ))
            .ratio(total_ns as f64 / 1e9 / wl)
            .verdict("share of the workload's CPU"),
        );
        for p in d.iter().filter(|p| p.run_cnt > 0) {
            let per = p.run_time_ns as f64 / p.run_cnt as f64;
            rows.push(
                Row::new(
                    2,
                    &format!("bpf-{}-{}", s.key, p.name),
                    format!("`{}` under {}", p.name, s.key),
                )
                .ttop(format!(
                    "{per:.0} ns/event × {} = {} of one CPU",
                    rate(p.run_cnt as f64 / el),
                    pct(100.0 * p.run_time_ns as f64 / 1e9 / el)
                )),
            );
        }
    }
    drop(stats);
    let mut ttop = ttop;
    terminate(&mut ttop, secs(10.0));
    rows
}
