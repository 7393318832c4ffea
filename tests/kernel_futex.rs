//! Futex contention under real eBPF, checked against what the helper workloads counted
//! themselves: waits that slept from the scheduler (the default), and every call with
//! --futex-calls. Needs root (CI runs as root and never skips). Other workloads may run
//! on the machine at the same time, so every check is filtered to the workload's own pid
//! (and futex address).

mod common;

use std::time::Duration;

use common::stream::*;
use common::*;
use serde_json::Value;

/// Four threads hammer one futex mutex that counts its own FUTEX_WAIT outcomes: ttop's
/// top contended word for the process is that mutex, and its contended and EAGAIN counts
/// are within 10% of the workload's own.
#[test]
fn futex_mutex_storm_matches_own_count() {
    if !require_root("futex_mutex_storm_matches_own_count") {
        return;
    }
    futex_mutex_storm(&["--futex-calls"], &[]);
}

/// By default no futex syscall is hooked: the waits that slept are seen from the
/// scheduler (a thread switching out asleep inside FUTEX_WAIT, woken inside a
/// FUTEX_WAKE). Their count and the wakes that ended them match the workload's own
/// count of FUTEX_WAITs that returned 0 within 5% (by hand: within 0.1%), and the
/// calls, EAGAINs and wake calls, not counted, are null.
#[test]
fn futex_mutex_storm_slept_waits_match_own_count() {
    if !require_root("futex_mutex_storm_slept_waits_match_own_count") {
        return;
    }
    futex_mutex_storm(&[], &[]);
}

/// A kernel that cannot run the scheduler-side futex programs (no BTF, before 5.15;
/// forced here with TTOP_FUTEX_NO_SLEEPS=1) gets every call hooked instead, and says so:
/// a problems line, `contention_measured.futex_calls` true, calls counted.
#[test]
fn without_the_scheduler_futex_programs_every_call_is_hooked() {
    if !require_root("without_the_scheduler_futex_programs_every_call_is_hooked") {
        return;
    }
    let _g = kernel_lock();
    let (_, _, frames) = storm_under(
        &["--json", "-n", "400", "-d", "0.5"],
        &[("TTOP_FUTEX_NO_SLEEPS", "1")],
    );
    let p = problems(&frames);
    assert!(
        p.iter()
            .any(|p| p.contains("scheduler-side futex probes did not run")),
        "{p:?}"
    );
    for fr in &frames {
        assert_eq!(fr["contention_measured"]["futex_calls"], true);
    }
    let calls: u64 = frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .map(|r| u(&r["calls"]))
        .sum();
    assert!(calls > 0, "no futex call counted");
}

/// The same through the raw_syscalls fallback, whose entry hook remembers every call
/// (wakes included) as kernels without bpf_task_pt_regs do: the same counts.
#[test]
fn futex_mutex_storm_matches_own_count_raw_syscalls() {
    if !require_root("futex_mutex_storm_matches_own_count_raw_syscalls") {
        return;
    }
    futex_mutex_storm(&["--futex-calls"], &[("TTOP_FUTEX_RAW_SYSCALLS", "1")]);
}

