//! The measurements, one function per item of issue 6. Each returns table rows.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::bpfstats::{self, ProgStat};
use super::lockcount::LockCounter;
use super::micro::{self, SHAPES, Shape};
use super::procs::{
    JsonTtop, Tui, Workload, cpu_secs, kv_f64, median, reap_cpu, spawn_quiet, status_kb, terminate,
    top_bin, ttop_bin,
};
use super::{Opts, Row, mb, ms, pct, rate, say};

/// The pseudo-terminal the dashboard is measured in.
const COLS: u16 = 160;
const ROWS: u16 = 50;
const TUI_ARGS: &[&str] = &["-d", "1"];

fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

pub(super) fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench");
    std::fs::create_dir_all(&d).expect("create the bench tmp dir");
    d.join(name)
}

fn ncpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// Item 4: derive and render time per frame.
pub fn derive_render(o: &Opts) -> Vec<Row> {
    say("4: derive and render time per frame");
    let budget = secs(o.micro_secs);
    let target = Duration::from_millis(2);
    let mut rows = Vec::new();
    type Timer = fn(Shape, Duration) -> Duration;
    let kinds: [(&str, Timer); 2] = [
        ("derive", micro::derive_time),
        ("render", micro::render_time),
    ];
    for (kind, timer) in kinds {
        for s in SHAPES {
            let t = timer(s, budget);
            let suffix = if s.threads_per == 1 { "p" } else { "" };
            let key = format!("{kind}-{}{suffix}", s.threads());
            let what = match kind {
                "derive" => format!("derive one Frame: {}", s.label()),
                _ => format!(
                    "render one frame ({}x{} terminal): {}",
                    micro::TERM_W,
                    micro::TERM_H,
                    s.label()
                ),
            };
            let mut r = Row::new(4, &key, what).ttop(ms(t));
            if s.threads() >= 10_000 {
                r = r.target("< 2 ms at 10,000", Some(t < target));
            }
            rows.push(r);
        }
    }
    rows
}

/// Time from spawning `cmd` to its first stdout line (None: no line within 20 s).
fn time_to_first_line(cmd: &mut Command) -> Option<Duration> {
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take()?);
    let got = out.read_line(&mut line).ok().filter(|n| *n > 0);
    let t = t0.elapsed();
    let _ = terminate(&mut child, secs(10.0));
    got.map(|_| t)
}

/// Time for `top -b -n 1` to print its whole first screen and exit.
fn top_first_screen() -> Option<Duration> {
    let t0 = Instant::now();
    let out = Command::new(top_bin())
        .args(["-b", "-n", "1"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| t0.elapsed())
}

fn tui_startup(extra: &[&str]) -> Option<Duration> {
    let mut args = TUI_ARGS.to_vec();
    args.extend_from_slice(extra);
    let t = Tui::spawn(&args, COLS, ROWS);
    let d = t.wait_first_screen(secs(20.0));
    t.stop();
    d
}

fn med_ms(v: &[Option<Duration>]) -> f64 {
    let x: Vec<f64> = v
        .iter()
        .map(|d| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3))
        .collect();
    median(&x)
}

/// User+system CPU milliseconds of one whole run of `cmd` (its own process; ttop's
/// detaching child, which outlives it, is not in it).
fn run_cpu_ms(cmd: &mut Command) -> f64 {
    let Ok(mut child) = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return f64::NAN;
    };
    reap_cpu(&mut child, secs(20.0)).map_or(f64::NAN, |s| s * 1e3)
}

