//! Findings on the real kernel (root, real eBPF): each pattern fires within 5 s on the
//! workload that shows it, and the controls beside it fire nothing about themselves.
//! One ttop run is shared by a positive case and its controls.
//!
//! The controls are judged by the findings that name their process. Kinds that describe
//! the machine (cpu_saturation, scan_undercount, lost_data) and sched_stall (a thread of
//! a busy program waiting for a CPU on a 2-CPU machine that the other workloads and
//! other builds saturate is a true stall) are left out of that check: they are true of
//! any busy process on a loaded test machine.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::Value;

/// ttop --json -d 0.5 -n N, read line by line; returns once the first frame is out
/// (the probes are attached and there is a baseline).
fn ttop(n: usize) -> (Child, Receiver<Value>) {
    let n = n.to_string();
    let mut child = Command::new(ttop_bin())
        .args(live_args(&["--json", "-d", "0.5", "-n", &n]))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ttop");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&l).expect("a JSON frame");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("ttop printed no frame within 30 s");
    (child, rx)
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn pid_of(w: &mut Child) -> u64 {
    let mut line = String::new();
    BufReader::new(w.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    parse_kv(&line)["pid"].parse().unwrap()
}

fn rest(ttop: Child, rx: Receiver<Value>) -> Vec<Value> {
    rest_within(ttop, rx, Duration::from_secs(30))
}

/// `rest`, waiting up to `limit` for ttop to finish its frames.
fn rest_within(mut ttop: Child, rx: Receiver<Value>, limit: Duration) -> Vec<Value> {
    assert!(wait_timeout(&mut ttop, limit), "ttop did not finish");
    rx.try_iter().collect()
}

/// Active findings of `kind` naming `pid`, with the frame's time.
fn fired<'a>(frames: &'a [Value], kind: &str, pid: u64) -> Vec<(f64, &'a Value)> {
    frames
        .iter()
        .flat_map(|fr| {
            fr["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(move |f| {
                    f["kind"] == kind
                        && f["active"] == true
                        && f["pids"].as_array().unwrap().iter().any(|p| p == pid)
                })
                .map(move |f| (fr["t"].as_f64().unwrap(), f))
        })
        .collect()
}

/// Within 5 s of `start`, `kind` fired for `pid`, with figures.
fn fires_within_5s(frames: &[Value], kind: &str, pid: u64, start: f64) -> Value {
    let hits = fired(frames, kind, pid);
    let (t, f) = hits
        .first()
        .unwrap_or_else(|| panic!("{kind} never fired for {pid}: {:#?}", evidence(frames, pid)));
    assert!(
        t - start <= 5.0,
        "{kind} fired {:.1} s after start",
        t - start
    );
    for k in ["severity", "since", "summary", "view"] {
        assert!(!f[k].is_null(), "{kind} has no {k}: {f}");
    }
    assert!(!f["figures"].as_object().unwrap().is_empty(), "{f}");
    (*f).clone()
}

/// Per frame: its findings, and the futex words and process row of `pid`.
fn evidence(frames: &[Value], pid: u64) -> Vec<Value> {
    frames
        .iter()
        .map(|fr| {
            let mine = |k: &str| -> Vec<Value> {
                fr[k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["pid"] == pid)
                    .cloned()
                    .collect()
            };
            serde_json::json!({"t": fr["t"], "findings": fr["findings"],
                "futexes": mine("futexes"), "procs": mine("procs")})
        })
        .collect()
}

const MACHINE_KINDS: &[&str] = &[
    "cpu_saturation",
    "scan_undercount",
    "lost_data",
    "sched_stall",
];