/// `--no-futex`: the futex mutex storm runs, yet no futex figure is reported as zero:
/// the futex tables are empty, every process's futex columns are null, the frame says
/// the futex probes were off (and the kernel-lock ones on), the problems line says why,
/// and no futex finding fires. The kernel-lock view still sees the storm's hash-bucket
/// spinlock.
#[test]
fn no_futex_measures_no_futex_figure_and_keeps_the_lock_view() {
    if !require_root("no_futex_measures_no_futex_figure_and_keeps_the_lock_view") {
        return;
    }
    let _g = kernel_lock();
    let (head, out, frames) = storm_under(&["--json", "--no-futex", "-n", "400", "-d", "0.5"], &[]);
    let pid = num(&head, "pid") as u64;
    assert!(num(&out, "slept") > 0.0, "the storm slept: {out:?}");
    assert!(
        problems(&frames).iter().any(|p| p.contains("--no-futex")),
        "{:?}",
        problems(&frames)
    );
    let mut lock_waits = 0u64;
    for fr in &frames {
        assert_eq!(
            fr["contention_measured"]["futex"], false,
            "{}",
            fr["contention_measured"]
        );
        assert_eq!(fr["contention_measured"]["locks"], true);
        assert!(fr["futexes"].as_array().unwrap().is_empty());
        assert!(fr["futex_threads"].as_array().unwrap().is_empty());
        for p in fr["procs"].as_array().unwrap() {
            assert!(p["futex_calls"].is_null(), "{}", p);
            assert!(p["futex_wait_ms"].is_null(), "{}", p);
        }
        for f in fr["findings"].as_array().unwrap() {
            assert!(
                f["kind"] != "hot_lock" && f["kind"] != "idle_futex_storm",
                "a futex finding without futex figures: {f}"
            );
        }
        lock_waits += common::locks::all_lock_rows(fr)
            .flat_map(|l| l["waiters"].as_array().unwrap())
            .filter(|w| u(&w["pid"]) == pid)
            .map(|w| u(&w["contended"]))
            .sum::<u64>();
    }
    assert!(
        lock_waits > 0,
        "the kernel-lock view saw none of the storm's spinlock waits"
    );
}

type Kv = std::collections::HashMap<String, String>;

/// futex_mutex (4 threads, 2 s) under `ttop ARGS` (with `-n 400`: stopped two frames
/// after the workload), started once ttop has a baseline: the workload's first line,
/// its last lines, and ttop's frames.
fn storm_under(args: &[&str], env: &[(&str, &str)]) -> (Kv, Kv, Vec<Value>) {
    let ttop = Stream::start_env(args, env);
    let mut w = spawn_workload("futex_mutex", &["4", "2"]);
    let (head, r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(20)),
        "futex_mutex hung"
    );
    let out = rest(r);
    // Two frames ended after the workload: its last waits are in them. (ttop runs with
    // a count it never reaches: a loaded machine may take long to run the storm.)
    (head, out, ttop.stop_after(2))
}