/// Item 5: process start to the first complete screen.
pub fn startup(o: &Opts) -> Vec<Row> {
    say("5: start-up");
    let (mut tui, mut nobpf, mut json, mut top) = (vec![], vec![], vec![], vec![]);
    let (mut cpu, mut cpu_file, mut cpu_top) = (vec![], vec![], vec![]);
    let json_args = ["--json", "-n", "1", "-d", "0.1"];
    for _ in 0..o.startups {
        tui.push(tui_startup(&[]));
        nobpf.push(tui_startup(&["--no-bpf"]));
        json.push(time_to_first_line(Command::new(ttop_bin()).args(json_args)));
        top.push(top_first_screen());
        // CPU of a whole short look, and the same with the kernel symbols read from
        // /proc/kallsyms (the way before bpf/ksym.bpf.c), alternating.
        cpu.push(run_cpu_ms(Command::new(ttop_bin()).args(json_args)));
        cpu_file.push(run_cpu_ms(
            Command::new(ttop_bin())
                .args(json_args)
                .env("TTOP_KALLSYMS", "file"),
        ));
        cpu_top.push(run_cpu_ms(Command::new(top_bin()).args(["-b", "-n", "1"])));
    }
    let (tui, nobpf, json, top) = (med_ms(&tui), med_ms(&nobpf), med_ms(&json), med_ms(&top));
    let (cpu, cpu_file, cpu_top) = (median(&cpu), median(&cpu_file), median(&cpu_top));
    let base = format!("`top -b -n 1`, start to exit: {top:.0} ms");
    let n = o.startups;
    vec![
        Row::new(
            5,
            "start-tui",
            format!(
                "start-up: process start to the first dashboard screen with the process table \
                 (eBPF loaded and attached, one /proc scan; {COLS}x{ROWS} pty; median of {n})"
            ),
        )
        .ttop(format!("{tui:.0} ms"))
        .baseline(base.clone())
        .ratio(tui / top)
        .target("< 300 ms", Some(tui < 300.0)),
        Row::new(
            5,
            "start-tui-nobpf",
            format!("start-up, dashboard with `--no-bpf` (/proc only; median of {n})"),
        )
        .ttop(format!("{nobpf:.0} ms"))
        .baseline(base.clone())
        .ratio(nobpf / top)
        .target("< 300 ms", Some(nobpf < 300.0)),
        Row::new(
            5,
            "start-json",
            format!(
                "start-up to the first `--json -d 0.1` frame (a Frame needs two Samples, so this \
                 includes one 100 ms interval; median of {n})"
            ),
        )
        .ttop(format!("{json:.0} ms"))
        .baseline(base)
        .ratio(json / top),
        Row::new(
            5,
            "start-cpu",
            format!(
                "start-up CPU: user+system time of a whole `ttop --json -n 1 -d 0.1` (load, \
                 verify and attach every probe, two samples, one frame; median of {n})"
            ),
        )
        .ttop(format!("{cpu:.0} ms"))
        .baseline(format!("`top -b -n 1`: {cpu_top:.0} ms"))
        .ratio(cpu / cpu_top)
        .target("< 100 ms", Some(cpu < 100.0)),
        Row::new(
            5,
            "start-cpu-kallsyms",
            "the same with `TTOP_KALLSYMS=file` (kernel symbols from /proc/kallsyms, as \
             before the kernel-symbol program; alternating with the row above)",
        )
        .ttop(format!("{cpu_file:.0} ms"))
        .baseline(format!("default: {cpu:.0} ms"))
        .ratio(cpu_file / cpu),
    ]
}

/// CPU seconds used by each pid between two instants over `window`; % of one CPU.
fn cpu_pct_over(pids: &[u32], window: Duration) -> Vec<f64> {
    let c0: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(*p)).collect();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let c1: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(*p)).collect();
    let el = t0.elapsed().as_secs_f64();
    c0.iter()
        .zip(&c1)
        .map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => 100.0 * (b - a) / el,
            _ => f64::NAN,
        })
        .collect()
}

/// Item 1: ttop's own CPU against top's over the same window.
pub fn cpu(o: &Opts) -> Vec<Row> {
    say(&format!(
        "1: CPU of ttop and top over the same {:.0} s",
        o.cpu_secs
    ));
    let mut top = spawn_quiet(&top_bin(), &["-b", "-d", "1"]);
    // top -H scans every thread, as ttop's scan does: the like-for-like baseline.
    let mut top_h = spawn_quiet(&top_bin(), &["-H", "-b", "-d", "1"]);
    let tui = Tui::spawn(TUI_ARGS, COLS, ROWS);
    let mut json = spawn_quiet(&ttop_bin(), &["--json", "-d", "1"]);
    tui.wait_first_screen(secs(20.0));
    std::thread::sleep(secs(2.0)); // past start-up: probes attached, a few ticks done
    let p = cpu_pct_over(
        &[tui.pid(), json.id(), top.id(), top_h.id()],
        secs(o.cpu_secs),
    );
    tui.stop();
    terminate(&mut json, secs(10.0));
    terminate(&mut top, secs(10.0));
    terminate(&mut top_h, secs(10.0));
    let (t, j, b, h) = (p[0], p[1], p[2], p[3]);
    let base = format!("`top -b -d 1`: {}", pct(b));
    let w = o.cpu_secs;
    vec![
        Row::new(
            1,
            "cpu-tui",
            format!(
                "own CPU (user+sys, % of one CPU) over {w:.0} s at -d 1: dashboard with eBPF, \
                 /proc scan and a rendered {COLS}x{ROWS} screen; top over the same window"
            ),
        )
        .ttop(pct(t))
        .baseline(base.clone())
        .ratio(t / b)
        .target("ttop <= top", Some(t <= b)),
        Row::new(
            1,
            "cpu-json",
            format!("own CPU over {w:.0} s at -d 1: `ttop --json` (no rendering)"),
        )
        .ttop(pct(j))
        .baseline(base)
        .ratio(j / b)
        .target("ttop <= top", Some(j <= b)),
        Row::new(
            1,
            "cpu-tui-H",
            format!(
                "own CPU over {w:.0} s at -d 1: the dashboard against `top -H -b -d 1`, \
                 which scans every thread as ttop's scan does"
            ),
        )
        .ttop(pct(t))
        .baseline(format!("`top -H -b -d 1`: {}", pct(h)))
        .ratio(t / h),
    ]
}

