//! htop's everyday columns (USER, PR/NI, TIME+, START, context switches and major faults
//! per second) for a child this test starts as nobody at nice 5, which sleeps, burns CPU
//! and takes major faults at a known pace: compared with what the kernel says of it in
//! /proc (read by the test around ttop's run) and with procps top.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;

/// (utime+stime in seconds, majflt) from /proc/PID/stat.
fn stat_of(pid: u32) -> (f64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = text[text.rfind(')').unwrap() + 2..].split(' ').collect();
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let num = |i: usize| f[i].parse::<u64>().unwrap();
    ((num(11) + num(12)) as f64 / tck, num(9))
}

/// voluntary_ctxt_switches of /proc/PID/status.
fn voluntary(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// procps top's USER, NI and TIME+ (as seconds) of `pid`.
fn top_of(pid: u32) -> Option<(String, i32, f64)> {
    let out = Command::new("top")
        .args(["-b", "-n", "1", "-p", &pid.to_string()])
        .env("COLUMNS", "200")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"));
    let head: Vec<&str> = lines.next()?.split_whitespace().collect();
    let row: Vec<&str> = lines.next()?.split_whitespace().collect();
    let col = |name: &str| row.get(head.iter().position(|h| *h == name)?).copied();
    let (m, s) = col("TIME+")?.split_once(':')?;
    let time = m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?;
    Some((col("USER")?.to_string(), col("NI")?.parse().ok()?, time))
}

#[test]
fn everyday_columns_read_what_the_kernel_and_top_say() {
    if !require_root("everyday_columns_read_what_the_kernel_and_top_say") {
        return;
    }
    let _g = kernel_lock();
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("everyday.data");
    std::fs::write(&file, vec![7u8; 1 << 16]).unwrap();
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut child = Command::new("nice")
        .args([
            "-n",
            "5",
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(workload("everyday"))
        .args(["8", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("nice and setpriv (util-linux)");
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let (cpu0, maj0) = stat_of(pid);
    let vol0 = voluntary(pid);
    let t0 = Instant::now();
    let frames = ttop_json(&[
        "--json",
        "--no-bpf",
        "-p",
        &pid.to_string(),
        "-n",
        "3",
        "-d",
        "1",
    ]);
    let secs = t0.elapsed().as_secs_f64();
    let (cpu1, maj1) = stat_of(pid);
    let vol1 = voluntary(pid);
    let top = top_of(pid);
    // The kernel again once top has answered: top reads the child some time after cpu1
    // (its start-up; seen 0.03 s of the child's CPU later on CI), never after this.
    let (cpu2, _) = stat_of(pid);
    let row = |f: &serde_json::Value| {
        f["procs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == pid)
            .cloned()
            .unwrap_or_else(|| panic!("pid {pid} not in {f}"))
    };
    let (first, last) = (row(&frames[0]), row(&frames[frames.len() - 1]));
    eprintln!("first {first}\nlast {last}\ntop {top:?}");
    assert_eq!(last["user"], "nobody");
    assert_eq!(last["uid"], 65534);
    assert_eq!(last["nice"], 5);
    assert_eq!(last["priority"], 25);
    // A rate is measured where SCAN% is (both need an earlier scan of the process; the
    // first frame already has one: ttop prints after its first interval).
    for k in [
        "ctx_switches_voluntary_per_s",
        "ctx_switches_involuntary_per_s",
        "majflt_per_s",
    ] {
        assert_eq!(
            first[k].is_null(),
            first["cpu_pct_scan"].is_null(),
            "{k}: {first}"
        );
        assert!(last[k].is_number(), "{k}: {last}");
    }
    // TIME+ at the last scan lies between the kernel's readings before and after ttop.
    let cpu = last["cpu_time_s"].as_f64().unwrap();
    assert!(
        cpu0 - 0.011 <= cpu && cpu <= cpu1 + 0.011,
        "{cpu0} <= {cpu} <= {cpu1}"
    );
    assert!(cpu1 > cpu0, "the child burned no CPU");
    let start = last["start_time"].as_f64().unwrap();
    assert!(
        (start - started).abs() < 2.0,
        "start {start} spawned {started}"
    );
    // The rates against the kernel's counts. A rate's pace changes from second to second
    // (a round sleeps two or three times: nanosleep, the read's wait, and at times the
    // page cache drop's wait for other CPUs), so ttop's frames are added up into the
    // count over its own scans (rate x interval_s: its first scan to its last), which the
    // test's reads before and after ttop enclose: never more than the kernel's count, and
    // its average rate that of the kernel's whole window (the scans cover all of it but
    // ttop's start and exit).
    let sum = |k: &str| -> (f64, f64) {
        frames.iter().fold((0.0, 0.0), |(n, s), f| {
            let dt = f["interval_s"].as_f64().unwrap();
            (n + row(f)[k].as_f64().unwrap() * dt, s + dt)
        })
    };
    let (vol_n, scanned) = sum("ctx_switches_voluntary_per_s");
    let (maj_n, _) = sum("majflt_per_s");
    let (vol_k, maj_k) = ((vol1 - vol0) as f64, (maj1 - maj0) as f64);
    eprintln!(
        "voluntary {vol_n:.1} (kernel {vol_k}), majflt {maj_n:.1} (kernel {maj_k}) \
         over {scanned:.3} s of scans in {secs:.3} s"
    );
    assert!(vol_k / secs > 30.0, "the child slept {vol_k} times");
    assert!(
        maj_k / secs > 20.0,
        "the child's reads took {maj_k} major faults"
    );
    assert!(vol_n <= vol_k + 0.5, "voluntary {vol_n} > kernel {vol_k}");
    assert!(maj_n <= maj_k + 0.5, "majflt {maj_n} > kernel {maj_k}");
    assert!(scanned > 0.8 * secs, "scans {scanned} s of {secs} s");
    assert_within("voluntary switches/s", vol_n / scanned, vol_k / secs, 0.12);
    assert_within("major faults/s", maj_n / scanned, maj_k / secs, 0.12);
    // procps top, read just after: the same user and nice, and TIME+ between ttop's
    // reading and the kernel's once top had answered (and top's hundredths).
    if let Some((user, ni, time)) = top {
        assert_eq!((user.as_str(), ni), ("nobody", 5));
        assert!(
            time >= cpu - 0.011 && time <= cpu2 + 0.011,
            "top {time} ttop {cpu} kernel {cpu1} then {cpu2}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(t0.elapsed() < Duration::from_secs(20));
}

/// The nice of every thread of process `pid` (field 19 of each task's stat).
fn nices(pid: u32) -> Vec<i64> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
        .map(|s| {
            let after = &s[s.rfind(')').unwrap() + 2..];
            after.split(' ').nth(16).unwrap().parse().unwrap()
        })
        .collect()
}

/// ttop watching the machine lowers its nice to -10 (every thread: the collector, the
/// writer), so the load it watches does not starve it; a nice the user chose is kept.
#[test]
fn ttop_runs_at_nice_minus_10_unless_started_niced() {
    if !require_root("ttop_runs_at_nice_minus_10_unless_started_niced") {
        return;
    }
    let run = |nice: &str| {
        let mut tt = Command::new("nice")
            .args(["-n", nice])
            .arg(ttop_bin())
            .args(["--json", "--no-bpf", "-d", "1", "-n", "3"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // After the first frame every thread has started.
        let mut line = String::new();
        BufReader::new(tt.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let n = nices(tt.id());
        tt.kill().unwrap();
        tt.wait().unwrap();
        n
    };
    let at0 = run("0");
    assert!(at0.len() >= 2, "{at0:?}");
    assert!(at0.iter().all(|&n| n == -10), "started at 0: {at0:?}");
    let at5 = run("5");
    assert!(at5.iter().all(|&n| n == 5), "started at 5: {at5:?}");
}
