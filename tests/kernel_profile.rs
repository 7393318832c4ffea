//! `ttop profile` (issue 20, on-CPU sampling and export): real samples of real
//! workloads under real eBPF, compared with what the workload knows it did, with perf
//! over the same seconds, and with the controls that must not show up; and the profile
//! that `--profile` carries in live frames and recordings. Off-CPU profiles are checked
//! in kernel_profile_offcpu.rs. Needs root.

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use common::profile::*;
use common::watch::pid_of;
use common::*;

/// The CPU time `pid`'s threads have used so far (ns: the kernel's own sums in
/// /proc/PID/task/*/schedstat; the workload's threads live through the test).
fn cpu_ns(pid: u64) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Samples per leaf function (the last frame of each stack).
fn leaves(lines: &[(String, u64)]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (s, n) in lines {
        *m.entry(s.rsplit(';').next().unwrap().to_string())
            .or_default() += n;
    }
    m
}

/// Seed 004's question, answered by the numbers the workload knows: two functions that
/// burn CPU 3:1 get 75% and 25% of the samples (±5), both under the thread's start
/// function, and the sample count is 99 per CPU-second the process used (±10%).
#[test]
fn a_known_3_to_1_split_comes_out_3_to_1() {
    if !require_root("a_known_3_to_1_split_comes_out_3_to_1") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("burn31", &["1", "9"]);
    let pid = pid_of(&mut w);
    let (before, t0) = (cpu_ns(pid), std::time::Instant::now());
    let (lines, err) = profile(&["-p", &pid.to_string(), "--duration", "6"]);
    let used_s = (cpu_ns(pid) - before) as f64 / 1e9;
    let call_s = t0.elapsed().as_secs_f64();
    let _ = w.kill();
    let _ = w.wait();
    eprintln!("{err}{lines:#?}");
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let l = leaves(&lines);
    let share = |f: &str| 100.0 * *l.get(f).unwrap_or(&0) as f64 / total as f64;
    let (a, b) = (share("burn_a"), share("burn_b"));
    eprintln!("burn_a {a:.1}%, burn_b {b:.1}%, {total} samples, {used_s:.2} CPU-s");
    // Sampling is chance: the band is four binomial standard deviations (7.1 points
    // at 600 samples; a fixed 5 points is 2.8 of them: 1 run in 200 by chance alone).
    let band = 100.0 * share_band(total, 0.75);
    assert!(
        (a - 75.0).abs() <= band && (b - 25.0).abs() <= band,
        "{a:.1} / {b:.1} (±{band:.1})"
    );
    // Both under the thread's start function: the unwinder went through the program.
    for f in ["burn_a", "burn_b"] {
        let under: u64 = lines
            .iter()
            .filter(|(s, _)| s.ends_with(&format!(";worker;{f}")))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(under, l[f], "{f} not always under worker: {lines:?}");
    }
    // Every line starts with the process and its thread group.
    let root = format!("burn31-{pid};burn31;");
    assert!(lines.iter().all(|(s, _)| s.starts_with(&root)), "{lines:?}");
    // ttop loads before it samples and names the stacks after: of the CPU used over the
    // whole call, the share of the sampling window (the summary's) was sampled.
    let window = summary_window(&err);
    let want = 99.0 * used_s * (window / call_s).min(1.0);
    assert!(
        (total as f64 - want).abs() <= 0.1 * want,
        "{total} samples for {used_s:.2} CPU-seconds over a {call_s:.2} s call, \
         {window:.2} s sampled (expected {want:.0} ±10%)"
    );
}

/// The control: a process that is not watched gives no sample, and neither does the
/// idle task when the whole machine is profiled.
#[test]
fn only_the_watched_process_is_sampled() {
    if !require_root("only_the_watched_process_is_sampled") {
        return;
    }
    let _g = kernel_lock();
    // Both run far longer than the two profiles and are stopped after them.
    let mut a = spawn_workload("burn31", &["1", "120"]);
    let mut b = spawn_workload("spin", &["1", "120"]);
    let pa = pid_of(&mut a);
    let (watched, _) = profile(&["-p", &pa.to_string(), "--duration", "2"]);
    let (all, _) = profile(&["--duration", "2"]);
    stop_all_running(&mut [(&mut a, "burn31"), (&mut b, "spin")]);
    assert!(!watched.is_empty());
    let prefix = format!("burn31-{pa};");
    assert!(
        watched.iter().all(|(s, _)| s.starts_with(&prefix)),
        "a process that was not asked for: {watched:?}"
    );
    assert!(
        all.iter().any(|(s, _)| s.starts_with(&prefix)),
        "the whole machine's profile lacks the burner"
    );
    assert!(
        all.iter().any(|(s, _)| s.starts_with("spin-")),
        "the whole machine's profile lacks the spinner"
    );
    assert!(
        !all.iter().any(|(s, _)| s.starts_with("swapper")),
        "idle samples were kept"
    );
}