/// Item 6 (and item 1 at 10,000 threads): peak RSS and CPU with a big thread pool.
pub fn rss(o: &Opts) -> Vec<Row> {
    let n = o.rss_threads;
    say(&format!("6: peak RSS with {n} threads"));
    let hold = o.rss_secs + 40.0;
    let mut w = Workload::spawn(
        "bench_threads",
        &[n.to_string(), format!("{hold}"), "0".into(), "32".into()],
    );
    let ok = w.wait_for("started=", secs(60.0));
    let mut top = spawn_quiet(&top_bin(), &["-b", "-d", "1"]);
    let mut top_h = spawn_quiet(&top_bin(), &["-H", "-b", "-d", "1"]);
    let tui = Tui::spawn(TUI_ARGS, COLS, ROWS);
    let json = JsonTtop::spawn(&["-d", "1"]);
    tui.wait_first_screen(secs(30.0));
    std::thread::sleep(secs(1.5));
    let p = cpu_pct_over(&[tui.pid(), top.id(), top_h.id()], secs(o.rss_secs));
    let hwm = |pid: u32| status_kb(pid, "VmHWM").unwrap_or(0);
    let (h_tui, h_json, h_top) = (hwm(tui.pid()), hwm(json.pid()), hwm(top.id()));
    tui.stop();
    terminate(&mut top, secs(10.0));
    terminate(&mut top_h, secs(10.0));
    let frames = json.stop();
    let seen = frames
        .iter()
        .flat_map(|f| f["procs"].as_array().into_iter().flatten())
        .filter(|p| p["pid"].as_u64() == Some(u64::from(w.pid)))
        .filter_map(|p| p["threads_seen"].as_u64())
        .max()
        .unwrap_or(0);
    w.kill();
    let started = if ok { n } else { 0 };
    let label = super::micro::group(u64::from(started));
    let base = format!("`top -b -d 1`: {}", mb(h_top));
    let limit = 40 * 1024;
    vec![
        Row::new(
            6,
            "rss-tui",
            format!(
                "peak RSS (VmHWM), dashboard, with {label} sleeping threads on the machine \
                 (ttop's scan saw {} of them in one process)",
                super::micro::group(seen)
            ),
        )
        .ttop(mb(h_tui))
        .baseline(base.clone())
        .ratio(h_tui as f64 / h_top as f64)
        .target("< 40 MB", Some(h_tui < limit && ok)),
        Row::new(
            6,
            "rss-json",
            format!("peak RSS, `ttop --json`, {label} threads"),
        )
        .ttop(mb(h_json))
        .baseline(base)
        .ratio(h_json as f64 / h_top as f64)
        .target("< 40 MB", Some(h_json < limit && ok)),
        Row::new(
            1,
            "cpu-10k",
            format!(
                "own CPU over {:.0} s at -d 1 with {label} threads on the machine: dashboard \
                 (scans every thread) vs `top -b -d 1` (scans processes)",
                o.rss_secs
            ),
        )
        .ttop(pct(p[0]))
        .baseline(format!("`top -b -d 1`: {}", pct(p[1])))
        .ratio(p[0] / p[1])
        .target("ttop <= top", Some(p[0] <= p[1])),
        Row::new(
            1,
            "cpu-10k-H",
            format!(
                "own CPU over {:.0} s at -d 1 with {label} threads: dashboard vs \
                 `top -H -b -d 1` (both scan every thread)",
                o.rss_secs
            ),
        )
        .ttop(pct(p[0]))
        .baseline(format!("`top -H -b -d 1`: {}", pct(p[2])))
        .ratio(p[0] / p[2]),
    ]
}

