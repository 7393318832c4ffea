//! Scheduler truth under real eBPF, checked against what helper workloads know they did
//! and against the kernel's own counters. Needs root (CI runs as root and never skips).

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn rows_for(frames: &[Value], pid: u64) -> Vec<&Value> {
    frames
        .iter()
        .flat_map(|fr| fr["procs"].as_array().unwrap().iter())
        .filter(|p| p["pid"].as_u64() == Some(pid))
        .collect()
}

fn read_stdout(child: &mut std::process::Child) -> String {
    let mut s = String::new();
    child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

/// Thousands of threads that each live far less than an interval: ttop counts every
/// creation (within 1%), and most of them are ghosts the /proc scan never saw.
#[test]
fn thread_churn_is_counted_and_ghosts_found() {
    if !require_root("thread_churn_is_counted_and_ghosts_found") {
        return;
    }
    churn_is_counted(&[], libbpf_rs::ProgramType::Tracing);
}

/// The same with the scheduler probes' raw_tp copies, which a kernel without tp_btf
/// (before 5.5) loads instead.
#[test]
fn raw_tp_fallback_counts_churn_too() {
    if !require_root("raw_tp_fallback_counts_churn_too") {
        return;
    }
    churn_is_counted(
        &[("TTOP_SCHED_RAW_TP", "1")],
        libbpf_rs::ProgramType::RawTracepoint,
    );
}

/// The types of the scheduler programs (kernel names start `ttop_sched_` or
/// `ttop_raw_sched_`, cut at 15 characters) that process `pid` holds open.
fn sched_prog_types(pid: u32) -> Vec<libbpf_rs::ProgramType> {
    let ids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("prog_id:")?.trim().parse().ok())
        })
        .collect();
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| ids.contains(&p.id))
        .filter(|p| {
            let name = p.name.to_string_lossy();
            name.starts_with("ttop_sched_") || name.starts_with("ttop_raw_sched")
        })
        .map(|p| p.ty)
        .collect()
}

fn churn_is_counted(env: &[(&str, &str)], kind: libbpf_rs::ProgramType) {
    let _g = kernel_lock();
    let n: u64 = 3000;
    // ttop runs until the workload is done (however long a loaded machine makes it); its
    // first frame means the probes are attached and the first scan is done.
    let ttop = stream::Stream::start_env(&["--json", "-n", "400", "-d", "0.5"], env);
    // The scheduler programs are of the kind asked for, and only that kind.
    let kinds = sched_prog_types(ttop.pid());
    assert!(
        kinds.len() >= 4 && kinds.iter().all(|k| *k == kind),
        "scheduler programs {kinds:?}, expected {kind:?}"
    );
    let mut w = spawn_workload("churn", &[&n.to_string(), "4", "100"]);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(30)),
        "churn workload hung"
    );
    let out = parse_kv(&read_stdout(&mut w));
    let pid: u64 = out["pid"].parse().unwrap();
    let created: u64 = out["created"].parse().unwrap();
    assert_eq!(created, n);
    // Two frames ended after the workload: its exits are in them.
    let frames = ttop.stop_after(2);
    assert!(frames.len() >= 3, "{} frames", frames.len());
    let rows = rows_for(&frames, pid);
    assert!(!rows.is_empty(), "no row for the churn process {pid}");
    let sum = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap_or(0)).sum::<u64>();
    // threads_created counts the process's own birth too (task_newtask of the fork).
    let seen_created = sum("threads_created");
    let seen_exited = sum("threads_exited");
    let ghosts = sum("ghost_threads");
    eprintln!(
        "churn: workload created {n}; ttop created {seen_created} exited {seen_exited} ghosts {ghosts}"
    );
    assert_within("threads_created", seen_created as f64, (n + 1) as f64, 0.01);
    assert_within("threads_exited", seen_exited as f64, (n + 1) as f64, 0.01);
    assert!(
        ghosts as f64 >= 0.9 * n as f64,
        "only {ghosts} of {n} short-lived threads were ghosts"
    );
    let max_seen = rows
        .iter()
        .map(|r| r["threads_seen"].as_u64().unwrap_or(0))
        .max()
        .unwrap();
    assert!(
        max_seen < 20,
        "the scan saw {max_seen} threads at once; expected a handful"
    );
    // The CPU the ghosts burned is accounted to the process.
    let ghost_ms: f64 = rows.iter().map(|r| f(&r["ghost_cpu_ms"])).sum();
    let expect_ms = n as f64 * 0.1; // 100 us of spinning each
    assert!(
        ghost_ms >= 0.5 * expect_ms,
        "ghost CPU {ghost_ms:.1} ms, expected about {expect_ms:.0} ms"
    );
    let drops: u64 = frames
        .iter()
        .map(|fr| fr["drops_by_map"]["threads"].as_u64().unwrap())
        .sum();
    assert_eq!(drops, 0, "thread map overflowed");
}

