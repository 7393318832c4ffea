//! Item 9 (issue 20): what the stack profiler costs. `ttop profile` at 99 Hz on a process
//! that keeps both CPUs busy, beside `perf record -F 99 -g` (and `perf script`, which
//! names the frames: what a flame graph needs from perf) on the same workload in the same
//! run; and a churning workload's throughput with `ttop profile -p` on it, with nothing,
//! and with `perf record -g -p`, alternating round after round.
//!
//! Where the costs land differs: ttop's BPF program runs in the sampled thread's context
//! (it is measured here with BPF statistics and added to ttop's own CPU); perf's
//! in-kernel sampling is not in perf's process CPU and is not counted for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::bpfstats;
use super::procs::{Workload, kv_f64, median, reap_cpu, spawn_quiet, terminate, ttop_bin};
use super::{Opts, Row, pct, rate, say, tmp};

fn perf_bin() -> Option<PathBuf> {
    let ok = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| PathBuf::from("perf"))
}

/// `perf record -F 99 -g -p PID -o OUT`, as a person profiling a process runs it.
fn perf_record(perf: &Path, pid: u32, out: &Path, then: &[&str]) -> Child {
    let pid = pid.to_string();
    let mut args = vec!["record", "-F", "99", "-g", "-q", "-p", &pid, "-o"];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(then);
    spawn_quiet(perf, &args)
}

/// `ttop profile -p PID` at 99 Hz for `secs`, into OUT.
fn ttop_profile(pid: u32, secs: f64, out: &Path) -> Child {
    let (pid, secs) = (pid.to_string(), format!("{secs}"));
    spawn_quiet(
        &ttop_bin(),
        &[
            "profile",
            "-p",
            &pid,
            "--duration",
            &secs,
            "-o",
            out.to_str().unwrap(),
        ],
    )
}

/// CPU seconds of every live thread of `pid`, from schedstat (nanoseconds: /proc/PID/stat's
/// clock ticks are too coarse for a process that runs a few ms a second).
fn run_secs(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return f64::NAN;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e9
}

/// What `ttop profile -p PID` cost over `secs`.
struct ProfCost {
    /// Its own CPU seconds over the whole run, start-up (loading, BTF) included.
    own: f64,
    /// Its own CPU per second once warmed up (the second half of the window).
    steady: f64,
    /// Its BPF programs' run time per second.
    bpf: f64,
}

fn ttop_profile_cost(pid: u32, secs: f64) -> ProfCost {
    let stats = bpfstats::enable_stats();
    let t0 = Instant::now();
    let mut child = ttop_profile(pid, secs, &tmp("profile-cost.folded"));
    // Its programs, once loaded; BPF time from then until shortly before it ends.
    let mut ids = Vec::new();
    while ids.is_empty() && t0.elapsed() < Duration::from_secs_f64(secs * 0.5) {
        std::thread::sleep(Duration::from_millis(50));
        ids = bpfstats::prog_ids_of(child.id());
    }
    // Warmed up: the first stacks' naming reads (and inflates) debug files and kallsyms
    // once, which took from under 3 s to over 3 s into a run beside two busy threads;
    // measured over the second half of the window.
    let warm = Duration::from_secs_f64(secs * 0.5);
    while t0.elapsed() < warm {
        std::thread::sleep(Duration::from_millis(20));
    }
    let a = bpfstats::snapshot(&ids);
    let cpu_a = run_secs(child.id());
    let ta = Instant::now();
    let until = Duration::from_secs_f64((secs - 0.3).max(0.1));
    while t0.elapsed() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let b = bpfstats::snapshot(&ids);
    let cpu_b = run_secs(child.id());
    let span = ta.elapsed().as_secs_f64();
    let bpf_ns: u64 = bpfstats::diff(&a, &b).iter().map(|p| p.run_time_ns).sum();
    let own = reap_cpu(&mut child, Duration::from_secs_f64(secs + 30.0)).unwrap_or(f64::NAN);
    drop(stats);
    let per_s = |v: f64| if span > 0.0 { v / span } else { f64::NAN };
    ProfCost {
        own,
        steady: per_s(cpu_b - cpu_a),
        bpf: per_s(bpf_ns as f64 / 1e9),
    }
}

/// `perf record -F 99 -g -p PID` for `secs`, then `perf script` over its data: the CPU
/// seconds of each.
fn perf_cost(perf: &Path, pid: u32, secs: f64) -> (f64, f64) {
    let data = tmp("profile-cost.perf.data");
    let _ = std::fs::remove_file(&data);
    let secs_s = format!("{secs}");
    let mut c = perf_record(perf, pid, &data, &["--", "sleep", &secs_s]);
    let record = reap_cpu(&mut c, Duration::from_secs_f64(secs + 30.0)).unwrap_or(f64::NAN);
    let mut c = spawn_quiet(perf, &["script", "-i", data.to_str().unwrap()]);
    let named = reap_cpu(&mut c, Duration::from_secs(120)).unwrap_or(f64::NAN);
    (record, named)
}

