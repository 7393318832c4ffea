//! The benchmark suite of issue 6: what ttop costs, measured in one run against `top`
//! and against no monitor at all, printed as one Markdown table with ratios.
//!
//! Absolute timings on a small shared VM are noisy, so every comparison is made within
//! the run: ttop and top are measured over the same window, and workload throughput
//! alternates between no monitor, ttop and top, round after round.
//!
//! Run by `cargo bench --bench system` (full) and by tests/bench_smoke.rs (`--quick`).

pub mod bpf_cost;
pub mod bpfstats;
pub mod footprint;
pub mod frame_time;
pub mod lockcount;
pub mod micro;
pub mod procs;
pub mod profile_cost;
pub mod recording;
pub mod scale;
pub mod slowdown;
pub mod stack_cost;
pub mod startup;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// The pseudo-terminal the dashboard is measured in.
pub const COLS: u16 = 160;
pub const ROWS: u16 = 50;
pub const TUI_ARGS: &[&str] = &["-d", "1"];

pub fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

/// A file in this run's scratch directory.
pub fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench");
    std::fs::create_dir_all(&d).expect("create the bench tmp dir");
    d.join(name)
}

pub fn ncpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// How long and how often to measure.
#[derive(Debug, Clone)]
pub struct Opts {
    pub quick: bool,
    /// Only these items (1..=9); empty = all.
    pub only: Vec<u8>,
    /// Item 1: the window over which ttop's and top's CPU is compared, s.
    pub cpu_secs: f64,
    /// Item 2: how long each workload runs with BPF statistics on, s.
    pub bpf_secs: f64,
    /// Item 3: length of one workload run and rounds per condition.
    pub slow_secs: f64,
    pub slow_rounds: usize,
    /// Item 4: time spent per derive/render case, s.
    pub micro_secs: f64,
    /// Item 5: start-ups per variant.
    pub startups: usize,
    /// Item 6: threads held, and how long ttop and top watch them, s.
    pub rss_threads: u32,
    pub rss_secs: f64,
    /// Item 7: recording length (s at -d 1) and the frames of the long recording to seek in.
    pub record_secs: f64,
    pub seek_frames: u64,
    /// Item 8: how long the creation storm runs under ttop, s.
    pub scale_secs: f64,
    /// Item 9: the window the profiler's and perf's CPU is measured over, s.
    pub prof_secs: f64,
}

impl Opts {
    pub fn full() -> Opts {
        Opts {
            quick: false,
            only: Vec::new(),
            cpu_secs: 30.0,
            bpf_secs: 10.0,
            slow_secs: 5.0,
            slow_rounds: 5,
            micro_secs: 1.0,
            startups: 5,
            rss_threads: 10_000,
            rss_secs: 10.0,
            record_secs: 20.0,
            seek_frames: 3600,
            scale_secs: 10.0,
            prof_secs: 10.0,
        }
    }

    /// CI's version: every row, short windows (timings are not meaningful).
    pub fn quick() -> Opts {
        Opts {
            quick: true,
            only: Vec::new(),
            cpu_secs: 3.0,
            bpf_secs: 1.5,
            slow_secs: 1.0,
            slow_rounds: 1,
            micro_secs: 0.05,
            startups: 1,
            rss_threads: 10_000,
            rss_secs: 3.0,
            record_secs: 2.0,
            seek_frames: 240,
            scale_secs: 1.5,
            prof_secs: 2.0,
        }
    }

    pub fn wants(&self, item: u8) -> bool {
        self.only.is_empty() || self.only.contains(&item)
    }
}

/// One line of the results table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The item number (1..=8).
    pub item: u8,
    /// Stable short key (checked by the smoke test).
    pub key: String,
    pub what: String,
    pub ttop: String,
    pub baseline: String,
    pub ratio: String,
    pub target: String,
    pub verdict: String,
}

impl Row {
    pub fn new(item: u8, key: &str, what: impl Into<String>) -> Row {
        Row {
            item,
            key: key.to_string(),
            what: what.into(),
            ttop: String::new(),
            baseline: "—".into(),
            ratio: "—".into(),
            target: "—".into(),
            verdict: String::new(),
        }
    }
    pub fn ttop(mut self, v: impl Into<String>) -> Row {
        self.ttop = v.into();
        self
    }
    pub fn baseline(mut self, v: impl Into<String>) -> Row {
        self.baseline = v.into();
        self
    }
    pub fn ratio(mut self, r: f64) -> Row {
        self.ratio = if r.is_finite() {
            format!("{r:.3}")
        } else {
            "n/a".into()
        };
        self
    }
    pub fn target(mut self, t: impl Into<String>, met: Option<bool>) -> Row {
        self.target = t.into();
        self.verdict = match met {
            Some(true) => "met".into(),
            Some(false) => "**missed**".into(),
            None => String::new(),
        };
        self
    }
    pub fn verdict(mut self, v: impl Into<String>) -> Row {
        self.verdict = v.into();
        self
    }
}