/// The per-CPU switch counts add up to the kernel's own ctxt counter (within 5%).
#[test]
fn switches_match_proc_stat_ctxt() {
    if !require_root("switches_match_proc_stat_ctxt") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("pingpong", &["120"]);
    std::thread::sleep(Duration::from_millis(200));
    let frames = ttop_json(&["--json", "-n", "4", "-d", "0.5"]);
    stop_running(&mut w, "pingpong");
    let bpf: u64 = frames
        .iter()
        .flat_map(|fr| fr["cpus"].as_array().unwrap().iter())
        .map(|c| c["switches"].as_u64().unwrap())
        .sum();
    let ctxt: u64 = frames.iter().map(|fr| fr["ctxt"].as_u64().unwrap()).sum();
    eprintln!("switches: bpf {bpf}, /proc/stat ctxt {ctxt}");
    assert!(ctxt > 10_000, "workload produced too few switches ({ctxt})");
    assert_within("sum of per-CPU switches", bpf as f64, ctxt as f64, 0.05);
}

/// Hundreds of runnable threads: ttop still delivers every interval (at real-time
/// priority with --rt), its rates use the measured interval, and it counts them all.
#[test]
fn keeps_its_head_under_hundreds_of_runnable_threads() {
    if !require_root("keeps_its_head_under_hundreds_of_runnable_threads") {
        return;
    }
    let _g = kernel_lock();
    let k = 200.0;
    let mut w = spawn_workload("spin", &["200", "6"]);
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let frames = ttop_json(&["--json", "-n", "4", "-d", "0.5", "--rt"]);
    let took = t0.elapsed();
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(frames.len(), 4);
    assert!(
        took < Duration::from_secs(6),
        "4 half-second frames took {took:?}"
    );
    for fr in &frames {
        let secs = f(&fr["interval_s"]);
        assert!((0.4..0.9).contains(&secs), "measured interval {secs}");
        let avg = f(&fr["runnable"]["true_avg"]);
        assert_within("true_avg with 200 spinners", avg, k, 0.15);
    }
}

