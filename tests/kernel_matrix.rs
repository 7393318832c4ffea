//! The kernel matrix: ttop's core kernel checks, on this machine's kernel and on the
//! kernels servers run (Debian's 5.10, 6.1 and 6.12, booted under QEMU by the `vm_*`
//! tests, which run this same binary's `checks::` inside the guest). Each check compares
//! ttop with an independent reference (the workload's own count, the kernel's counters,
//! tracefs) and knows what the kernel it runs on can measure, from tracefs and
//! /proc/kallsyms rather than from ttop: a figure measured through a fallback hook must
//! meet the same reference and tolerance as the modern hook, and a figure this kernel
//! cannot measure must be null with its reason, never 0.
//!
//! Under QEMU (TCG, several times slower than the host) only correctness is checked:
//! windows are longer and no speed is asserted. Needs root; under CI=true a missing
//! kernel or QEMU is a failure.

mod common;

use std::time::Duration;

use common::*;

/// Boot `series` and run `checks::` inside it; print the guest's test log.
fn matrix(series: &'static str) {
    let name = format!("vm_{series}");
    if !require_root(&name) {
        return;
    }
    let _g = kernel_lock();
    let Some(k) = vm::kernel(series) else {
        return;
    };
    // Built here: the guest could compile them, at a tenth of the speed.
    for w in checks::WORKLOADS {
        workload(w);
    }
    let exe = std::env::current_exe().unwrap();
    // The log goes to the guest's tmpfs and is copied out at the end (a 9p write must
    // not be what a check waits on); the console shows each check as it ends, so a
    // guest that hangs still says where.
    let script = format!(
        "cd {dir}\nexport TTOP_VM={series} CI={ci} PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         {{ {exe} --test-threads=1 --nocapture checks::; echo $? > /tmp/rc; }} 2>&1 \
         | tee /tmp/test.log | grep --line-buffered -E '^test |panicked|^test result'\n\
         cp /tmp/test.log /out/test.log\n( exit $(cat /tmp/rc) )",
        dir = env!("CARGO_MANIFEST_DIR"),
        ci = if is_ci() { "true" } else { "" },
        exe = exe.display(),
    );
    let b = vm::boot(&k, &script, Duration::from_secs(420));
    let log = b.file("test.log");
    eprintln!(
        "===== Linux {} ({series}) under QEMU, {:.0} s =====\n{log}",
        k.release, b.secs
    );
    if b.rc != Some(0) {
        let tail: Vec<&str> = b.console.lines().rev().take(60).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        eprintln!("console:\n{}", tail.join("\n"));
    }
    assert_eq!(
        b.rc,
        Some(0),
        "the checks failed or never finished on Linux {} (log above)",
        k.release
    );
    assert!(
        log.contains("test result: ok") && !log.contains(" 0 passed"),
        "no check ran on Linux {}",
        k.release
    );
}

#[test]
fn vm_5_10() {
    matrix("5.10");
}

#[test]
fn vm_6_1() {
    matrix("6.1");
}

#[test]
fn vm_6_12() {
    matrix("6.12");
}

/// The checks, run here and in every guest.
mod checks {
    use std::collections::HashMap;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use serde_json::Value;

    use super::common::stream::{Stream, first_line, num, rest};
    use super::common::watch::{names, pid_of};
    use super::common::*;

    /// Every workload a check runs (built before a guest boots).
    pub const WORKLOADS: &[&str] = &[
        "churn",
        "spin",
        "futex_mutex",
        "tlbshoot",
        "deepmutex",
        "burn31",
        "bench_churn",
        "bench_threads",
        "mmaplock",
    ];

    fn in_vm() -> bool {
        std::env::var_os("TTOP_VM").is_some()
    }

    fn u(v: &Value) -> u64 {
        v.as_u64().unwrap_or(0)
    }

    fn f(v: &Value) -> f64 {
        v.as_f64().unwrap_or(0.0)
    }