pub fn profile_cost(o: &Opts) -> Vec<Row> {
    say("9: the stack profiler's cost, beside perf record -g");
    let mut rows = Vec::new();
    let perf = perf_bin();
    if perf.is_none() {
        say("9: perf is not installed: its baselines are n/a");
    }
    let win = o.prof_secs;
    let span = format!("{}", win + 2.0);

    // Cost at 99 Hz on two threads burning both CPUs.
    let mut w = Workload::spawn("burn31", &["2".into(), span.clone()]);
    std::thread::sleep(Duration::from_millis(300));
    let cost = ttop_profile_cost(w.pid, win);
    w.child.kill().ok();
    let _ = w.child.wait();
    let (prec, pscript) = match &perf {
        Some(p) => {
            let mut w = Workload::spawn("burn31", &["2".into(), span.clone()]);
            std::thread::sleep(Duration::from_millis(300));
            let r = perf_cost(p, w.pid, win);
            w.child.kill().ok();
            let _ = w.child.wait();
            r
        }
        None => (f64::NAN, f64::NAN),
    };
    let of_cpu = |s: f64| 100.0 * s / win;
    // Warmed up: its own CPU per second (clock ticks: 10 ms resolution) and its BPF.
    let total = 100.0 * (cost.steady + cost.bpf);
    rows.push(
        Row::new(
            9,
            "prof-cpu",
            format!(
                "`ttop profile -p` at 99 Hz on 2 threads burning both CPUs, {win:.0} s: over its \
                 second half (after the first naming), its own CPU (ring drain, DWARF unwinding of an 8 KB stack copy, \
                 naming) plus its BPF program, % of one CPU; the whole run with start-up in \
                 brackets"
            ),
        )
        .ttop(format!(
            "{} (own {} + BPF {}; whole run {})",
            pct(total),
            pct(100.0 * cost.steady),
            pct(100.0 * cost.bpf),
            pct(of_cpu(cost.own) + 100.0 * cost.bpf)
        ))
        .baseline(format!(
            "`perf record -F 99 -g`: {}; with `perf script` naming the frames: {}",
            pct(of_cpu(prec)),
            pct(of_cpu(prec + pscript))
        ))
        .ratio(total / of_cpu(prec + pscript))
        .target("< 1% of one CPU", Some(total < 1.0)),
    );

    // A churning workload's throughput: nothing, ttop profile, perf record; alternating.
    let conds: Vec<&str> = if perf.is_some() {
        vec!["none", "ttop", "perf"]
    } else {
        vec!["none", "ttop"]
    };
    let mut res: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let secs = o.slow_secs;
    for r in 0..o.slow_rounds {
        for k in 0..conds.len() {
            let c = conds[(r + k) % conds.len()];
            let w = Workload::spawn(
                "bench_churn",
                &[format!("{secs}"), "4".into(), "100".into()],
            );
            let mut mon: Option<Child> = match c {
                "ttop" => Some(ttop_profile(
                    w.pid,
                    secs + 5.0,
                    &tmp("profile-churn.folded"),
                )),
                "perf" => Some(perf_record(
                    perf.as_deref().unwrap(),
                    w.pid,
                    &tmp("profile-churn.perf.data"),
                    &[],
                )),
                _ => None,
            };
            let (kv, _) = w.finish(Duration::from_secs_f64(secs + 60.0));
            if let Some(m) = mon.as_mut() {
                terminate(m, Duration::from_secs(10));
            }
            res.entry(c).or_default().push(kv_f64(&kv, "rate"));
        }
    }
    let none = median(&res["none"]);
    let n = o.slow_rounds;
    let what = |label: &str| {
        format!(
            "thread churn (4 threads at a time, 100 µs each) throughput with {label} on it \
             (median of {n} runs of {secs:.0} s)"
        )
    };
    let t = median(&res["ttop"]);
    rows.push(
        Row::new(9, "prof-churn", what("`ttop profile -p` at 99 Hz"))
            .ttop(rate(t))
            .baseline(format!("no profiler: {}", rate(none)))
            .ratio(t / none)
            .target("≥ 0.98 (under 2% slower)", Some(t / none >= 0.98)),
    );
    let p = res.get("perf").map_or(f64::NAN, |v| median(v));
    rows.push(
        Row::new(9, "prof-churn-perf", what("`perf record -F 99 -g -p`"))
            .ttop(if p.is_finite() {
                rate(p)
            } else {
                "n/a: perf is not installed".into()
            })
            .baseline(format!("no profiler: {}", rate(none)))
            .ratio(p / none)
            .verdict("reference"),
    );
    rows
}