/// Against perf: `perf record -F 499 -g -p PID`, then `ttop profile` on the same steady
/// workload, agree on the leaf functions that hold at least 2% of samples, within 5
/// points each. At 499 Hz each side takes ~5,000 samples of the two threads, so the two
/// samplers' own spread on a 75% share is 0.6 points each; at 99 Hz it was 1.4, and a
/// CI run saw 72.2% against 77.4%. One after the other, so that neither sampler's interrupts are in the
/// other's samples. This test found ttop's own perturbation: while the BPF side woke the
/// reader on every sample, 5-15% of ttop's samples were the kernel's
/// irqentry_exit_to_user_mode (the wake-up's irq_work and reschedule on the sampled CPU);
/// perf saw 0.1%. Needs perf (`.ci/deps` installs linux-perf): skipped, said, without
/// it, except under CI, where that fails.
#[test]
fn leaf_functions_agree_with_perf() {
    const HZ: &str = "499";
    if !require_root("leaf_functions_agree_with_perf") {
        return;
    }
    let perf_ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !perf_ok {
        assert!(
            !is_ci(),
            "CI=true but perf is missing (.ci/deps installs linux-perf)"
        );
        eprintln!("SKIPPED leaf_functions_agree_with_perf: perf is not installed");
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("burn31", &["2", "13"]);
    let pid = pid_of(&mut w).to_string();
    let data = tmp("perf.data");
    let perf = Command::new("perf")
        .args(["record", "-q", "-F", HZ, "-g", "-o"])
        .arg(&data)
        .args(["-p", &pid, "--", "sleep", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .status()
        .unwrap();
    assert!(perf.success(), "perf record");
    let (lines, _) = profile(&["-p", &pid, "--duration", "5", "--freq", HZ]);
    let _ = w.kill();
    let _ = w.wait();
    let report = Command::new("perf")
        .args(["report", "-i"])
        .arg(&data)
        .args([
            "--no-children",
            "--sort",
            "symbol",
            "--stdio",
            "-q",
            "-g",
            "none",
        ])
        .output()
        .unwrap();
    // "    74.82%  [.] burn_a"
    let mut perf_share = BTreeMap::new();
    for l in String::from_utf8_lossy(&report.stdout).lines() {
        let mut it = l.split_whitespace();
        let (Some(p), Some(_kind), Some(sym)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if let Some(p) = p.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
            *perf_share.entry(sym.to_string()).or_insert(0.0) += p;
        }
    }
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let ours: BTreeMap<String, f64> = leaves(&lines)
        .into_iter()
        .map(|(f, n)| {
            // Kernel frames are marked _[k] in folded stacks; perf names them bare.
            let f = f.trim_end_matches("_[k]").to_string();
            (f, 100.0 * n as f64 / total as f64)
        })
        .collect();
    eprintln!("perf: {perf_share:?}\nttop: {ours:?}");
    let top = |m: &BTreeMap<String, f64>| -> Vec<String> {
        let mut v: Vec<_> = m.iter().filter(|(_, p)| **p >= 2.0).collect();
        v.sort_by(|a, b| b.1.total_cmp(a.1));
        v.into_iter().take(5).map(|(f, _)| f.clone()).collect()
    };
    let (tp, to) = (top(&perf_share), top(&ours));
    assert!(!tp.is_empty(), "perf saw nothing");
    let mut a = tp.clone();
    let mut b = to.clone();
    a.sort();
    b.sort();
    assert_eq!(
        a, b,
        "the leaf functions above 2%: perf {tp:?}, ttop {to:?}"
    );
    for f in &tp {
        let (p, o) = (perf_share[f], ours[f]);
        assert!((p - o).abs() < 5.0, "{f}: perf {p:.1}%, ttop {o:.1}%");
    }
}

/// The folded output and the SVG are what their readers expect: inferno draws the
/// folded file, the SVG is XML with one <svg> root naming the functions.
#[test]
fn folded_and_svg_outputs_are_well_formed() {
    if !require_root("folded_and_svg_outputs_are_well_formed") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("burn31", &["1", "5"]);
    let pid = pid_of(&mut w).to_string();
    let (folded, svg) = (tmp("burn.folded"), tmp("burn.svg"));
    let (stdout, _) = profile(&[
        "-p",
        &pid,
        "--duration",
        "2",
        "-o",
        folded.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let _ = w.kill();
    let _ = w.wait();
    assert!(stdout.is_empty(), "-o writes the file, not stdout");
    let text = std::fs::read_to_string(&folded).unwrap();
    let lines = parse_folded(&text);
    assert!(!lines.is_empty());
    // Round trip: inferno reads what ttop wrote.
    let mut opts = inferno::flamegraph::Options::default();
    let mut again = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut again).expect("inferno reads it");
    let svg = std::fs::read_to_string(&svg).unwrap();
    let mut r = quick_xml::Reader::from_str(&svg);
    let mut roots = 0;
    let mut depth = 0;
    loop {
        match r.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) => {
                if depth == 0 {
                    assert_eq!(e.name().as_ref(), b"svg");
                    roots += 1;
                }
                depth += 1;
            }
            quick_xml::events::Event::End(_) => depth -= 1,
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!((roots, depth), (1, 0));
    for f in ["burn_a", "burn_b", "worker"] {
        assert!(svg.contains(f), "the SVG names {f}");
    }
}

/// Bad input: a process that does not exist, a frequency of 0, and an SVG with no
/// samples each get a clear error and a failing exit, never a panic.
#[test]
fn bad_input_is_refused_clearly() {
    let run = |args: &[&str]| {
        let o = Command::new(ttop_bin())
            .arg("profile")
            .args(args)
            .output()
            .unwrap();
        (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (st, err) = run(&["-p", "999999999", "--duration", "0.2"]);
    assert!(
        !st.success() && err.contains("no such process: 999999999"),
        "{err}"
    );
    let (st, err) = run(&["-F", "0"]);
    assert!(!st.success() && err.contains("--freq"), "{err}");
    let (st, err) = run(&["--off-cpu", "--duration", "0.2"]);
    assert!(
        !st.success() && err.contains("off-CPU profiling needs -p PID or --comm NAME"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    if !require_root("bad_input_is_refused_clearly") {
        return;
    }
    let _g = kernel_lock();
    let svg = tmp("none.svg");
    let (st, err) = run(&[
        "--comm",
        "no-such-comm-x",
        "--duration",
        "0.3",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(!st.success() && err.contains("no samples"), "{err}");
}

/// `--profile` in the collecting modes: each `--json` frame carries the interval's
/// stacks of the watched process (the 3:1 burner: 75/25 ±5 over the frames, 99 samples
/// per second of its one busy thread ±10%), never an unwatched spinner's; the
/// recording made alongside replays to the same frames, profile included; without
/// `--profile` the field is null (not measured), never an empty profile.
#[test]
fn json_frames_and_recordings_carry_the_profile() {
    if !require_root("json_frames_and_recordings_carry_the_profile") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("burn31", &["1", "12"]);
    let pid = pid_of(&mut w);
    let mut other = spawn_workload("spin", &["1", "12"]);
    let rec = tmp("with-profile.ttop");
    let _ = std::fs::remove_file(&rec);
    let live = ttop_spawn(&[
        "--json",
        "-n",
        "5",
        "-d",
        "1",
        "--profile",
        "-p",
        &pid.to_string(),
        "--record",
        rec.to_str().unwrap(),
    ])
    .frames(std::time::Duration::from_secs(40));
    let plain =
        ttop_spawn(&["--json", "-n", "2", "-d", "0.5"]).frames(std::time::Duration::from_secs(30));
    let _ = w.kill();
    let _ = w.wait();
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(live.len(), 5);
    let (mut a, mut b, mut total, mut secs) = (0u64, 0u64, 0u64, 0.0);
    let mut others: Vec<(String, u64)> = Vec::new();
    for fr in &live {
        let p = &fr["profile"];
        assert_eq!(p["hz"], 99, "{p}");
        assert_eq!(p["lost"], 0, "{p}");
        let stacks = p["stacks"].as_array().unwrap();
        let listed: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
        assert_eq!(
            listed + p["cut_samples"].as_u64().unwrap(),
            p["samples"].as_u64().unwrap()
        );
        total += p["samples"].as_u64().unwrap();
        // The burner's own CPU-seconds in the frame (it shares two CPUs with a spinner
        // and ttop, and the host steals at times): 99 samples per second of it.
        let row = common::stream::proc_row(fr, pid, "burn31");
        secs += row["cpu_pct_true"].as_f64().unwrap() / 100.0 * fr["interval_s"].as_f64().unwrap();
        for s in stacks {
            let st = s["stack"].as_str().unwrap();
            assert!(
                st.starts_with(&format!("burn31-{pid};")),
                "only the watched process: {st}"
            );
            let n = s["count"].as_u64().unwrap();
            if st.ends_with(";worker;burn_a") {
                a += n;
            } else if st.ends_with(";worker;burn_b") {
                b += n;
            } else {
                others.push((st.to_string(), n));
            }
        }
    }
    let share = a as f64 / (a + b).max(1) as f64;
    let band = share_band(a + b, 0.75);
    assert!(
        (share - 0.75).abs() <= band,
        "burn_a {a}, burn_b {b} (share {share:.3}, ±{band:.3}), other stacks {others:?}"
    );
    let want = 99.0 * secs;
    assert!(
        (total as f64 - want).abs() <= 0.1 * want,
        "{total} samples over {secs:.2} CPU-seconds"
    );
    for fr in &plain {
        assert!(fr["profile"].is_null(), "not measured: {}", fr["profile"]);
    }
    let out = Command::new(ttop_bin())
        .args(["replay", rec.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replayed.len(), live.len());
    for (l, r) in live.iter().zip(&replayed) {
        assert_eq!(l["profile"], r["profile"], "frame {}", l["seq"]);
        assert_eq!(l, r, "frame {}", l["seq"]);
    }
}