/// Quitting leaves the slow detach of the syscall tracepoints to a child (see
/// src/collect/bpf/detach.rs), forked by the collector thread (so named `ttop-collect`): it
/// closes the terminal, pipes and every other file but the eBPF ones at once, so ttop's
/// stdout reaches EOF while the child still lives, and it ends on its own once ttop has
/// exited. (Its open files cannot be listed: it spends its life in exit, after its files
/// were detached from it.)
#[test]
fn quitting_leaves_the_detach_to_a_child_that_ends() {
    if !require_root("quitting_leaves_the_detach_to_a_child_that_ends") {
        return;
    }
    let _g = kernel_lock();
    let detachers = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "ttop-collect")
            })
            // A zombie holds nothing; reaping it is init's business.
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    s.rsplit_once(") ")
                        .is_some_and(|(_, rest)| !rest.starts_with('Z'))
                })
            })
            .collect()
    };
    // The ttop of the test before this one may still be detaching: let it finish.
    let gone = |what: &str| {
        let t0 = Instant::now();
        while !detachers().is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{what}: {:?}",
                detachers()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    gone("an earlier detaching child did not end");
    // output() returns once stdout and stderr reached EOF and ttop was reaped. With the
    // per-call futex hooks (syscall tracepoints: perf events whose last close waits for
    // grace periods) the detach takes 0.4-0.9 s here; without them it can end within
    // the few ms this look takes (3-23 ms measured), and the look would race it.
    let out = std::process::Command::new(ttop_bin())
        .args(["--json", "-n", "1", "-d", "0.1", "--futex-calls"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let left = detachers();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    // Its detach takes hundreds of ms (grace periods); this look comes within ms of
    // ttop's exit. No child here means ttop detached inline, and quitting waited.
    assert_eq!(
        left.len(),
        1,
        "one detaching child alive after ttop's pipes closed and ttop exited: {left:?}"
    );
    gone("the detaching child did not end");
}

/// The first frame of a start is complete: with eBPF every eBPF figure is measured (the
/// three BPF objects are loaded before the first Sample is taken, so none is still
/// loading), and without it every one of them is null ("not measured"), never a zero.
/// `futex_calls` is measured only with the per-call hooks (--futex-calls).
#[test]
fn the_first_frame_is_measured_or_says_not_measured() {
    if !require_root("the_first_frame_is_measured_or_says_not_measured") {
        return;
    }
    let _g = kernel_lock();
    let cpu_keys = [
        "runq_avg",
        "runq_max",
        "switches",
        "migrations",
        "ipi",
        "ipi_sent",
        "tlb_shootdowns",
    ];
    let proc_keys = [
        "threads_created",
        "threads_exited",
        "ghost_threads",
        "ghost_cpu_ms",
        "cpu_pct_true",
        "runq_wait_ms",
        "runnable_avg",
        "tlb_shootdowns_caused",
        "ipis_caused",
        "futex_slept",
        "futex_wait_ms",
    ];
    // (eBPF, --futex-calls): futex_calls is measured only when every call is hooked.
    for (bpf, calls) in [(true, false), (true, true), (false, false)] {
        let mut args = vec!["--json", "-n", "1", "-d", "0.1"];
        if !bpf {
            args.push("--no-bpf");
        }
        if calls {
            args.push("--futex-calls");
        }
        let frames = ttop_json(&args);
        let fr = &frames[0];
        assert_eq!(
            fr["mode"],
            if bpf { "bpf" } else { "procfs" },
            "{}",
            fr["problems"]
        );
        if bpf {
            assert_eq!(fr["problems"], serde_json::json!([]), "a collector missing");
        }
        let check = |what: &str, v: &Value| {
            assert_eq!(
                !v.is_null(),
                bpf,
                "{what} is {v} {} eBPF",
                if bpf { "with" } else { "without" }
            );
        };
        check("runnable.true_avg", &fr["runnable"]["true_avg"]);
        check("runnable.true_max", &fr["runnable"]["true_max"]);
        check("latency", &fr["latency"]);
        check("tlb", &fr["tlb"]);
        for c in fr["cpus"].as_array().unwrap() {
            for k in cpu_keys {
                check(&format!("cpus[{}].{k}", c["cpu"]), &c[k]);
            }
        }
        let procs = fr["procs"].as_array().unwrap();
        assert!(!procs.is_empty());
        for p in procs {
            for k in proc_keys {
                check(&format!("procs[pid {}].{k}", p["pid"]), &p[k]);
            }
            assert_eq!(!p["futex_calls"].is_null(), calls, "futex_calls: {p}");
        }
        assert_eq!(fr["contention_measured"]["futex_calls"], calls);
    }
}

/// The runqlat reference: per thread of the workload (by its name), the waits from a
/// wake-up (or a preemption, prev_state "R" or "R+") to running, as ttop counts them:
/// up to the thread's exit (sched_process_exit); an exiting thread preempted after it
/// waits once more on its way out, which ttop counts per CPU only (`@after`).
const RUNQLAT: &str = r#"
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new
/args->comm == "shortlived"/ { @q[args->pid] = nsecs; }
tracepoint:sched:sched_process_exit /args->comm == "shortlived"/ { @dead[args->pid] = 1; }
tracepoint:sched:sched_switch {
  if (args->prev_comm == "shortlived" && (args->prev_state & 0xff) == 0) {
    @q[args->prev_pid] = nsecs;
  }
  if (args->next_comm == "shortlived") {
    $t = @q[args->next_pid];
    if ($t > 0 && @dead[args->next_pid]) {
      @after = count();
      delete(@q[args->next_pid]);
    } else if ($t > 0) {
      @n[args->next_pid] = count();
      @mx[args->next_pid] = max(nsecs - $t);
      delete(@q[args->next_pid]);
    }
  }
}
END { clear(@q); clear(@dead); }
"#;

/// Threads that end are counted to the end: 4 spinners on one CPU and, beside them, a
/// thread every 100 ms that waits behind them at nice 19, runs 0.5 ms and exits. The
/// per-thread latency rows, summed over the frames, hold as many waits as a bpftrace
/// runqlat over the same seconds (within 1%: the two differ only where a wake-up races
/// a switch), every short-lived thread has its rows, the last under its own name, and the worst
/// wait, a short-lived thread's, is the sched_stall finding's with the reference's max.
/// (The latency entry used to be deleted at exit: the exiting interval's waits were
/// lost, 0.91-0.95 of the reference's count.)
#[test]
fn latency_of_threads_that_exit_matches_runqlat() {
    if !require_root("latency_of_threads_that_exit_matches_runqlat")
        || !bpftrace::require_bpftrace("latency_of_threads_that_exit_matches_runqlat")
    {
        return;
    }
    let _g = kernel_lock();
    let tt = stream::Stream::start(&["--json", "-d", "1"]);
    let bt = bpftrace::Bpftrace::start(RUNQLAT);
    let mut w = spawn_workload("shortlived", &["1", "4", "4", "100", "500", "19"]);
    let pid = watch::pid_of(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(60)),
        "workload hung"
    );
    let kv = parse_kv(&read_stdout(&mut w));
    let short: Vec<u64> = kv["short"].split(',').map(|t| t.parse().unwrap()).collect();
    let reference = bt.stop();
    // Two more frames: the last interval of the threads that exited last.
    let frames = tt.stop_after(2);
    let tid_of = |k: &String| k.parse::<u64>().unwrap();
    // The main thread's first wake-up came before exec gave it the workload's name.
    let ref_n: std::collections::BTreeMap<u64, u64> = bpftrace::map(&reference, "n")
        .into_iter()
        .map(|(k, v)| (tid_of(&k), v))
        .filter(|&(t, _)| t != pid)
        .collect();
    let ref_max: std::collections::BTreeMap<u64, u64> = bpftrace::map(&reference, "mx")
        .into_iter()
        .map(|(k, v)| (tid_of(&k), v))
        .collect();
    let mut ours: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut names: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for fr in &frames {
        let rows = fr["latency"]["threads"].as_array().unwrap();
        // A frame lists the 200 threads with the worst max wait. Once in CI a frame was
        // cut: say by whom, and let the sums below (1%) and the rows of every short-lived
        // thread tell whether the workload's rows were among those cut.
        if fr["latency"]["threads_total"].as_u64().unwrap_or(0) > rows.len() as u64 {
            let mut by: std::collections::BTreeMap<String, usize> = Default::default();
            for r in rows {
                *by.entry(r["comm"].as_str().unwrap_or("?").to_string())
                    .or_default() += 1;
            }
            eprintln!(
                "a frame's rows were cut at {} of {}: {by:?}",
                rows.len(),
                fr["latency"]["threads_total"]
            );
        }
        for r in rows.iter().filter(|r| r["pid"].as_u64() == Some(pid)) {
            let tid = r["tid"].as_u64().unwrap();
            if tid != pid {
                *ours.entry(tid).or_default() += r["count"].as_u64().unwrap();
                let name = r["comm"].as_str().unwrap().to_string();
                names.entry(tid).or_default().push(name);
            }
        }
    }
    let (n_ours, n_ref): (u64, u64) = (ours.values().sum(), ref_n.values().sum());
    let after = reference
        .lines()
        .find_map(|l| l.strip_prefix("@after: "))
        .unwrap_or("0");
    eprintln!(
        "waits: ttop {n_ours}, runqlat {n_ref} over {} threads ({} short-lived; {after} \
         more after their exit)",
        ref_n.len(),
        short.len()
    );
    for t in &short {
        eprintln!(
            "  short {t}: ttop {:?} ref {:?} max {:?} ms",
            ours.get(t),
            ref_n.get(t),
            ref_max.get(t).map(|m| *m as f64 / 1e6)
        );
    }
    assert!(n_ref > 200, "the reference saw only {n_ref} waits");
    assert!(
        short.len() >= 30,
        "only {} short-lived threads",
        short.len()
    );
    assert_within(
        "waits counted vs runqlat",
        n_ours as f64,
        n_ref as f64,
        0.01,
    );
    // Every short-lived thread the reference saw wait has its row, under its name.
    let missing: Vec<&u64> = short
        .iter()
        .filter(|t| ref_n.contains_key(t) && !ours.contains_key(t))
        .collect();
    assert!(
        missing.is_empty(),
        "no latency row for short-lived {missing:?}"
    );
    // Its last row (the interval it exited in) names it as at exit, scanned or not. (A
    // row of a thread alive but born after that interval's scan has no name yet.)
    for t in short.iter().filter(|t| ours.contains_key(t)) {
        assert_eq!(
            names[t].last().unwrap(),
            "shortlived",
            "thread {t} named {:?}",
            names[t]
        );
    }
    // The worst wait, and sched_stall naming it.
    let (&worst_tid, &worst_ns) = ref_max.iter().max_by_key(|(_, m)| **m).unwrap();
    let worst_ms = worst_ns as f64 / 1e6;
    eprintln!("worst wait: thread {worst_tid}, {worst_ms:.1} ms");
    assert!(
        short.contains(&worst_tid) && worst_ms >= 60.0,
        "the experiment did not reproduce: the worst wait was {worst_ms:.1} ms by {worst_tid}"
    );
    let stalls: Vec<&Value> = frames
        .iter()
        .flat_map(|f| f["findings"].as_array().unwrap())
        .filter(|f| f["kind"] == "sched_stall" && f["pids"][0].as_u64() == Some(pid))
        .collect();
    let hit = stalls
        .iter()
        .find(|f| f["tids"][0].as_u64() == Some(worst_tid))
        .unwrap_or_else(|| panic!("no sched_stall for thread {worst_tid}: {stalls:#?}"));
    let got = hit["figures"]["max_wait_ms"].as_f64().unwrap();
    // The two clocks read the same event a few microseconds apart; the figure is
    // rounded to 0.01 ms.
    assert!(
        (got - worst_ms).abs() <= 0.01 * worst_ms,
        "sched_stall says {got} ms, the reference {worst_ms:.2} ms"
    );
}