/// Every row key a full or quick run prints (the smoke test checks them all).
pub const ROW_KEYS: &[&str] = &[
    "cpu-tui",
    "cpu-json",
    "cpu-tui-H",
    "cpu-10k",
    "cpu-10k-H",
    "bpf-churn-total",
    "bpf-mutex-total",
    "bpf-spin-total",
    "bpf-switch-total",
    "bpf-switch-floor",
    "bpf-switch-net",
    "stack-storm",
    "stack-cost",
    "slow-churn-ttop",
    "slow-churn-nofutex",
    "slow-churn-calls",
    "slow-churn-top",
    "slow-mutex-ttop",
    "slow-mutex-nofutex",
    "slow-mutex-calls",
    "slow-mutex-top",
    "cost-churn-ttop",
    "cost-churn-nofutex",
    "cost-churn-calls",
    "cost-churn-top",
    "cost-mutex-ttop",
    "cost-mutex-nofutex",
    "cost-mutex-calls",
    "cost-mutex-top",
    "contend-churn-ttop",
    "contend-churn-nofutex",
    "contend-churn-calls",
    "contend-churn-top",
    "contend-mutex-ttop",
    "contend-mutex-nofutex",
    "contend-mutex-calls",
    "contend-mutex-top",
    "derive-100",
    "derive-1000",
    "derive-10000",
    "derive-10000p",
    "render-100",
    "render-1000",
    "render-10000",
    "render-10000p",
    "start-tui",
    "start-tui-nobpf",
    "start-json",
    "start-cpu",
    "start-cpu-kallsyms",
    "rss-tui",
    "rss-json",
    "rec-idle",
    "rec-2000",
    "rec-seek",
    "scale-rate",
    "scale-count",
    "prof-cpu",
    "prof-churn",
];

/// The machine, for the table's caption.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "{ncpu} CPUs ({cpu}), {:.0} GB RAM, Linux {}",
        mem_kb as f64 / 1024.0 / 1024.0,
        kernel.trim()
    )
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The whole report as Markdown.
pub fn markdown(rows: &[Row], opts: &Opts, load_before: &str, load_after: &str) -> String {
    let mut out = String::new();
    let cmd = if opts.quick {
        "cargo bench --bench system -- --quick"
    } else {
        "cargo bench --bench system"
    };
    let _ = writeln!(out, "Machine: {}", machine());
    let _ = writeln!(
        out,
        "Load average before / after: {load_before} / {load_after}"
    );
    let _ = writeln!(out, "Command: `sudo {cmd}`");
    if opts.quick {
        let _ = writeln!(
            out,
            "Quick mode: short windows, numbers are a smoke test only."
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| # | measurement | ttop | baseline (same run) | ratio | target | result |"
    );
    let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- | --- |");
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by_key(|r| r.item);
    for r in sorted {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.item, r.what, r.ttop, r.baseline, r.ratio, r.target, r.verdict
        );
    }
    out
}

/// Run the suite and return its rows.
pub fn run(opts: &Opts) -> Vec<Row> {
    let mut rows = Vec::new();
    // Kernel-free first (fast, and it warms nothing the others depend on).
    if opts.wants(4) {
        rows.extend(frame_time::derive_render(opts));
    }
    if opts.wants(5) {
        rows.extend(startup::startup(opts));
    }
    if opts.wants(1) {
        rows.extend(footprint::cpu(opts));
    }
    if opts.wants(6) {
        rows.extend(footprint::rss(opts));
    }
    if opts.wants(2) {
        rows.extend(bpf_cost::bpf_cost(opts));
        rows.extend(stack_cost::stack_cost(opts));
    }
    if opts.wants(3) {
        rows.extend(slowdown::slowdown(opts));
    }
    if opts.wants(7) {
        rows.extend(recording::recording(opts));
    }
    if opts.wants(8) {
        rows.extend(scale::scale(opts));
    }
    if opts.wants(9) {
        rows.extend(profile_cost::profile_cost(opts));
    }
    rows
}

/// Progress on stderr, so stdout carries only the table.
pub fn say(msg: &str) {
    eprintln!("[bench] {msg}");
}

pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}%")
    } else {
        "n/a".into()
    }
}

pub fn ms(d: std::time::Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v < 1.0 {
        format!("{:.0} µs", v * 1e3)
    } else {
        format!("{v:.1} ms")
    }
}

pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v >= 1e6 {
        format!("{:.2}M/s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k/s", v / 1e3)
    } else {
        format!("{v:.0}/s")
    }
}

pub fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}
