//! ttop's own cost (issue 36): the JSON `self` object against the kernel's own counts.

mod common;

use std::io::{BufRead, BufReader};
use std::time::Duration;

use common::*;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

/// ttop opens its first BPF statistics window at its first tick and closes it at the
/// next, each time just before it reads /proc/stat, so the window is the first frame's
/// interval: its sched_switch program runs as many times as the kernel counted context
/// switches in /proc/stat over that interval (the frame's `ctxt`), which a pipe
/// ping-pong makes many. Its resident memory
/// is checked against /proc/PID/statm read while it runs.
#[test]
fn own_bpf_cost_counts_the_kernels_context_switches() {
    if !require_root("own_bpf_cost_counts_the_kernels_context_switches") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("pingpong", &["6"]);
    let mut head = String::new();
    BufReader::new(w.stdout.as_mut().unwrap())
        .read_line(&mut head)
        .unwrap();
    assert!(head.starts_with("pid="), "pingpong did not start: {head:?}");
    let bg = ttop_spawn(&["--json", "-d", "1", "-n", "3"]);
    let ttop_pid = bg.child.id();
    // Read while ttop runs: after its start-up, before its last frame.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    let statm_rss = std::fs::read_to_string(format!("/proc/{ttop_pid}/statm"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<f64>()
        .unwrap()
        * page;
    let frames = bg.frames(Duration::from_secs(30));
    assert!(
        wait_timeout(&mut w, Duration::from_secs(20)),
        "pingpong hung"
    );
    assert_eq!(frames.len(), 3);

    let first = &frames[0];
    let s = &first["self"];
    eprintln!("first frame's self: {s}");
    assert!(
        s["bpf_not_measured"].is_null(),
        "BPF cost not measured: {}",
        s["bpf_not_measured"]
    );
    let window = f(&s["bpf_window_s"]);
    assert_within(
        "the statistics window against the frame's interval (s)",
        window,
        f(&first["interval_s"]),
        0.02,
    );
    let progs = s["bpf_programs"].as_array().unwrap();
    let switch = progs
        .iter()
        .find(|p| p["name"] == "ttop_sched_switch")
        .unwrap_or_else(|| panic!("no ttop_sched_switch among {progs:?}"));
    let runs = f(&switch["runs_per_s"]) * window;
    let ctxt = f(&first["ctxt"]);
    eprintln!(
        "sched_switch: {runs:.0} runs in ttop's window, {} ns a run; /proc/stat: {ctxt} switches",
        switch["ns_per_run"]
    );
    assert!(
        ctxt >= 10_000.0,
        "too few context switches to compare: {ctxt}"
    );
    assert_within(
        "sched_switch runs in ttop's window against /proc/stat ctxt",
        runs,
        ctxt,
        0.01,
    );
    // The total is the programs' sum, and a program that ran has an average.
    let sum: f64 = progs.iter().map(|p| f(&p["cpu_pct"])).sum();
    assert_within(
        "bpf_cpu_pct against the programs' sum",
        f(&s["bpf_cpu_pct"]),
        sum,
        1e-6,
    );
    assert!(switch["ns_per_run"].as_f64().is_some_and(|v| v > 0.0));

    // Later frames keep the last measured window, with its age; own CPU is measured.
    for (i, fr) in frames.iter().enumerate() {
        let s = &fr["self"];
        assert!(f(&s["cpu_pct"]) > 0.0, "frame {i}: {s}");
        assert_eq!(
            s["bpf_window_s"], frames[0]["self"]["bpf_window_s"],
            "frame {i}"
        );
    }
    let ages: Vec<f64> = frames
        .iter()
        .map(|fr| f(&fr["self"]["bpf_age_s"]))
        .collect();
    assert!(ages.windows(2).all(|a| a[1] > a[0]), "ages {ages:?}");

    // RSS: the kernel's statm, read between the frames, lies within what they said
    // (a little slack for what ttop allocates between two reads).
    let rss: Vec<f64> = frames
        .iter()
        .map(|fr| f(&fr["self"]["rss_bytes"]))
        .collect();
    let (lo, hi) = rss
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    eprintln!("rss: frames {rss:?}, statm {statm_rss}");
    assert!(
        statm_rss >= lo * 0.9 && statm_rss <= hi * 1.1,
        "statm {statm_rss} outside the frames' {lo}..{hi}"
    );
}