fn futex_mutex_storm(args: &[&str], env: &[(&str, &str)]) {
    let _g = kernel_lock();
    let calls_hooked = args.contains(&"--futex-calls");
    let mut all = vec!["--json", "-n", "400", "-d", "0.5"];
    all.extend_from_slice(args);
    let (head, out, frames) = storm_under(&all, env);
    let pid = num(&head, "pid") as u64;
    let mutex = u64::from_str_radix(head["mutex"].trim_start_matches("0x"), 16).unwrap();
    let slept = num(&out, "slept");
    let eagain = num(&out, "eagain");
    let wakes = num(&out, "wakes");
    assert!(
        !problems(&frames).iter().any(|p| p.contains("futex view")),
        "futex probes missing: {:?}",
        problems(&frames)
    );
    let raw = problems(&frames).iter().any(|p| p.contains("raw_syscalls"));
    assert_eq!(
        raw,
        !env.is_empty(),
        "the futex hooks in use: {:?}",
        problems(&frames)
    );

    for fr in &frames {
        assert_eq!(fr["contention_measured"]["futex"], true);
        assert_eq!(fr["contention_measured"]["futex_calls"], calls_hooked);
    }
    let mut contended = 0u64;
    let mut seen_woken = 0u64;
    let mut seen_eagain = 0u64;
    let (mut seen_wakes, mut seen_calls) = (0u64, 0u64);
    let mut callers = Vec::new();
    // Contended waits per futex word of the workload, over the run.
    let mut per_word: std::collections::BTreeMap<u64, u64> = Default::default();
    for fr in &frames {
        let rows: Vec<&Value> = fr["futexes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| u(&r["pid"]) == pid)
            .collect();
        for r in &rows {
            *per_word.entry(u(&r["uaddr"])).or_default() += u(&r["contended"]);
        }
        for r in rows.iter().filter(|r| u(&r["uaddr"]) == mutex) {
            contended += u(&r["contended"]);
            seen_woken += u(&r["woken"]);
            if !calls_hooked {
                for k in ["calls", "eagain", "wakes"] {
                    assert!(r[k].is_null(), "{k} not measured, yet: {r}");
                }
            }
            seen_eagain += u(&r["eagain"]);
            seen_wakes += u(&r["wakes"]);
            seen_calls += u(&r["calls"]);
            assert!(f(&r["max_wait_us"]) >= f(&r["avg_wait_us"]) * 0.999);
            let c = r["caller"].as_str().unwrap_or("").to_string();
            if !c.is_empty() {
                callers.push(c);
            }
        }
    }
    // Over the run, not per interval: the main thread's pthread_join waits (one
    // contended wait on each worker's tid word) may outnumber the mutex's in the last
    // interval when the storm hardly slept in it.
    let top = per_word.iter().max_by_key(|(_, c)| **c).map(|(w, _)| *w);
    assert_eq!(
        top,
        Some(mutex),
        "the most contended futex of pid {pid} over the run is {top:x?}, the workload's mutex \
         is {mutex:#x} ({per_word:x?})"
    );
    eprintln!(
        "futex_mutex: workload slept={slept} eagain={eagain} wakes={wakes}; ttop contended={contended} \
         eagain={seen_eagain} wakes={seen_wakes} calls={seen_calls}; callers {:?}",
        callers.iter().collect::<std::collections::BTreeSet<_>>()
    );
    assert!(
        slept > 50.0,
        "the workload hardly contended ({slept} sleeps): no test"
    );
    if !calls_hooked {
        // Each sleep is seen when the waiter switches out and ends when it switches in:
        // nothing is sampled, and the error seen is about 0.1% (a sleep that races the
        // read at the interval's end, or a switch the kernel did not deliver). 2%.
        assert_within(
            "contended (FUTEX_WAIT calls that slept, from the scheduler)",
            contended as f64,
            slept,
            0.02,
        );
        // Every sleep of this mutex is ended by a FUTEX_WAKE of the unlocker. (A flag the
        // waker set and the sleeper reset at its switch-out lost 3.2-3.8% of them.)
        eprintln!("woken {seen_woken} of {slept} waits that slept");
        assert_within(
            "woken (sleepers a futex wake woke)",
            seen_woken as f64,
            slept,
            0.02,
        );
        assert!(
            callers.iter().any(|c| c.starts_with("hammer_lock")),
            "the waiter's caller, walked when it switched out: {callers:?}"
        );
        return;
    }
    assert_within(
        "contended (FUTEX_WAIT calls that slept)",
        contended as f64,
        slept,
        0.10,
    );
    assert_within(
        "eagain (FUTEX_WAIT calls that returned at once)",
        seen_eagain as f64,
        eagain,
        0.10,
    );
    // Wakes are accounted from the exit alone (their entry is not remembered): the
    // same count, and every call is one of the three.
    assert_within("wakes (FUTEX_WAKE calls)", seen_wakes as f64, wakes, 0.10);
    assert_within(
        "calls (every futex call on the word)",
        seen_calls as f64,
        slept + eagain + wakes,
        0.10,
    );
    assert!(
        callers.iter().any(|c| c.starts_with("hammer_lock")),
        "the waiter's caller is the workload's hammer_lock(), the function that calls \
         syscall(2) (unwound from .eh_frame: a frame-pointer walk skips it, as libc's \
         syscall() keeps no frame, and named worker()): {callers:?}"
    );
    let drops: u64 = frames
        .iter()
        .map(|fr| u(&fr["contention_drops"]["futexes"]))
        .sum();
    assert_eq!(drops, 0, "futex map overflowed");
}

/// Seed 003: an otherwise idle program that parks and wakes a thread at 1 kHz. With
/// --futex-calls, ttop's futex_calls for it add up to the workload's own count within
/// 10%, and it is the process with the most futex calls while it runs.
#[test]
fn idle_ticker_stands_out_by_futex_rate() {
    if !require_root("idle_ticker_stands_out_by_futex_rate") {
        return;
    }
    idle_ticker("futex_calls", &["--futex-calls"]);
}

/// The same by default, without the per-call hooks: the waits that slept
/// (`procs[].futex_slept`, from the scheduler) add up to the ticker's own count of
/// FUTEX_WAITs that returned 0, within 10%, and `futex_calls` is null, not zero.
#[test]
fn idle_ticker_stands_out_by_slept_waits() {
    if !require_root("idle_ticker_stands_out_by_slept_waits") {
        return;
    }
    idle_ticker("futex_slept", &[]);
}

/// `key`: the procs[] figure compared with the ticker's own count of the same name
/// (futex_calls; futex_slept against its `slept`).
fn idle_ticker(key: &str, args: &[&str]) {
    let _g = kernel_lock();
    let mut all = vec!["--json", "-n", "400", "-d", "0.5"];
    all.extend_from_slice(args);
    let ttop = Stream::start(&all);
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{key}-ticker.log"));
    let mut w = spawn_workload("ticker", &["3", log.to_str().unwrap()]);
    let (head, r) = first_line(&mut w);
    assert!(wait_timeout(&mut w, Duration::from_secs(20)), "ticker hung");
    let out = rest(r);
    let frames = ttop.stop_after(2);
    let pid = num(&head, "pid") as u64;
    let own = num(
        &out,
        if key == "futex_calls" {
            "futex_calls"
        } else {
            "slept"
        },
    );
    let secs = num(&out, "secs");
    // When each of its futex calls began, by the ticker's clock (a wait that slept marked
    // " s"): its timer lags unevenly on a loaded machine (866 ticks/s over a CI run), and
    // a worker running late takes several ticks per wait, so each frame is held to the
    // ticker's own count over that frame's seconds, not to a rate.
    let calls: Vec<(f64, bool)> = std::fs::read_to_string(&log)
        .expect("the ticker's log")
        .lines()
        .map(|l| {
            let (ns, mark) = l.split_once(' ').unwrap_or((l, ""));
            (ns.parse::<f64>().unwrap() / 1e9, mark == "s")
        })
        .filter(|&(_, slept)| slept || key == "futex_calls")
        .collect();
    assert_eq!(
        calls.len() as f64,
        own,
        "the ticker logged every {key} it counted"
    );
    let first_call = calls.iter().map(|c| c.0).fold(f64::MAX, f64::min);
    let last_call = calls.iter().map(|c| c.0).fold(0.0, f64::max);
    // Its calls per wait that slept (a wait and a wake each, and a few more).
    let per_wait = own / num(&out, "slept");

    let mut seen = 0u64;
    let mut full = 0;
    let mut worst = 0f64;
    let mut first = 0;
    let mut ranks = Vec::new();
    for fr in &frames {
        let procs = fr["procs"].as_array().unwrap();
        let Some(me) = procs.iter().find(|p| u(&p["pid"]) == pid) else {
            continue;
        };
        let other = if key == "futex_calls" {
            "futex_slept"
        } else {
            "futex_calls"
        };
        if key == "futex_slept" {
            assert!(me[other].is_null(), "calls not hooked, yet counted: {me}");
            assert_eq!(fr["contention_measured"]["futex_calls"], false);
        }
        let mine = u(&me[key]);
        seen += mine;
        // Frames fully inside the run: the ticker's own count over the frame's seconds.
        let (t, dt) = (f(&fr["t"]), f(&fr["interval_s"]));
        if t - dt < first_call || t > last_call {
            continue;
        }
        let want = calls.iter().filter(|c| c.0 > t - dt && c.0 <= t).count() as f64;
        // The frame ends at ttop's read of the counters, a few ms from `t`: a few ticks.
        // Calls that did not sleep reach the map in batches (PEND_MAX in
        // bpf/contention_futex.h): a read may lack up to 15 of each thread's latest.
        let pending = if key == "futex_calls" {
            2.0 * 15.0
        } else {
            0.0
        };
        assert!(
            (mine as f64 - want).abs() <= (0.03 * want).max(8.0 * per_wait) + pending,
            "a frame inside the run counted {key}={mine}; the ticker's clock says {want:.0} \
             in its {dt:.3} s"
        );
        full += 1;
        worst = worst.max((mine as f64 - want).abs() / want.max(1.0));
        let rank = 1 + procs.iter().filter(|p| u(&p[key]) > mine).count();
        if rank == 1 {
            first += 1;
        }
        let mut top: Vec<(u64, String)> = procs
            .iter()
            .map(|p| (u(&p[key]), p["comm"].as_str().unwrap_or("").to_string()))
            .collect();
        top.sort_by(|a, b| b.cmp(a));
        top.truncate(3);
        ranks.push((rank, top));
    }
    eprintln!(
        "ticker: workload {key}={own} over {secs:.2}s ({:.0}/s); ttop counted {seen}; \
         worst frame {:.1}% off; ranks {ranks:?}",
        own / secs,
        worst * 100.0
    );
    assert_within(
        &format!("{key} of the ticker process"),
        seen as f64,
        own,
        0.10,
    );
    assert!(full >= 3, "only {full} frames lay inside the ticker's run");
    assert!(
        first * 2 >= full,
        "the 1 kHz ticker was the top process by {key} in only {first} of {full} frames: {ranks:?}"
    );
}

/// The user-stack map does not fill for good: a workload hands it 8,192 distinct waiter
/// stacks (2^13 call paths, a wait each; the map has 4,096 buckets, so most are taken
/// and many stacks are refused), goes idle 13 s (a futex word's stacks stay in use 10 s
/// after its last wait), then 8 new pairs of threads ping-pong from 8 new functions.
/// The ids no entry uses any more are freed (`stack_maps`), and the new stacks are
/// stored and named: every one of the 8 words gets a stack through its function. Before,
/// nothing was ever freed, and a new stack found its bucket taken ~86% of the time.
#[test]
fn a_filled_stack_map_names_new_stacks_again() {
    if !require_root("a_filled_stack_map_names_new_stacks_again") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start(&["--json", "-d", "1"]);
    let mut w = spawn_workload("manystacks", &["13", "13", "4"]);
    let (head, out) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(90)),
        "manystacks hung"
    );
    let kv = rest(out);
    let frames = ttop.stop_after(1);
    let pid = num(&head, "pid") as u64;
    let sites: Vec<u64> = (0..8)
        .map(|i| u64::from_str_radix(kv[&format!("site{i}")].trim_start_matches("0x"), 16).unwrap())
        .collect();
    let fill = |f: &Value, k: &str| -> u64 {
        f["stack_maps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["map"] == "ustacks")
            .map_or(0, |m| u(&m[k]))
    };
    let held: Vec<u64> = frames.iter().map(|f| fill(f, "held")).collect();
    let freed: u64 = frames.iter().map(|f| fill(f, "freed")).sum();
    let capacity = fill(&frames[0], "capacity");
    eprintln!("ustacks held {held:?} of {capacity}; {freed} freed");
    let peak = held.iter().copied().max().unwrap();
    assert!(
        peak * 2 >= capacity,
        "the map never filled (at most {peak} of {capacity}): the experiment did not reproduce"
    );
    // Each site word's stacks, over the frames.
    let mut named = vec![Vec::<String>::new(); sites.len()];
    let mut last_held_with_sites = None;
    for f in &frames {
        for r in f["futexes"].as_array().unwrap() {
            if u(&r["pid"]) != pid {
                continue;
            }
            if let Some(i) = sites.iter().position(|&a| a == u(&r["uaddr"])) {
                named[i].push(watch::names(r).join(" < "));
                last_held_with_sites = Some(fill(f, "held"));
            }
        }
    }
    eprintln!("site stacks: {named:?}");
    assert!(freed >= peak / 2, "only {freed} ids freed of {peak} held");
    let held_then = last_held_with_sites.expect("no row for the new words");
    assert!(
        held_then * 4 <= capacity,
        "the map still held {held_then} of {capacity} while the new stacks came"
    );
    for (i, stacks) in named.iter().enumerate() {
        let site = format!("site{i}+");
        assert!(
            stacks.iter().any(|s| s.contains(&site)),
            "word of site{i} never named through it: {stacks:?}"
        );
    }
}
