//! Item 5: start-up time, to the first dashboard screen, the first `--json` frame and
//! `top`'s first screen, and the CPU a whole short look costs.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::procs::{Tui, median, reap_cpu, terminate, top_bin, ttop_bin};
use super::{COLS, Opts, ROWS, Row, TUI_ARGS, say, secs};

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