/// Wait until `pid` holds BPF programs and their number stops changing.
fn wait_progs(pid: u32, limit: Duration) -> Vec<u32> {
    let t0 = Instant::now();
    let mut last = Vec::new();
    while t0.elapsed() < limit {
        let ids = bpfstats::prog_ids_of(pid);
        if !ids.is_empty() && ids == last {
            return ids;
        }
        last = ids;
        std::thread::sleep(Duration::from_millis(300));
    }
    last
}

struct Storm {
    key: &'static str,
    label: String,
    bin: &'static str,
    args: Vec<String>,
    /// The workload's count of units of work done (a key it prints), and the unit's name.
    units: &'static str,
    unit: &'static str,
}

fn storms(secs_each: f64) -> Vec<Storm> {
    vec![
        Storm {
            key: "churn",
            label: "thread churn (4 threads at a time, 100 µs of work each)".into(),
            bin: "bench_churn",
            args: vec![format!("{secs_each}"), "4".into(), "100".into()],
            units: "created",
            unit: "thread",
        },
        Storm {
            key: "mutex",
            label: "mutex storm (4 threads, one pthread mutex)".into(),
            bin: "bench_mutex",
            args: vec!["4".into(), format!("{secs_each}")],
            units: "ops",
            unit: "operation",
        },
    ]
}

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

/// Another build of ttop to measure beside this one in item 3 (`TTOP_BENCH_BEFORE=PATH`):
/// a change's before and after in one run, as absolute rates on a shared VM drift
/// between runs by more than the change.
fn before_bin() -> Option<std::path::PathBuf> {
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

/// `ttop record` for `secs` at -d 1 into a fresh file; (keyframe sizes, delta sizes).
fn record_for(name: &str, rec_secs: f64) -> (Vec<u64>, Vec<u64>) {
    let path = tmp(name);
    let _ = std::fs::remove_file(&path);
    let st = Command::new(ttop_bin())
        .args(["record", "-d", "1", "--duration"])
        .arg(format!("{rec_secs}"))
        .arg("-o")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !st.is_ok_and(|s| s.success()) {
        return (vec![], vec![]);
    }
    micro::record_sizes(&path)
}

fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<u64>() as f64 / v.len() as f64
    }
}

fn bytes_row(key: &str, what: String, sizes: &(Vec<u64>, Vec<u64>)) -> Row {
    let every = ttop::record::format::KEYFRAME_EVERY as f64;
    let (k, d) = (mean(&sizes.0), mean(&sizes.1));
    let per = (k + (every - 1.0) * d) / every;
    Row::new(7, key, what).ttop(format!(
        "{:.1} KB/frame (keyframe {:.1} KB, delta {:.1} KB; 1 keyframe in {every:.0}) ≈ {:.1} MB/hour",
        per / 1e3,
        k / 1e3,
        d / 1e3,
        per * 3600.0 / 1e6
    ))
}