/// Findings (active or past) that name `pid`, machine-load kinds left out.
fn about(frames: &[Value], pid: u64) -> Vec<String> {
    frames
        .iter()
        .flat_map(|fr| fr["findings"].as_array().unwrap())
        .filter(|f| !MACHINE_KINDS.contains(&f["kind"].as_str().unwrap()))
        .filter(|f| f["pids"].as_array().unwrap().iter().any(|p| p == pid))
        .map(|f| f["summary"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn hot_lock_on_one_mutex_not_on_shards_nor_timed_condvar_waits() {
    if !require_root("hot_lock_on_one_mutex_not_on_shards_nor_timed_condvar_waits") {
        return;
    }
    let _g = kernel_lock();
    let (tt, rx) = ttop(16);
    let start = now();
    // The storm alone first. It has two regimes: most waits short and many, or fewer
    // and long while its holder waits for a CPU; either way fewer than one of its 4
    // threads is asleep on the lock on average (0.7-0.8 seen) and, without the per-call
    // hooks, no retries are counted: 4 waiters is what says a queue.
    let mut one = spawn_workload("futex_mutex", &["4", "3"]);
    let (head, _out) = common::stream::first_line(&mut one);
    let p_one: u64 = head["pid"].parse().unwrap();
    let mutex = u64::from_str_radix(head["mutex"].trim_start_matches("0x"), 16).unwrap();
    assert!(
        wait_timeout(&mut one, Duration::from_secs(30)),
        "futex_mutex hung"
    );
    // The same storm over 64 locks; and 1,000 idle workers in timed condvar waits that
    // nobody signals (every wait ends in ETIMEDOUT, 500 a second).
    let mut sharded = spawn_workload("futex_sharded", &["4", "3", "64"]);
    let mut idle = spawn_workload("condvar_idle", &["1000", "3", "2000"]);
    let (p_sh, p_idle) = (pid_of(&mut sharded), pid_of(&mut idle));
    for w in [&mut sharded, &mut idle] {
        assert!(wait_timeout(w, Duration::from_secs(30)), "a workload hung");
    }
    let frames = rest(tt, rx);
    let f = fires_within_5s(&frames, "hot_lock", p_one, start);
    assert_eq!(f["view"], "futexes");
    assert!(
        f["figures"]["contended_per_s"].as_f64().unwrap() >= 100.0,
        "{f}"
    );
    assert!(f["summary"].as_str().unwrap().contains("futex"), "{f}");
    // Held through the storm: once the mutex has had 100 waits/s, woken by unlocks, that
    // kept a tenth of a thread asleep (a shard of the storm below keeps 0.03), for
    // three frames in a row (HOLD), the finding is active in the third and every such
    // frame after, whichever regime the storm is in (the interval it ends in apart: it
    // ran for part of it only).
    let hot_frames: Vec<bool> = frames
        .iter()
        .map(|fr| {
            let iv = fr["interval_s"].as_f64().unwrap();
            let ended = fr["procs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["pid"] == p_one && p["gone"] == true);
            !ended
                && fr["futexes"].as_array().unwrap().iter().any(|w| {
                    w["pid"] == p_one
                        && w["uaddr"] == mutex
                        && w["contended"].as_f64().unwrap() >= 100.0 * iv
                        && w["woken"].as_f64().unwrap() >= 0.5 * w["contended"].as_f64().unwrap()
                        && w["total_wait_ms"].as_f64().unwrap() >= 100.0 * iv
                })
        })
        .collect();
    for (i, fr) in frames.iter().enumerate().skip(2) {
        if !hot_frames[i - 2..=i].iter().all(|h| *h) {
            continue;
        }
        let active = fr["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["kind"] == "hot_lock" && x["active"] == true && x["pids"][0] == p_one);
        assert!(
            active,
            "frame {i}: the storm's mutex is hot, no hot_lock: {:#?}",
            evidence(&frames[i..=i], p_one)
        );
    }
    assert_eq!(about(&frames, p_sh), Vec::<String>::new(), "sharded storm");
    assert_eq!(about(&frames, p_idle), Vec::<String>::new(), "idle condvar");
}

#[test]
fn churn_and_tlb_storm_fire_not_on_a_pool() {
    if !require_root("churn_and_tlb_storm_fire_not_on_a_pool") {
        return;
    }
    let _g = kernel_lock();
    let (tt, rx) = ttop(10);
    let start = now();
    // Create/join 4 threads at a time, 100 us of work each; a pool of 4 doing work
    // every millisecond; an mmap/munmap loop on CPU 0 with a spinner on the other CPUs.
    // The churn outlasts ttop's frames (stopped after them): a condition shows after
    // three intervals in a row (HOLD), and a host stall once put a 3 s churn inside one.
    let mut churn = spawn_workload("bench_churn", &["60", "4", "100"]);
    let mut pool = spawn_workload("bench_threads", &["4", "3", "1"]);
    let mut tlb = spawn_workload("tlbshoot", &["3", "16", "0"]);
    // The control: the same unmapping loop with nobody else in its address space.
    let mut alone = spawn_workload("tlbshoot", &["3", "16", "1", "0"]);
    let (p_churn, p_pool, p_tlb) = (pid_of(&mut churn), pid_of(&mut pool), pid_of(&mut tlb));
    let p_alone = pid_of(&mut alone);
    for w in [&mut pool, &mut tlb, &mut alone] {
        assert!(wait_timeout(w, Duration::from_secs(30)), "a workload hung");
    }
    let frames = rest(tt, rx);
    stop_running(&mut churn, "bench_churn");
    let f = fires_within_5s(&frames, "thread_churn", p_churn, start);
    assert!(
        f["figures"]["created_per_s"].as_f64().unwrap() >= 200.0,
        "{f}"
    );
    let f = fires_within_5s(&frames, "tlb_storm", p_tlb, start);
    assert_eq!(f["view"], "ipi");
    assert_eq!(about(&frames, p_pool), Vec::<String>::new(), "thread pool");
    assert_eq!(
        about(&frames, p_alone),
        Vec::<String>::new(),
        "an unmapper with no spinner beside it"
    );
}

/// Busy share of all CPUs together over the next second, from /proc/stat.
fn machine_busy_over_a_second() -> f64 {
    let read = || -> (u64, u64) {
        let s = std::fs::read_to_string("/proc/stat").unwrap();
        let v: Vec<u64> = s
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // idle + iowait, and the total.
        (v[3] + v.get(4).copied().unwrap_or(0), v.iter().sum())
    };
    let (i0, t0) = read();
    std::thread::sleep(Duration::from_secs(1));
    let (i1, t1) = read();
    1.0 - (i1 - i0) as f64 / (t1 - t0).max(1) as f64
}

/// The idle control runs this long: a minute of an idle machine, where the issue saw
/// lost_data in 10 frames of 20 seconds (colliding kernel stacks).
const IDLE_S: usize = 60;
/// Quiet: all CPUs together less than this busy, QUIET_SECONDS seconds in a row.
const QUIET_BUSY: f64 = 0.10;
const QUIET_SECONDS: usize = 3;

/// The idle control: no workload at all, for a minute, so nothing may be named. It
/// first waits (up to two minutes) for the machine to be quiet. If it does not get
/// quiet, or something else saturates it during the minute (another build on a shared
/// machine: once a compiler's LTO thread, rightly named in a sched_stall), the machine
/// was not idle: under CI that fails the test (CI's machine is ttop's alone), elsewhere
/// the test says so and what fired, and checks nothing.
#[test]
fn an_idle_machine_fires_nothing() {
    if !require_root("an_idle_machine_fires_nothing") {
        return;
    }
    let _g = kernel_lock();
    let not_idle = |why: String| {
        assert!(!is_ci(), "idle control under CI: {why}");
        eprintln!("SKIPPED idle control: {why}");
    };
    let t0 = std::time::Instant::now();
    let mut quiet = 0;
    while quiet < QUIET_SECONDS {
        let busy = machine_busy_over_a_second();
        quiet = if busy < QUIET_BUSY { quiet + 1 } else { 0 };
        if quiet == 0 && t0.elapsed() > Duration::from_secs(120) {
            return not_idle(format!(
                "the machine did not get quiet in 2 min ({busy:.2} busy)"
            ));
        }
    }
    let (tt, rx) = ttop(2 * IDLE_S);
    let frames = rest_within(tt, rx, Duration::from_secs(IDLE_S as u64 + 30));
    assert!(frames.len() >= 2 * IDLE_S - 4, "{} frames", frames.len());
    let ncpus = std::thread::available_parallelism().map_or(2, |n| n.get()) as f64;
    let busy = frames
        .iter()
        .filter_map(|f| f["runnable"]["true_avg"].as_f64())
        .fold(0.0, f64::max);
    // lost_data may fire on an idle machine only for what the rule is for: the kernel
    // really skipped scheduler events at its threshold's rate. This VM's kernel misses a
    // few sched_switch deliveries a second when idle (bpftool shows no recursion misses on
    // the program), and once a burst: 35 in half a second, 2 s into an idle CI run. Never
    // for a map drop or a caller lost to a stack id (the bug), never below the
    // threshold.
    let genuine_loss = |f: &serde_json::Value| {
        let fig = &f["figures"];
        let num = |k: &str| fig[k].as_f64().unwrap_or(f64::NAN);
        f["kind"] == "lost_data"
            && num("map_drops") == 0.0
            && num("sched_gaps") >= ttop::model::findings::rules::lost_gaps_threshold(0.5)
    };
    let skipped: Vec<String> = frames
        .iter()
        .flat_map(|fr| fr["findings"].as_array().unwrap())
        .filter(|f| genuine_loss(f))
        .map(|f| f["figures"].to_string())
        .collect();
    if !skipped.is_empty() {
        eprintln!("the kernel skipped scheduler events in earnest: {skipped:?}");
    }
    let named: Vec<String> = frames
        .iter()
        .flat_map(|fr| fr["findings"].as_array().unwrap())
        .filter(|f| !genuine_loss(f))
        .map(|f| format!("{}: {} {}", f["kind"], f["summary"], f["figures"]))
        .collect();
    if busy >= 1.25 * ncpus {
        return not_idle(format!(
            "something else saturated the CPUs ({busy:.1} runnable); fired: {named:?}"
        ));
    }
    // What the machine was doing, for a failure to be read: each frame's drops by map and
    // the processes that used CPU.
    let context: Vec<String> = frames
        .iter()
        .map(|fr| {
            let mut busy: Vec<String> = fr["procs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["cpu_pct_true"].as_f64().unwrap_or(0.0) >= 1.0)
                .map(|p| format!("{}({}) {:.0}%", p["comm"], p["pid"], p["cpu_pct_true"]))
                .collect();
            busy.truncate(5);
            format!(
                "drops {} {} contention {} busy {busy:?}",
                fr["drops"], fr["drops_by_map"], fr["contention_drops"]
            )
        })
        .collect();
    assert_eq!(named, Vec::<String>::new(), "an idle machine: {context:#?}");
}

#[test]
fn cpu_saturation_on_more_spinners_than_cpus() {
    if !require_root("cpu_saturation_on_more_spinners_than_cpus") {
        return;
    }
    let _g = kernel_lock();
    let (tt, rx) = ttop(8);
    let start = now();
    let k = (2 * std::thread::available_parallelism().map_or(2, |n| n.get())).to_string();
    let mut w = spawn_workload("spin", &[&k, "3"]);
    let pid = pid_of(&mut w);
    assert!(wait_timeout(&mut w, Duration::from_secs(30)), "spin hung");
    let frames = rest(tt, rx);
    let hit = frames.iter().find_map(|fr| {
        let f = fr["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "cpu_saturation" && f["active"] == true)?;
        Some((fr["t"].as_f64().unwrap(), f.clone()))
    });
    let (t, f) = hit.unwrap_or_else(|| panic!("no cpu_saturation with {k} spinners"));
    assert!(t - start <= 5.0, "fired {:.1} s after start", t - start);
    assert!(
        f["figures"]["runnable_avg"].as_f64().unwrap() > f["figures"]["ncpus"].as_f64().unwrap()
    );
    // The spinners are among the processes that wait most for a CPU.
    assert!(
        frames
            .iter()
            .flat_map(|fr| fr["findings"].as_array().unwrap())
            .any(|f| f["kind"] == "cpu_saturation"
                && f["pids"].as_array().unwrap().iter().any(|p| p == pid)),
        "{frames:#?}"
    );
}

#[test]
fn idle_futex_storm_on_a_1khz_ticker() {
    if !require_root("idle_futex_storm_on_a_1khz_ticker") {
        return;
    }
    let _g = kernel_lock();
    let (tt, rx) = ttop(9);
    let start = now();
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("findings-ticker.log");
    let mut w = spawn_workload("ticker", &["3", log.to_str().unwrap()]);
    let (head, r) = common::stream::first_line(&mut w);
    let pid: u64 = head["pid"].parse().unwrap();
    assert!(wait_timeout(&mut w, Duration::from_secs(30)), "ticker hung");
    common::stream::rest(r);
    // When each of its waits that slept began, by its own clock (the log's lines marked
    // " s"; the others are its other futex calls).
    let began: Vec<f64> = std::fs::read_to_string(&log)
        .expect("the ticker's log")
        .lines()
        .filter_map(|l| l.strip_suffix(" s"))
        .map(|l| l.parse::<f64>().unwrap() / 1e9)
        .collect();
    let frames = rest(tt, rx);
    let f = fires_within_5s(&frames, "idle_futex_storm", pid, start);
    // By default the calls are not hooked: the waits that slept are its figure.
    assert!(f["figures"]["futex_calls_per_s"].is_null(), "{f}");
    let got = f["figures"]["futex_slept_per_s"].as_f64().unwrap();
    // The frame it fired in, and the ticker's own count over that frame's seconds. Its
    // timer lags on a loaded machine (866 ticks/s in one CI run), and unevenly, so a
    // run's average is no yardstick for one half-second frame.
    let (t, _) = fired(&frames, "idle_futex_storm", pid)[0];
    let fr = frames.iter().find(|fr| fr["t"] == t).unwrap();
    let secs = fr["interval_s"].as_f64().unwrap();
    let own = began.iter().filter(|&&b| b > t - secs && b <= t).count() as f64;
    eprintln!(
        "ticker: {own} waits slept in the frame's {secs:.3} s by its own clock ({:.0}/s); \
         the finding says {got}/s",
        own / secs
    );
    // ttop's frame ends at its read of the counters, a few ms from `t`; at 1 kHz that is
    // a few waits at each end of the frame.
    assert!(
        (got * secs - own).abs() <= (0.03 * own).max(8.0),
        "{own} waits in the frame by its clock: {f}"
    );
    // One waiter handed a tick at a time is not a hot lock.
    assert!(fired(&frames, "hot_lock", pid).is_empty(), "{frames:#?}");
}

#[test]
fn mmap_lock_stall_and_sched_stall_on_a_throttled_environ_reader() {
    if !require_root("mmap_lock_stall_and_sched_stall_on_a_throttled_environ_reader") {
        return;
    }
    let _g = kernel_lock();
    let (tt, rx) = ttop(10);
    let start = now();
    // Seed 002: a victim mapping and unmapping in a loop, and a reader of its
    // /proc/PID/environ at nice 19 next to a spinner, preempted while it holds the lock.
    let mut victim = spawn_workload("mmaplock", &["victim", "2", "4"]);
    let vpid = pid_of(&mut victim);
    let mut reader = spawn_workload("mmaplock", &["reader", &vpid.to_string(), "3.5"]);
    let rpid = pid_of(&mut reader);
    // A nice-19 sleeper on CPU 1 behind 4 spinners there.
    let mut sleeper = spawn_workload("wakelat", &["1", "4", "4", "1000", "19"]);
    let spid = pid_of(&mut sleeper);
    for w in [&mut reader, &mut victim] {
        assert!(wait_timeout(w, Duration::from_secs(30)), "a workload hung");
    }
    // The sleeper's own account of how late each wake-up ran ("w WALL_NS LATE_NS").
    let mut out = String::new();
    std::io::Read::read_to_string(sleeper.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(
        wait_timeout(&mut sleeper, Duration::from_secs(30)),
        "wakelat hung"
    );
    let late_ms = out
        .lines()
        .filter_map(|l| l.strip_prefix("w "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .fold(0.0f64, f64::max)
        / 1e6;
    // ttop's wait also counts a preemption between one wake-up and the next sleep (the
    // nice-19 sleeper can then wait hundreds of ms behind the spinners): the workload
    // measures those gaps too, and its longest wait for the CPU is the larger of the two.
    let gap_ms = out
        .lines()
        .find_map(|l| l.strip_prefix("gap ")?.trim().parse::<f64>().ok())
        .expect("wakelat printed no gap line")
        / 1e6;
    let late_ms = late_ms.max(gap_ms);
    let frames = rest(tt, rx);
    let f = fires_within_5s(&frames, "mmap_lock_stall", vpid, start);
    assert_eq!(f["view"], "locks");
    let holders: Vec<_> = fired(&frames, "mmap_lock_stall", vpid)
        .iter()
        .map(|(_, f)| f["pids"].clone())
        .collect();
    assert!(
        holders
            .iter()
            .any(|p| p.as_array().unwrap().iter().any(|p| p == rpid)),
        "the reader is never named as the holder: {holders:?}"
    );
    // Judged against the workload's own lateness: a stall it felt (with margin over the
    // 50 ms threshold) is named; one it did not feel is not.
    eprintln!("wakelat: its longest wait for the CPU was {late_ms:.1} ms (gap {gap_ms:.1} ms)");
    if late_ms >= 60.0 {
        let f = fires_within_5s(&frames, "sched_stall", spid, start);
        let got = f["figures"]["max_wait_ms"].as_f64().unwrap();
        assert!(
            got >= 50.0 && got <= late_ms + 5.0,
            "{f} (workload: {late_ms} ms)"
        );
        assert!(f["summary"].as_str().unwrap().contains("UTC"), "{f}");
    } else if late_ms < 40.0 {
        assert!(
            fired(&frames, "sched_stall", spid).is_empty(),
            "a stall the workload did not feel ({late_ms} ms)"
        );
    } else {
        // Near the threshold the two clocks may fall either side of 50 ms: whether it
        // fires is not judged, but a finding that fires says what the workload felt.
        for (_, f) in fired(&frames, "sched_stall", spid) {
            let got = f["figures"]["max_wait_ms"].as_f64().unwrap();
            assert!(
                got >= 50.0 && got <= late_ms + 5.0,
                "{f} (workload: {late_ms} ms)"
            );
        }
    }
}

/// One run of an mmap_lock victim that exits while a reader stalls it: ttop's frames,
/// the victim's pid, and (gone at the frame's scan, name on the row) for each of the
/// victim's mmap_lock rows.
fn victim_exits_while_stalled() -> (Vec<Value>, u64, Vec<(bool, String)>) {
    let (tt, rx) = ttop(10);
    let mut victim = spawn_workload("mmaplock", &["victim", "2", "2", "exit-on-stall"]);
    let vpid = pid_of(&mut victim);
    let mut reader = spawn_workload("mmaplock", &["reader", &vpid.to_string(), "6"]);
    for w in [&mut victim, &mut reader] {
        assert!(wait_timeout(w, Duration::from_secs(30)), "a workload hung");
    }
    assert_eq!(
        victim.wait().unwrap().code(),
        Some(0),
        "the victim saw no stall after its 2 s (status 3)"
    );
    let frames = rest(tt, rx);
    let mut seen = Vec::new();
    for fr in &frames {
        let gone = fr["procs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == vpid && p["gone"] == true);
        for r in fr["mmap_lock"].as_array().unwrap() {
            if r["victim_pid"] == vpid {
                seen.push((gone, r["victim_comm"].as_str().unwrap().to_string()));
            }
        }
    }
    eprintln!("victim {vpid} rows (gone at the scan, name): {seen:?}");
    (frames, vpid, seen)
}

/// Seed 002's victim exits while the reader still stalls it: in the interval it exits
/// in it is gone from the scan, and its mmap_lock rows and the stall finding must still
/// name it (they read "(PID)'s threads waited" before). The reader outlasts the victim,
/// and the victim exits right after a call that waited over 10 ms, so the interval it
/// exits in holds a wait of its.
#[test]
fn an_mmap_lock_victim_that_exits_is_still_named() {
    if !require_root("an_mmap_lock_victim_that_exits_is_still_named") {
        return;
    }
    let _g = kernel_lock();
    let (frames, vpid, seen) = victim_exits_while_stalled();
    assert!(
        seen.iter().any(|(gone, _)| *gone),
        "no mmap_lock row in the interval the victim exited in"
    );
    for (gone, name) in &seen {
        assert_eq!(
            name, "mmaplock",
            "a victim row (gone: {gone}) named {name:?}"
        );
    }
    for (_, f) in fired(&frames, "mmap_lock_stall", vpid) {
        let s = f["summary"].as_str().unwrap();
        assert!(
            s.contains(&format!("mmaplock({vpid})")),
            "the stall finding does not name the victim: {s}"
        );
    }
}
