//! Item 3: what a monitor costs the workloads it watches: each storm's throughput, CPU
//! per unit of work and kernel-lock contentions per unit, with no monitor, ttop (and its
//! variants, and another build of it) and top, alternating round after round.

use std::collections::BTreeMap;

use super::lockcount::LockCounter;
use super::procs::{
    Tui, Workload, kv_f64, median, spawn_quiet, storms, terminate, top_bin, ttop_bin,
};
use super::{COLS, Opts, ROWS, Row, TUI_ARGS, rate, say, secs};

/// What runs beside the workload in one round of item 3.
enum Monitor {
    None,
    Ttop(Tui),
    Top(std::process::Child),
}

impl Monitor {
    fn start(which: &str) -> Monitor {
        let m = match which {
            "ttop" | "before" | "nofutex" | "calls" => {
                let bin = match which {
                    "before" => before_bin().expect("the before condition needs TTOP_BENCH_BEFORE"),
                    _ => ttop_bin(),
                };
                let mut args = TUI_ARGS.to_vec();
                if which == "nofutex" {
                    args.push("--no-futex");
                }
                if which == "calls" {
                    args.push("--futex-calls");
                }
                let t = Tui::spawn_bin(&bin, &args, COLS, ROWS);
                t.wait_first_screen(secs(20.0));
                Monitor::Ttop(t)
            }
            "top" => Monitor::Top(spawn_quiet(&top_bin(), &["-b", "-d", "1"])),
            _ => Monitor::None,
        };
        std::thread::sleep(secs(1.0)); // the same settling time for every condition
        m
    }

    fn stop(self) {
        match self {
            Monitor::None => {}
            Monitor::Ttop(t) => {
                t.stop();
            }
            Monitor::Top(mut c) => {
                terminate(&mut c, secs(10.0));
            }
        }
    }
}

/// Another build of ttop to measure beside this one in items 2 and 3 (`TTOP_BENCH_BEFORE=PATH`):
/// a change's before and after in one run, as absolute rates on a shared VM drift
/// between runs by more than the change.
pub fn before_bin() -> Option<std::path::PathBuf> {
    std::env::var_os("TTOP_BENCH_BEFORE").map(Into::into)
}

/// Item 3's rows for one measure: ttop's and top's median against the no-monitor
/// median, each with its runs' spread. `name` gives (key, what) for a condition and its
/// label; only ttop's row carries the target.
fn vs_no_monitor(
    res: &BTreeMap<&str, Vec<f64>>,
    show: &dyn Fn(f64) -> String,
    name: &dyn Fn(&str, &str) -> (String, String),
    (target, met): (&str, &dyn Fn(f64) -> bool),
) -> Vec<Row> {
    let spread = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{}–{}", show(lo), show(hi))
    };
    let none = median(&res["none"]);
    let base = format!("no monitor: {} (runs {})", show(none), spread(&res["none"]));
    let mut rows = Vec::new();
    for (c, label) in [
        ("ttop", "the dashboard (-d 1)"),
        ("calls", "the dashboard with `--futex-calls`"),
        ("nofutex", "the dashboard with `--no-futex`"),
        ("before", "the TTOP_BENCH_BEFORE build's dashboard"),
        ("top", "`top -b -d 1`"),
    ] {
        let Some(runs) = res.get(c) else { continue };
        let v = median(runs);
        let ratio = v / none;
        let (key, what) = name(c, label);
        let row = Row::new(3, &key, what)
            .ttop(format!("{} (runs {})", show(v), spread(runs)))
            .baseline(base.clone())
            .ratio(ratio);
        rows.push(if c == "ttop" {
            row.target(target, Some(met(ratio)))
        } else {
            row.verdict("reference")
        });
    }
    rows
}

/// Item 3: workload throughput without a monitor, with ttop, with top; alternating.
pub fn slowdown(o: &Opts) -> Vec<Row> {
    say(
        "3: workload slowdown, alternating no monitor / ttop / ttop --futex-calls / \
         ttop --no-futex / top",
    );
    let mut conds = vec!["none", "ttop", "calls", "nofutex", "top"];
    if before_bin().is_some() {
        conds.push("before");
    }
    let mut rows = Vec::new();
    for s in storms(o.slow_secs) {
        let mut res: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        // The workload's own CPU (user+sys) per unit of work, in µs. It includes the BPF
        // programs, which run in the workload's threads, and excludes the time the host
        // steals from this VM (paravirt steal accounting), which moves the rates above
        // by far more than 2% from one run to the next.
        let mut cost: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        // Kernel-lock contentions per unit of work, by the kernel's own count: whether
        // ttop changes how often the workload contends (what its lock view reports).
        let mut contend: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        let counter = LockCounter::open().map_err(|e| say(&format!("3: no contention count: {e}")));
        for r in 0..o.slow_rounds {
            for k in 0..conds.len() {
                let c = conds[(r + k) % conds.len()];
                let m = Monitor::start(c);
                let before = counter.as_ref().map_or(0, |l| l.read());
                let w = Workload::spawn(s.bin, &s.args);
                let (kv, cpu) = w.finish(secs(o.slow_secs + 60.0));
                let contentions = counter
                    .as_ref()
                    .map_or(f64::NAN, |l| l.read().saturating_sub(before) as f64);
                m.stop();
                res.entry(c).or_default().push(kv_f64(&kv, "rate"));
                let units = kv_f64(&kv, s.units);
                let per = cpu.unwrap_or(f64::NAN) * 1e6 / units;
                cost.entry(c).or_default().push(per);
                contend.entry(c).or_default().push(contentions / units);
            }
        }
        let n = o.slow_rounds;
        rows.extend(vs_no_monitor(
            &res,
            &|v| rate(v),
            &|c, label| {
                (
                    format!("slow-{}-{c}", s.key),
                    format!(
                        "{} throughput with {label} running (median of {n} runs of {:.0} s)",
                        s.label, o.slow_secs
                    ),
                )
            },
            ("≥ 0.98 (under 2% slower)", &|ratio| ratio >= 0.98),
        ));
        rows.extend(vs_no_monitor(
            &cost,
            &|v| format!("{v:.2} µs"),
            &|c, label| {
                (
                    format!("cost-{}-{c}", s.key),
                    format!(
                        "{}: the workload's CPU per {} (user+sys, host steal excluded) with \
                         {label} running (median of {n} runs)",
                        s.label, s.unit
                    ),
                )
            },
            ("≤ 1.02 (the 2% target, as CPU)", &|ratio| ratio <= 1.02),
        ));
        rows.extend(vs_no_monitor(
            &contend,
            &|v| format!("{v:.4}"),
            &|c, label| {
                (
                    format!("contend-{}-{c}", s.key),
                    format!(
                        "{}: contended kernel locks per {} (the kernel's lock:contention_begin \
                         count, all CPUs) with {label} running (median of {n} runs)",
                        s.label, s.unit
                    ),
                )
            },
            ("0.9–1.1: ttop does not change what it counts", &|ratio| {
                (0.9..=1.1).contains(&ratio)
            }),
        ));
    }
    rows
}