/// Item 7: recording size per frame and seek time in a long recording.
pub fn recording(o: &Opts) -> Vec<Row> {
    say("7: recording size and seek");
    let r = o.record_secs;
    let idle = record_for("idle.ttop", r);
    let mut w = Workload::spawn(
        "bench_threads",
        &[
            "2000".into(),
            format!("{}", r + 40.0),
            "100".into(),
            "32".into(),
        ],
    );
    w.wait_for("started=", secs(60.0));
    let busy = record_for("busy.ttop", r);
    w.kill();
    let path = tmp("hour.ttop");
    let shape = Shape {
        procs: 200,
        threads_per: 5,
    };
    let bytes = micro::write_recording(&path, o.seek_frames, shape);
    let reps = if o.quick { 1 } else { 5 };
    let (mut opens, mut seeks) = (vec![], vec![]);
    for _ in 0..reps {
        let (a, b) = micro::seek_middle(&path);
        opens.push(a.as_secs_f64() * 1e3);
        seeks.push(b.as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_file(&path);
    let hours = o.seek_frames as f64 / 3600.0;
    vec![
        bytes_row(
            "rec-idle",
            format!("`ttop record -d 1` for {r:.0} s on this machine with no workload (eBPF on)"),
            &idle,
        ),
        bytes_row(
            "rec-2000",
            format!(
                "`ttop record -d 1` for {r:.0} s with 2,000 more threads, each waking every 100 ms"
            ),
            &busy,
        ),
        Row::new(
            7,
            "rec-seek",
            format!(
                "replay: open a {hours:.2}-hour recording ({} Samples at 1 s of a synthetic \
                 1,000-thread machine, {}) and seek to its middle: decode two Samples and derive \
                 the Frame (median of {reps})",
                o.seek_frames,
                mb(bytes / 1024)
            ),
        )
        .ttop(format!(
            "open {:.1} ms + seek {:.1} ms",
            median(&opens),
            median(&seeks)
        )),
    ]
}

fn churn_rate(run_secs: f64, batch: u32) -> (f64, f64, u32) {
    let w = Workload::spawn(
        "bench_churn",
        &[
            format!("{run_secs}"),
            batch.to_string(),
            "0".into(),
            "16".into(),
        ],
    );
    let pid = w.pid;
    let (kv, _) = w.finish(secs(run_secs + 60.0));
    (kv_f64(&kv, "rate"), kv_f64(&kv, "created"), pid)
}

/// Item 8: the fastest thread creation this machine does, counted by ttop.
pub fn scale(o: &Opts) -> Vec<Row> {
    say("8: scale: the highest thread-creation rate, counted by ttop");
    let trial = if o.quick { 0.5 } else { 2.0 };
    let mut best = (0.0, 64u32);
    let batches: &[u32] = if o.quick {
        &[1024]
    } else {
        &[16, 64, 256, 1024]
    };
    for &b in batches {
        let (r, _, _) = churn_rate(trial, b);
        if r > best.0 {
            best = (r, b);
        }
    }
    let batch = best.1;
    let (base_rate, _, _) = churn_rate(o.scale_secs, batch);
    let ttop = JsonTtop::spawn(&["-d", "1"]);
    let ids = wait_progs(ttop.pid(), secs(20.0));
    std::thread::sleep(secs(1.5));
    let a = bpfstats::snapshot(&ids);
    let (with_rate, created, pid) = churn_rate(o.scale_secs, batch);
    std::thread::sleep(secs(2.5)); // at least one full interval after the last exit
    let b = bpfstats::snapshot(&ids);
    let frames = ttop.stop();
    let misses: u64 = bpfstats::diff(&a, &b)
        .iter()
        .map(|p| p.recursion_misses)
        .sum();
    let rows_for: Vec<&Value> = frames
        .iter()
        .flat_map(|f| f["procs"].as_array().into_iter().flatten())
        .filter(|p| p["pid"].as_u64() == Some(u64::from(pid)))
        .collect();
    let sum = |k: &str| {
        rows_for
            .iter()
            .map(|r| r[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let (seen_created, seen_exited, ghosts) = (
        sum("threads_created"),
        sum("threads_exited"),
        sum("ghost_threads"),
    );
    let drops: u64 = frames
        .iter()
        .map(|f| f["drops"].as_u64().unwrap_or(0))
        .sum();
    // threads_created also counts the process's own birth (its task_newtask).
    let want = created as u64 + 1;
    let missing_c = want.abs_diff(seen_created);
    let missing_e = want.abs_diff(seen_exited);
    let accounted = missing_c.max(missing_e) <= drops + misses;
    let target = 100_000.0;
    vec![
        Row::new(
            8,
            "scale-rate",
            format!(
                "thread creations per second, the most this machine does (batches of {batch}, \
                 no work, 16 KB stacks; {:.0} s runs), without and with `ttop --json -d 1`",
                o.scale_secs
            ),
        )
        .ttop(rate(with_rate))
        .baseline(format!("no monitor: {}", rate(base_rate)))
        .ratio(with_rate / base_rate)
        .target("100k/s, or the machine's most", Some(base_rate >= target))
        .verdict(if base_rate >= target {
            "met".to_string()
        } else {
            format!("machine max {}", rate(base_rate))
        }),
        Row::new(
            8,
            "scale-count",
            "at that rate: threads ttop counted (created / exited / ghosts) vs the workload's \
             own count, and events reported lost (map drops + BPF recursion misses)",
        )
        .ttop(format!(
            "{seen_created} / {seen_exited} / {ghosts}; lost and reported: {drops} drops, \
             {misses} misses"
        ))
        .baseline(format!("workload: {want} (threads + its own process)"))
        .ratio(seen_created as f64 / want as f64)
        .target("every event counted or reported lost", Some(accounted)),
    ]
}
