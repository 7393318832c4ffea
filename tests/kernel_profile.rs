//! `ttop profile` (issue 20, on-CPU sampling and export): real samples of real
//! workloads under real eBPF, compared with what the workload knows it did, with perf
//! over the same seconds, and with the controls that must not show up. Needs root.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn pid_of(w: &mut Child) -> u32 {
    let mut line = String::new();
    BufReader::new(w.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    parse_kv(&line)["pid"].parse().unwrap()
}

/// The CPU time `pid`'s threads have used so far (ns: the kernel's own sums in
/// /proc/PID/task/*/schedstat; the workload's threads live through the test).
fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Run `ttop profile ARGS`; returns (folded lines as (stack, count), stderr).
fn profile(args: &[&str]) -> (Vec<(String, u64)>, String) {
    let out = Command::new(ttop_bin())
        .arg("profile")
        .args(args)
        .output()
        .expect("run ttop profile");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ttop profile {args:?}: {err}");
    (parse_folded(&String::from_utf8_lossy(&out.stdout)), err)
}

fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .map(|l| {
            let (stack, n) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no count: {l:?}"));
            (
                stack.to_string(),
                n.parse().unwrap_or_else(|_| panic!("bad count: {l:?}")),
            )
        })
        .collect()
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
    let before = cpu_ns(pid);
    let (lines, err) = profile(&["-p", &pid.to_string(), "--duration", "6"]);
    let used_s = (cpu_ns(pid) - before) as f64 / 1e9;
    let _ = w.kill();
    let _ = w.wait();
    eprintln!("{err}{lines:#?}");
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let l = leaves(&lines);
    let share = |f: &str| 100.0 * *l.get(f).unwrap_or(&0) as f64 / total as f64;
    let (a, b) = (share("burn_a"), share("burn_b"));
    eprintln!("burn_a {a:.1}%, burn_b {b:.1}%, {total} samples, {used_s:.2} CPU-s");
    assert!(
        (a - 75.0).abs() <= 5.0 && (b - 25.0).abs() <= 5.0,
        "{a:.1} / {b:.1}"
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
    // ttop loads before it samples: the CPU used over the whole call is a little more
    // than what was sampled.
    let want = 99.0 * used_s;
    assert!(
        (total as f64 - want).abs() <= 0.1 * want,
        "{total} samples for {used_s:.2} CPU-seconds (expected {want:.0} ±10%)"
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
    let mut a = spawn_workload("burn31", &["1", "5"]);
    let mut b = spawn_workload("spin", &["1", "5"]);
    let pa = pid_of(&mut a);
    let (watched, _) = profile(&["-p", &pa.to_string(), "--duration", "2"]);
    let (all, _) = profile(&["--duration", "2"]);
    for w in [&mut a, &mut b] {
        let _ = w.kill();
        let _ = w.wait();
    }
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

/// Against perf: `perf record -F 99 -g -p PID`, then `ttop profile` on the same steady
/// workload, agree on the leaf functions that hold at least 2% of samples, within 5
/// points each. One after the other, so that neither sampler's interrupts are in the
/// other's samples. This test found ttop's own perturbation: while the BPF side woke the
/// reader on every sample, 5-15% of ttop's samples were the kernel's
/// irqentry_exit_to_user_mode (the wake-up's irq_work and reschedule on the sampled CPU);
/// perf saw 0.1%. Needs perf (`.ci/deps` installs linux-perf): skipped, said, without
/// it, except under CI, where that fails.
#[test]
fn leaf_functions_agree_with_perf() {
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
        .args(["record", "-q", "-F", "99", "-g", "-o"])
        .arg(&data)
        .args(["-p", &pid, "--", "sleep", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .status()
        .unwrap();
    assert!(perf.success(), "perf record");
    let (lines, _) = profile(&["-p", &pid, "--duration", "5"]);
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

/// Off-CPU time per (thread, first frame) in seconds, from folded lines whose counts
/// are microseconds: `offcpu-PID;THREAD;[off-cpu: REASON];...`.
fn off_cpu_by_thread(lines: &[(String, u64)]) -> BTreeMap<(String, String), f64> {
    let mut m = BTreeMap::new();
    for (s, n) in lines {
        let f: Vec<&str> = s.split(';').collect();
        *m.entry((f[1].to_string(), f[2].to_string())).or_default() += *n as f64 / 1e6;
    }
    m
}

/// The `offcpu` workload's threads over `window` seconds (see tests/workloads/offcpu.c):
/// the sleeper asleep 40-60% of it under `sleep`, the waiter ≥ 90% under `futex`, the
/// reader ≥ 90% under `wait`, the spinner under 5% and only preempted (`runnable`).
fn assert_known_waits(by: &BTreeMap<(String, String), f64>, window: f64) {
    let get = |t: &str, r: &str| {
        by.get(&(t.to_string(), format!("[off-cpu: {r}]")))
            .copied()
            .unwrap_or(0.0)
    };
    let share = get("sleeper", "sleep") / window;
    assert!(
        (0.40..=0.60).contains(&share),
        "sleeper asleep {share:.3} of the window"
    );
    assert!(get("waiter", "futex") / window >= 0.9, "{by:?}");
    assert!(get("reader", "wait") / window >= 0.9, "{by:?}");
    let spinner: f64 = by
        .iter()
        .filter(|((t, _), _)| t == "spinner")
        .map(|(_, s)| s)
        .sum();
    assert!(
        spinner / window < 0.05,
        "the spinner off-CPU {spinner:.3} s"
    );
    assert_eq!(
        get("spinner", "runnable"),
        spinner,
        "only preempted: {by:?}"
    );
}

/// Off-CPU mode against threads whose waits the workload knows: `sleeper` sleeps 50 ms
/// and spins 50 ms (half its time off-CPU, under nanosleep, ±10 points), `waiter` and
/// `reader` wait all the time (in futex and in read); the control, `spinner`, never
/// leaves the CPU on its own and shows only the odd preemption. No stack ends in ttop's
/// own BPF program or the tracepoint that ran it.
#[test]
fn off_cpu_time_is_where_the_threads_waited() {
    if !require_root("off_cpu_time_is_where_the_threads_waited") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("offcpu", &["9"]);
    let pid = pid_of(&mut w);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let window = 5.0;
    let (lines, err) = profile(&["--off-cpu", "-p", &pid.to_string(), "--duration", "5"]);
    let _ = w.kill();
    let _ = w.wait();
    eprintln!("{err}");
    let by = off_cpu_by_thread(&lines);
    eprintln!("{by:#?}");
    assert_known_waits(&by, window);
    let has = |thread: &str, reason: &str, frames: &[&str]| {
        lines.iter().any(|(s, n)| {
            let f: Vec<&str> = s.split(';').collect();
            f[1] == thread
                && f[2] == format!("[off-cpu: {reason}]")
                && *n > 100_000
                && frames.iter().all(|want| f.iter().any(|x| x.contains(want)))
        })
    };
    assert!(
        has(
            "sleeper",
            "sleep",
            &["sleeper", "nap", "nanosleep", "do_nanosleep_[k]"]
        ),
        "{lines:#?}"
    );
    assert!(
        has(
            "waiter",
            "futex",
            &["waiter", "park", "pthread_cond", "futex_wait"]
        ),
        "{lines:#?}"
    );
    assert!(
        has("reader", "wait", &["reader", "drain", "read"]),
        "{lines:#?}"
    );
    for (s, _) in &lines {
        let leaf = s.rsplit(';').next().unwrap();
        assert!(
            !leaf.starts_with("bpf_") && !s.contains("bpf_prog_"),
            "ttop's own frames: {s}"
        );
    }
}

/// Seed 002 in off-CPU mode: the victim of a throttled /proc/PID/environ reader spends
/// its off-CPU time blocked on its mmap_lock, and the stack says so: mmap or munmap in
/// user space, an rwsem slow path in the kernel, under the `blocked` reason.
#[test]
fn off_cpu_shows_the_mmap_lock_stall_of_seed_002() {
    if !require_root("off_cpu_shows_the_mmap_lock_stall_of_seed_002") {
        return;
    }
    let _g = kernel_lock();
    let mut v = spawn_workload("mmaplock", &["victim", "2", "6"]);
    let vpid = pid_of(&mut v);
    let mut rd = spawn_workload("mmaplock", &["reader", &vpid.to_string(), "5"]);
    let (lines, err) = profile(&["--off-cpu", "-p", &vpid.to_string(), "--duration", "4"]);
    let _ = rd.wait();
    let _ = v.wait();
    eprintln!("{err}");
    let blocked: f64 = lines
        .iter()
        .filter(|(s, _)| {
            s.contains(";[off-cpu: blocked];")
                && (s.contains("mmap") || s.contains("munmap"))
                && s.contains("rwsem_down_")
        })
        .map(|(_, n)| *n as f64 / 1e6)
        .sum();
    assert!(
        blocked >= 0.1,
        "{blocked:.3} s blocked on mmap_lock: {lines:#?}"
    );
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
        secs += fr["interval_s"].as_f64().unwrap();
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
    assert!(
        (0.70..=0.80).contains(&share),
        "burn_a {a}, burn_b {b}, other stacks {others:?}"
    );
    let want = 99.0 * secs;
    assert!(
        (total as f64 - want).abs() <= 0.1 * want,
        "{total} samples over {secs:.2} s"
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

/// `--profile --off-cpu` on the live collector (what `o` asks for in the profile view):
/// each `--json` frame's profile says `off_cpu` and holds that interval's microseconds
/// off the CPU of the watched process. Over 4 intervals the threads wait as the workload
/// knows (`assert_known_waits`). Without -p or --comm it is refused with a problems line
/// and the profile stays null.
#[test]
fn live_frames_carry_off_cpu_time() {
    if !require_root("live_frames_carry_off_cpu_time") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("offcpu", &["9"]);
    let pid = pid_of(&mut w);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let live = ttop_spawn(&[
        "--json",
        "-n",
        "5",
        "-d",
        "1",
        "--profile",
        "--off-cpu",
        "-p",
        &pid.to_string(),
    ])
    .frames(std::time::Duration::from_secs(40));
    let refused = ttop_spawn(&["--json", "-n", "2", "-d", "0.5", "--profile", "--off-cpu"])
        .frames(std::time::Duration::from_secs(30));
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(live.len(), 5);
    let mut lines: Vec<(String, u64)> = Vec::new();
    let mut secs = 0.0;
    // The first frame's interval began before the probes were attached: skip it.
    for fr in &live[1..] {
        let p = &fr["profile"];
        assert_eq!(p["off_cpu"], true, "{p}");
        secs += fr["interval_s"].as_f64().unwrap();
        for s in p["stacks"].as_array().unwrap() {
            let st = s["stack"].as_str().unwrap();
            assert!(st.starts_with(&format!("offcpu-{pid};")), "{st}");
            lines.push((st.to_string(), s["count"].as_u64().unwrap()));
        }
        assert_eq!(p["cut_stacks"], 0, "few stacks: all listed ({p})");
    }
    let by = off_cpu_by_thread(&lines);
    eprintln!("{secs:.2} s: {by:#?}");
    assert_known_waits(&by, secs);
    for fr in &refused {
        assert!(fr["profile"].is_null(), "{}", fr["profile"]);
    }
    let problems = refused[0]["problems"].to_string();
    assert!(
        problems.contains("off-CPU stacks need -p or --comm"),
        "{problems}"
    );
}

/// Seed 000 in off-CPU mode: 120 threads that each create, run and join a short thread.
/// Their waits on glibc's stack-cache lock come out as futex waits with the seed's own
/// stack, `pthread_create -> allocate_stack -> get_cached_stack -> __lll_lock_wait_private`,
/// or the free side in pthread_join, `__nptl_deallocate_stack -> __lll_lock_wait_private`.
/// The control, the same work done by a pool of the same 120 threads (`creators ... 1`),
/// has no such stack.
#[test]
fn off_cpu_shows_seed_000_stack_cache_waits() {
    if !require_root("off_cpu_shows_seed_000_stack_cache_waits") {
        return;
    }
    let _g = kernel_lock();
    let lock_waits = |pool: &str| -> (u64, Vec<(String, u64)>) {
        let mut w = spawn_workload("creators", &["120", "5", "100", pool]);
        let pid = pid_of(&mut w);
        std::thread::sleep(std::time::Duration::from_millis(300));
        // --rt: under 120 churning threads the draining thread is starved at normal
        // priority and the ring drops 80,000-180,000 records a window (a window then
        // holds the seed's stack about 2 times in 3); at SCHED_FIFO 1 it kept up in 5 of 5
        // runs by hand (no loss, the stack in each).
        let (lines, err) = profile(&[
            "--rt",
            "--off-cpu",
            "-p",
            &pid.to_string(),
            "--duration",
            "3",
        ]);
        let _ = w.kill();
        let _ = w.wait();
        eprintln!("pool={pool}: {err}");
        let us = lines
            .iter()
            .filter(|(s, _)| {
                s.contains("[off-cpu: futex]")
                    && s.contains("lll_lock_wait_private")
                    && (s.contains("get_cached_stack") || s.contains("deallocate_stack"))
            })
            .map(|(_, n)| n)
            .sum();
        (us, lines)
    };
    // Which side waits varies, and so does whether a 3 s window holds such a wait at all:
    // at 100,000+ switches a second the ring buffer drops most waits (the run says how
    // many), and some windows have no contention on that lock. In one series 3 of 5
    // windows held it; up to 6 windows are tried. Either side is the seed's lock.
    let seed_chain = |lines: &[(String, u64)]| {
        lines.iter().any(|(s, _)| {
            s.contains(";creator;__pthread_create_2_1;allocate_stack;get_cached_stack;__GI___lll_lock_wait_private;")
                || s.contains(";creator;__pthread_clockjoin_ex;__GI___nptl_deallocate_stack;__GI___lll_lock_wait_private;")
        })
    };
    let mut tries = 0;
    let (churn, lines) = loop {
        tries += 1;
        let (us, lines) = lock_waits("0");
        if (us > 0 && seed_chain(&lines)) || tries == 6 {
            break (us, lines);
        }
        // One line per retry, so how often it takes one is seen in the log.
        eprintln!(
            "window {tries}: {us} us of stack-cache lock waits, seed chain {}; once more",
            seed_chain(&lines)
        );
    };
    assert!(
        churn > 0 && seed_chain(&lines),
        "no waiter on glibc's stack cache lock under creator() in {tries} windows: {lines:#?}"
    );
    eprintln!("found in window {tries}");
    let (pool, lines) = lock_waits("1");
    assert_eq!(
        pool, 0,
        "the pool control waits on the stack cache: {lines:#?}"
    );
    eprintln!("stack-cache lock waits: churn {churn} us, pool {pool} us");
}