    fn tracepoint(group: &str, name: &str) -> bool {
        [
            "/sys/kernel/tracing/events",
            "/sys/kernel/debug/tracing/events",
        ]
        .iter()
        .any(|r| Path::new(r).join(group).join(name).is_dir())
    }

    fn kallsyms_has(sym: &str) -> bool {
        std::fs::read_to_string("/proc/kallsyms")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some(sym))
    }

    fn kprobes() -> bool {
        Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
    }

    /// `ttop probe --json`: each figure family's status and note, by id.
    fn probe() -> (Value, HashMap<String, (String, String)>) {
        let out = std::process::Command::new(ttop_bin())
            .args(["probe", "--json"])
            .output()
            .expect("run ttop probe");
        assert!(out.status.success(), "ttop probe failed");
        let v: Value = serde_json::from_slice(&out.stdout).expect("probe's JSON");
        let feats = v["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["id"].as_str().unwrap().to_string(),
                    (
                        f["status"].as_str().unwrap().to_string(),
                        format!(
                            "{} {}",
                            f["hook"].as_str().unwrap(),
                            f["note"].as_str().unwrap()
                        ),
                    ),
                )
            })
            .collect();
        (v, feats)
    }

    fn status<'a>(feats: &'a HashMap<String, (String, String)>, id: &str) -> &'a str {
        feats.get(id).map_or("absent", |s| s.0.as_str())
    }

    /// A workload's whole stdout after it exited.
    fn output(mut w: std::process::Child) -> HashMap<String, String> {
        assert!(
            wait_timeout(&mut w, Duration::from_secs(120)),
            "a workload hung"
        );
        let mut s = String::new();
        std::io::Read::read_to_string(w.stdout.as_mut().unwrap(), &mut s).unwrap();
        parse_kv(&s)
    }

    fn rows_of(frames: &[Value], pid: u64) -> Vec<&Value> {
        frames
            .iter()
            .flat_map(|fr| fr["procs"].as_array().unwrap())
            .filter(|r| u(&r["pid"]) == pid)
            .collect()
    }

    /// ttop says what this kernel can measure, as tracefs and kallsyms show it: the
    /// modern hook where the kernel has it, the fallback (with the reason) where not,
    /// and nothing left to an "unexpected error".
    #[test]
    fn probe_reports_what_this_kernel_has() {
        if !require_root("probe_reports_what_this_kernel_has") {
            return;
        }
        let _g = kernel_lock();
        let (v, feats) = probe();
        eprintln!("{}", serde_json::to_string_pretty(&v["features"]).unwrap());
        assert_eq!(v["mode"], "bpf", "eBPF did not start: {:?}", v["problems"]);
        for id in ["runnable", "cpu_time", "thread_churn", "sched_latency"] {
            assert_eq!(status(&feats, id), "measured", "{id}: {:?}", feats.get(id));
        }
        let locks = tracepoint("lock", "contention_begin");
        assert_eq!(
            status(&feats, "kernel_locks"),
            if locks { "measured" } else { "missing" },
            "kernel locks: {:?}",
            feats.get("kernel_locks")
        );
        if !locks {
            assert!(
                feats["kernel_locks"].1.contains("5.19"),
                "{:?}",
                feats["kernel_locks"]
            );
        }
        let csd = tracepoint("csd", "csd_function_entry");
        let want = if csd { "measured" } else { "fallback" };
        assert_eq!(
            status(&feats, "tlb_shootdowns"),
            want,
            "{:?}",
            feats.get("tlb_shootdowns")
        );
        if !csd {
            let hook = &feats["tlb_shootdowns"].1;
            let by = if kprobes() {
                "kprobe/flush_tlb_func"
            } else {
                "tlb:tlb_flush"
            };
            assert!(hook.contains(by) && hook.contains("6.3"), "{hook}");
        }
        let ipi_sent = tracepoint("ipi", "ipi_send_cpu");
        assert_eq!(
            status(&feats, "ipi_sent"),
            if ipi_sent { "measured" } else { "missing" }
        );
        // Scheduler-side futex waits need bpf_task_pt_regs (5.15).
        let regs = kallsyms_has("bpf_task_pt_regs");
        assert_eq!(
            status(&feats, "futex_waits"),
            if regs { "measured" } else { "fallback" },
            "{:?}",
            feats.get("futex_waits")
        );
        let problems: Vec<&str> = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        assert!(
            !problems
                .iter()
                .any(|p| p.contains("unexpected") || p.contains("verifier rejected")),
            "a failure nobody foresaw: {problems:#?}"
        );
    }

    /// Every thread a workload creates is counted (the workload's own count, within 1%),
    /// and most of its short-lived threads are ghosts the scan never saw.
    #[test]
    fn thread_creations_match_the_workload() {
        if !require_root("thread_creations_match_the_workload") {
            return;
        }
        let _g = kernel_lock();
        let n: u64 = if in_vm() { 600 } else { 2000 };
        let ttop = Stream::start(&["--json", "-d", "0.5", "-n", "400"]);
        let w = spawn_workload("churn", &[&n.to_string(), "4", "100"]);
        let out = output(w);
        let pid: u64 = out["pid"].parse().unwrap();
        assert_eq!(out["created"].parse::<u64>().unwrap(), n);
        let frames = ttop.stop_after(2);
        let rows = rows_of(&frames, pid);
        let sum = |k: &str| rows.iter().map(|r| u(&r[k])).sum::<u64>();
        eprintln!(
            "churn created {n}: ttop created {} exited {} ghosts {}",
            sum("threads_created"),
            sum("threads_exited"),
            sum("ghost_threads")
        );
        // threads_created counts the process's own birth too.
        assert_within(
            "threads_created",
            sum("threads_created") as f64,
            (n + 1) as f64,
            0.01,
        );
        assert_within(
            "threads_exited",
            sum("threads_exited") as f64,
            (n + 1) as f64,
            0.01,
        );
        assert!(
            sum("ghost_threads") as f64 >= 0.8 * n as f64,
            "ghosts {}",
            sum("ghost_threads")
        );
    }

    /// Three spinners on two CPUs: the time-weighted runnable count agrees with the
    /// kernel's own procs_running sampled at 1 kHz over the same seconds (the frames
    /// whose whole interval lies inside the sampling; within 15%).
    #[test]
    fn runnable_truth_matches_procs_running() {
        if !require_root("runnable_truth_matches_procs_running") {
            return;
        }
        let _g = kernel_lock();
        let ttop = Stream::start(&["--json", "-d", "0.5", "-n", "400"]);
        let mut w = spawn_workload("spin", &["3", "6"]);
        let _pid = pid_of(&mut w);
        std::thread::sleep(Duration::from_millis(300));
        let wall = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
        };
        // The reader is itself running when it reads: each read counts it once too many.
        // Between reads it is runnable for a while too (long under QEMU), which ttop
        // rightly counts: that share, from its own schedstat, is added back.
        let own = || {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            let v: Vec<f64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
            v[0] + v[1]
        };
        let (t0, start, own0) = (Instant::now(), wall(), own());
        let mut pr = Vec::new();
        while t0.elapsed() < Duration::from_millis(3000) {
            if let Some(n) = ttop::collect::procfs::scan::procs_running() {
                pr.push(f64::from(n) - 1.0);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let end = wall();
        let self_runnable = (own() - own0) / 1e9 / (end - start);
        let frames = ttop.stop_after(1);
        let _ = w.kill();
        let _ = w.wait();
        let avgs: Vec<f64> = frames
            .iter()
            .filter(|fr| f(&fr["t"]) - f(&fr["interval_s"]) >= start && f(&fr["t"]) <= end)
            .map(|fr| f(&fr["runnable"]["true_avg"]))
            .collect();
        let truth = avgs.iter().sum::<f64>() / avgs.len().max(1) as f64;
        let reference = pr.iter().sum::<f64>() / pr.len().max(1) as f64 + self_runnable;
        eprintln!(
            "true_avg {avgs:?} mean {truth:.2}; procs_running mean {reference:.2} ({} reads, \
             the reader's own runnable share {self_runnable:.2} included)",
            pr.len()
        );
        assert!(avgs.len() >= 2, "{} frames inside the sampling", avgs.len());
        // Under QEMU the reader gets a few hundred turns beside the spinners: enough for a
        // mean good to a few percent.
        assert!(pr.len() >= 100, "only {} procs_running reads", pr.len());
        assert!(
            reference >= 2.5,
            "the spinners were not running ({reference:.2})"
        );
        assert_within("true_avg vs procs_running", truth, reference, 0.15);
    }

    /// A 4-thread mutex storm: the waits that slept, whichever hook counts them on this
    /// kernel, match the workload's own count of FUTEX_WAITs that returned 0 (within
    /// 5%); the per-call figures are null unless every call is hooked.
    #[test]
    fn futex_slept_waits_match_the_workload() {
        if !require_root("futex_slept_waits_match_the_workload") {
            return;
        }
        let _g = kernel_lock();
        let ttop = Stream::start(&["--json", "-d", "0.5", "-n", "400"]);
        let mut w = spawn_workload("futex_mutex", &["4", if in_vm() { "4" } else { "2" }]);
        let (head, r) = first_line(&mut w);
        assert!(
            wait_timeout(&mut w, Duration::from_secs(120)),
            "futex_mutex hung"
        );
        let out = rest(r);
        let frames = ttop.stop_after(2);
        let pid: u64 = head["pid"].parse().unwrap();
        let mutex = u64::from_str_radix(head["mutex"].trim_start_matches("0x"), 16).unwrap();
        let slept = num(&out, "slept");
        let calls_hooked = frames
            .iter()
            .any(|fr| fr["contention_measured"]["futex_calls"] == true);
        let mut contended = 0;
        for fr in &frames {
            assert_eq!(fr["contention_measured"]["futex"], true);
            for r in fr["futexes"].as_array().unwrap() {
                if u(&r["pid"]) == pid && u(&r["uaddr"]) == mutex {
                    contended += u(&r["contended"]);
                    if fr["contention_measured"]["futex_calls"] == false {
                        assert!(r["calls"].is_null() && r["eagain"].is_null(), "{r}");
                    }
                }
            }
        }
        eprintln!(
            "futex_mutex slept {slept}; ttop contended {contended} (calls hooked: {calls_hooked})"
        );
        assert!(slept > 50.0, "the storm hardly slept ({slept})");
        assert_within("waits that slept", contended as f64, slept, 0.05);
    }

    /// An unmapper on CPU 0 beside a spinner of the same process on CPU 1: every frame's
    /// TLB shootdowns match the kernel's /proc/interrupts TLB line (within 10%), whichever
    /// hook counts them here, and are charged to that process where this kernel can
    /// say who caused them; what no hook measures is null, never 0.
    #[test]
    fn tlb_shootdowns_match_proc_interrupts() {
        if !require_root("tlb_shootdowns_match_proc_interrupts") {
            return;
        }
        tlb_check(false);
    }

    /// The last resort, for a kernel with neither csd:* (6.3) nor kprobes: the remote
    /// flushes tlb:tlb_flush reports, against the same reference; nobody is charged.
    #[test]
    fn tlb_shootdowns_through_tlb_flush_match_too() {
        if !require_root("tlb_shootdowns_through_tlb_flush_match_too") {
            return;
        }
        tlb_check(true);
    }

    fn tlb_check(tlb_flush_only: bool) {
        let _g = kernel_lock();
        let env: &[(&str, &str)] = if tlb_flush_only {
            &[(
                "TTOP_KERNEL_HIDE",
                "csd_queue_cpu,csd_function_entry,kprobes",
            )]
        } else {
            &[]
        };
        let ttop = Stream::start_env(&["--json", "-d", "1", "-n", "400"], env);
        let secs = if in_vm() { "5" } else { "3" };
        let mut w = spawn_workload("tlbshoot", &[secs, "16", "0"]);
        let pid = pid_of(&mut w);
        let _ = output(w);
        let frames = ttop.stop_after(1);
        let (mut shoot, mut line, mut caused) = (0u64, 0u64, 0u64);
        let mut caused_measured = true;
        for fr in &frames {
            let s: u64 = fr["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    assert!(
                        !c["tlb_shootdowns"].is_null(),
                        "shootdowns not measured: {c}"
                    );
                    u(&c["tlb_shootdowns"])
                })
                .sum();
            let l = u(&fr["tlb"]["proc_interrupts"]);
            eprintln!(
                "interval {:.2}s: ttop {s}, /proc/interrupts TLB {l}; tlb {}",
                f(&fr["interval_s"]),
                fr["tlb"]
            );
            if l >= 50 {
                assert_within(
                    "TLB shootdowns vs /proc/interrupts",
                    s as f64,
                    l as f64,
                    0.10,
                );
            }
            shoot += s;
            line += l;
            if let Some(r) = fr["procs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| u(&r["pid"]) == pid)
            {
                caused_measured &= !r["tlb_shootdowns_caused"].is_null();
                caused += u(&r["tlb_shootdowns_caused"]);
            }
            // IPIs sent: measured only with the ipi tracepoints, never a silent 0.
            let sent = tracepoint("ipi", "ipi_send_cpu");
            assert_eq!(fr["tlb"]["ipis"].is_null(), !sent, "{}", fr["tlb"]);
            for c in fr["cpus"].as_array().unwrap() {
                assert_eq!(c["ipi_sent"].is_null(), !sent, "{c}");
            }
        }
        assert!(line >= 100, "the workload caused only {line} shootdowns");
        assert_within(
            "TLB shootdowns over the run",
            shoot as f64,
            line as f64,
            0.05,
        );
        let who = !tlb_flush_only && (tracepoint("csd", "csd_queue_cpu") || kprobes());
        assert_eq!(caused_measured, who, "tlb_shootdowns_caused measured?");
        if who {
            assert!(
                caused as f64 >= 0.8 * shoot as f64,
                "tlbshoot caused {caused} of {shoot}"
            );
        }
    }

    /// A mutex contended three calls deep in a program without frame pointers: the
    /// waiter's stack comes out whole, unwound from .eh_frame.
    #[test]
    fn user_stack_is_unwound_through_eh_frame() {
        if !require_root("user_stack_is_unwound_through_eh_frame") {
            return;
        }
        let _g = kernel_lock();
        let ttop = Stream::start(&["--json", "-d", "1", "-n", "400"]);
        let mut w = spawn_workload("deepmutex", &["4", if in_vm() { "5" } else { "3" }]);
        let pid = pid_of(&mut w);
        let _ = output(w);
        let frames = ttop.stop_after(1);
        let base = |s: &String| s.split('+').next().unwrap_or("").to_string();
        let stacks: Vec<Vec<String>> = frames
            .iter()
            .flat_map(|fr| fr["futexes"].as_array().unwrap())
            .filter(|r| u(&r["pid"]) == pid)
            .map(names)
            .collect();
        let whole = stacks.iter().any(|s| {
            s.windows(3).any(|w| {
                w.iter().map(base).collect::<Vec<_>>() == ["level3_takes_lock", "level2", "level1"]
            })
        });
        assert!(
            whole,
            "no stack holds level3_takes_lock <- level2 <- level1: {stacks:#?}"
        );
    }

    /// Seed 002 on kernels without PROCMAP_QUERY (before 6.11): naming a process's user
    /// frames reads its whole /proc/PID/maps, which takes its mmap_lock. ttop does so only
    /// for an address no known mapping holds, at most once per process every 30 s (never
    /// on 6.11+), and what those reads cost is measured with ttop as seed 002's throttled
    /// reader (nice 19, on CPU 0 beside a spinner) of a process that maps and unmaps all
    /// the time: its mmap_lock waits on ttop, where the kernel has the mmap_lock
    /// tracepoints to see them (not 5.10).
    #[test]
    fn maps_text_reads_are_rare_and_cheap() {
        if !require_root("maps_text_reads_are_rare_and_cheap") {
            return;
        }
        let _g = kernel_lock();
        let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut v = rel
            .split(|c: char| !c.is_ascii_digit())
            .map(|x| x.parse::<u32>().unwrap_or(0));
        let (major, minor) = (v.next().unwrap(), v.next().unwrap());
        let query = (major, minor) >= (6, 11);
        let secs = if in_vm() { "8" } else { "5" };
        let spin = std::process::Command::new("taskset")
            .args(["-c", "0"])
            .arg(workload("spin"))
            .args(["1", secs])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("taskset spin");
        let ttop = Stream::start_under(
            &["taskset", "-c", "0", "nice", "-n", "19"],
            &["--json", "-d", "1", "-n", "400"],
            &[],
        );
        let tpid = u64::from(ttop.pid());
        let mut victim = spawn_workload("mmaplock", &["victim", "2", secs]);
        let mut locker = spawn_workload("deepmutex", &["4", secs]);
        let (vpid, lpid) = (pid_of(&mut victim), pid_of(&mut locker));
        let _ = output(victim);
        let _ = output(locker);
        let frames = ttop.stop_after(1);
        let mut spin = spin;
        let _ = spin.kill();
        let _ = spin.wait();
        let reads: u64 = frames
            .iter()
            .map(|fr| u(&fr["user_frames"]["maps_reads"]))
            .sum();
        let (mut waits, mut wait_ms, mut max_ms) = (0u64, 0.0f64, 0.0f64);
        let mut rows = 0;
        // The processes whose frames were named (each may cost one read).
        let mut named = std::collections::BTreeSet::new();
        for fr in &frames {
            for r in fr["futexes"].as_array().unwrap() {
                if !names(r).is_empty() {
                    named.insert(u(&r["pid"]));
                }
            }
            for r in fr["mmap_lock"].as_array().unwrap() {
                for (pid, stack) in [
                    ("waiter_pid", "waiter_stack"),
                    ("holder_pid", "holder_stack"),
                ] {
                    if r[stack].as_array().is_some_and(|s| !s.is_empty()) {
                        named.insert(u(&r[pid]));
                    }
                }
                rows += 1;
                if u(&r["victim_pid"]) == vpid && u(&r["holder_pid"]) == tpid {
                    waits += u(&r["waits"]);
                    wait_ms += f(&r["total_wait_ms"]);
                    max_ms = max_ms.max(f(&r["max_wait_us"]) / 1000.0);
                }
            }
        }
        let mmap = tracepoint("mmap_lock", "mmap_lock_start_locking");
        eprintln!(
            "PROCMAP_QUERY {query}: {reads} maps texts read for {} processes named {named:?} \
             (victim {vpid}, locker {lpid}); \
             mmap_lock rows {rows}; the victim's waits on ttop ({tpid}): {waits}, \
             {wait_ms:.3} ms in all, longest {max_ms:.3} ms{}",
            named.len(),
            if mmap {
                ""
            } else {
                " (not measurable: no mmap_lock tracepoints)"
            }
        );
        if query {
            assert_eq!(reads, 0, "PROCMAP_QUERY answers without the text");
        } else {
            // Each process named read once at most (the run is shorter than 30 s).
            assert!(named.contains(&lpid), "the locker's stacks were not named");
            assert!(
                reads >= 1 && reads as usize <= named.len(),
                "{reads} maps texts read in {secs} s for {} processes",
                named.len()
            );
        }
        // A read costs the victim at most a few ms of waiting, throttled reader or not.
        assert!(
            wait_ms <= 20.0 * reads.max(1) as f64,
            "{wait_ms:.2} ms of waits on ttop"
        );
    }

    /// Two functions that burn CPU 3:1 get 75% and 25% of the profile's samples (±5).
    #[test]
    fn profile_shares_come_out_3_to_1() {
        if !require_root("profile_shares_come_out_3_to_1") {
            return;
        }
        let _g = kernel_lock();
        let secs = if in_vm() { 8 } else { 4 };
        let mut w = spawn_workload("burn31", &["1", &(secs + 4).to_string()]);
        let pid = pid_of(&mut w);
        let out = std::process::Command::new(ttop_bin())
            .args([
                "profile",
                "-p",
                &pid.to_string(),
                "--duration",
                &secs.to_string(),
            ])
            .output()
            .expect("run ttop profile");
        let _ = w.kill();
        let _ = w.wait();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "ttop profile: {err}");
        let mut leaf: HashMap<String, u64> = HashMap::new();
        let mut total = 0;
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            total += n;
            *leaf
                .entry(stack.rsplit(';').next().unwrap().to_string())
                .or_default() += n;
        }
        let share = |k: &str| 100.0 * *leaf.get(k).unwrap_or(&0) as f64 / total.max(1) as f64;
        eprintln!(
            "burn_a {:.1}%, burn_b {:.1}% of {total} samples",
            share("burn_a"),
            share("burn_b")
        );
        assert!(total >= 100, "{total} samples");
        assert!(
            (share("burn_a") - 75.0).abs() <= 5.0,
            "burn_a {:.1}",
            share("burn_a")
        );
        assert!(
            (share("burn_b") - 25.0).abs() <= 5.0,
            "burn_b {:.1}",
            share("burn_b")
        );
    }

    /// thread_churn names a process that creates and joins threads all the time, and
    /// not a pool doing the same work on the same number of threads.
    #[test]
    fn thread_churn_fires_on_churn_not_on_a_pool() {
        if !require_root("thread_churn_fires_on_churn_not_on_a_pool") {
            return;
        }
        let _g = kernel_lock();
        let ttop = Stream::start(&["--json", "-d", "0.5", "-n", "400"]);
        let secs = if in_vm() { "6" } else { "3" };
        let mut churn = spawn_workload("bench_churn", &[secs, "4", "100"]);
        let mut pool = spawn_workload("bench_threads", &["4", secs, "1"]);
        let (p_churn, p_pool) = (pid_of(&mut churn), pid_of(&mut pool));
        let _ = output(churn);
        let _ = output(pool);
        let frames = ttop.stop_after(1);
        let about = |pid: u64| {
            frames
                .iter()
                .flat_map(|fr| fr["findings"].as_array().unwrap())
                .filter(|f| f["active"] == true)
                .filter(|f| {
                    f["pids"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|p| u(p) == pid))
                })
                .map(|f| f["kind"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let created: Vec<f64> = rows_of(&frames, p_churn)
            .iter()
            .map(|r| f(&r["threads_created"]) / 0.5)
            .collect();
        eprintln!(
            "churn: creations/s per frame {created:?}; findings {:?}",
            about(p_churn)
        );
        assert!(
            about(p_churn).iter().any(|k| k == "thread_churn"),
            "thread_churn never fired for the churner"
        );
        assert!(
            !about(p_pool).iter().any(|k| k == "thread_churn"),
            "thread_churn fired for the pool: {:?}",
            about(p_pool)
        );
    }
}
