//! The scan side is top's view: procps `top -H -b` (four of them, at -d 0.5) and
//! `ttop --json -d 1` run side by side over the same seconds, on seed 000's experiment (creator threads that each create
//! a thread, let it do one unit of work and join it) and on two controls that top counts
//! right (a thread pool doing the same work, and spinners).
//!
//! top's count is one reading a second of a fast-moving state, so no two scans agree
//! second by second, top's own included; the comparison is of the medians over the
//! seconds the workload ran: on the controls within 10% or one thread (top counts itself
//! running), on the churn within a factor of 2 either way, over 24 s. The churn's median
//! needs that long: over 7 of ttop's frames (8 s) it moved by up to 37% between
//! consecutive stretches of one run. Over 21 frames ttop's median was 0.88-1.33x of top's
//! in the runs by hand, 0.62x in one CI run (5 against 8 of 117 frames) and 1.50x in a
//! fresh-clone run (12 against 8 of 115): ttop's paced scan is a model of top's timing,
//! not top itself. An unpaced scan, or the true count, is 15x.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::Value;

/// How long each control runs, and the part of it compared (after its threads started,
/// before it winds down).
const RUN_S: f64 = 10.0;
/// The churn's running count swings from one second to the next (5-40, now and then
/// over 100 where a scan saw the process at once): about 20 of ttop's frames make a
/// median that one wild second does not move far.
const CHURN_S: f64 = 24.0;
const SETTLE_S: f64 = 1.5;
const TAIL_S: f64 = 0.5;

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One procps top frame: its wall clock (whole seconds, from the "top - HH:MM:SS" line)
/// and the "Threads: N total, R running" figures.
#[derive(Debug)]
struct TopFrame {
    t: f64,
    total: f64,
    running: f64,
}

/// Split `top -b` output into frames: each frame's wall clock (whole seconds, from the
/// "top - HH:MM:SS" line) and its other lines. The clock is today's local time of day,
/// so it is placed on the day of `near` (a wall time within the run).
fn top_frames(out: &str, near: f64) -> Vec<(f64, Vec<&str>)> {
    // Local time of day of `near`, to turn HH:MM:SS into a Unix time.
    let out_date = Command::new("date")
        .args(["-d", &format!("@{}", near as i64), "+%H %M %S"])
        .output()
        .unwrap();
    let hms: Vec<f64> = String::from_utf8_lossy(&out_date.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let day_start = near.floor() - (hms[0] * 3600.0 + hms[1] * 60.0 + hms[2]);
    let mut frames: Vec<(f64, Vec<&str>)> = Vec::new();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("top - ") {
            let hms: Vec<f64> = rest
                .split_whitespace()
                .next()
                .unwrap()
                .split(':')
                .map(|x| x.parse().unwrap())
                .collect();
            frames.push((
                day_start + hms[0] * 3600.0 + hms[1] * 60.0 + hms[2],
                Vec::new(),
            ));
        } else if let Some((_, lines)) = frames.last_mut() {
            lines.push(line);
        }
    }
    frames
}

/// Parse `top -H -b` output: each frame's "Threads: N total, R running" figures.
fn parse_top(out: &str, near: f64) -> Vec<TopFrame> {
    let mut frames = Vec::new();
    for (t, lines) in top_frames(out, near) {
        for rest in lines.iter().filter_map(|l| l.strip_prefix("Threads:")) {
            let n: Vec<f64> = rest
                .split(',')
                .map(|p| p.split_whitespace().next().unwrap().parse().unwrap())
                .collect();
            frames.push(TopFrame {
                t,
                total: n[0],
                running: n[1],
            });
        }
    }
    frames
}

/// Sample /proc/stat procs_running at 1 kHz on a SCHED_FIFO thread (so the saturated
/// machine cannot bias when it samples) until `stop`; each reading less the reader.
fn sample_procs_running(until: Instant) -> std::thread::JoinHandle<Vec<(f64, f64)>> {
    std::thread::spawn(move || {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: this thread only, with a valid parameter.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        let mut out = Vec::new();
        while Instant::now() < until {
            if let Some(n) = ttop::collect::procfs::scan::procs_running() {
                out.push((wall_now(), f64::from(n) - 1.0));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        out
    })
}

struct Run {
    /// top's frames, and ttop's, taken while the workload ran in full.
    top: Vec<TopFrame>,
    ttop: Vec<Value>,
    /// procs_running readings over the same window (wall time, runnable).
    procs_running: Vec<(f64, f64)>,
}

/// Run `creators ARGS` (or `spin`) for RUN_S seconds with ttop (already loaded) and
/// `tops` tops beside it, and keep what each saw while the workload ran in full.
fn side_by_side(workload: &str, args: &[&str], secs: f64, tops: usize) -> Run {
    let n = (secs + 4.0).to_string();
    let ttop = ttop_spawn(&["--json", "-d", "1", "-n", &n]);
    // eBPF loads in under a second; the first frame comes one interval later.
    std::thread::sleep(Duration::from_millis(1500));
    let start = wall_now();
    let mut w = spawn_workload(workload, args);
    // On the churn, four tops at half-second delays: a starved top gets one frame out
    // every 3-5 s, and its count is bimodal (now and then its scan fits in one slice and
    // sees most threads), so a median needs several frames. On the controls one: each
    // top counts itself running, and three more tops would be three more running.
    let frames = ((2.0 * secs) as u32).to_string();
    let tops: Vec<_> = (0..tops)
        .map(|_| {
            drained(
                Command::new("top")
                    .args(["-H", "-b", "-d", "0.5", "-n", &frames, "-w", "200"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("run top (apt-get install procps)"),
            )
        })
        .collect();
    let pr = sample_procs_running(Instant::now() + Duration::from_secs_f64(secs));
    assert!(wait_timeout(&mut w, Duration::from_secs(30)), "workload");
    let end = wall_now();
    // What came after the window is not compared: stop the tops now.
    for t in &tops {
        // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
        unsafe { libc::kill(t.0 as i32, libc::SIGTERM) };
    }
    let top_out: String = tops.into_iter().map(|t| t.1.join().unwrap()).collect();
    let frames = ttop.frames(Duration::from_secs(30));
    let (lo, hi) = (start + SETTLE_S, end - TAIL_S);
    let top = parse_top(&top_out, start)
        .into_iter()
        .filter(|f| f.t >= lo.floor() && f.t + 1.0 <= hi.ceil())
        .collect();
    // A ttop frame covers the second before its `t`.
    let ttop: Vec<Value> = frames
        .into_iter()
        .filter(|f| {
            let t = f["t"].as_f64().unwrap();
            t - 1.0 >= lo && t <= hi
        })
        .collect();
    let (t0, t1) = match (ttop.first(), ttop.last()) {
        (Some(a), Some(b)) => (a["t"].as_f64().unwrap() - 1.0, b["t"].as_f64().unwrap()),
        _ => (lo, hi),
    };
    let procs_running = pr
        .join()
        .unwrap()
        .into_iter()
        .filter(|(t, _)| *t >= t0 && *t <= t1)
        .collect();
    Run {
        top,
        ttop,
        procs_running,
    }
}

/// Read `child`'s stdout as it comes, to its end. A top -H frame of the churn is 25-35
/// KB: read only at the end, two frames filled the pipe and every top then sat blocked
/// in write(), so "top's" frames were its first two, and top did not run meanwhile.
fn drained(mut child: std::process::Child) -> (u32, std::thread::JoinHandle<String>) {
    let mut out = child.stdout.take().unwrap();
    let pid = child.id();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut s).unwrap();
        child.wait().unwrap();
        String::from_utf8_lossy(&s).into_owned()
    });
    (pid, reader)
}

fn running(frames: &[Value], key: &str) -> Vec<f64> {
    frames
        .iter()
        .map(|f| f["runnable"][key].as_f64().unwrap_or(f64::NAN))
        .collect()
}

/// The medians of top's and ttop's running counts agree within `rel` of top's or `abs`
/// threads.
/// How near ttop's median must be to top's.
enum Band {
    /// Within `rel` of top's median, or `abs` threads.
    Within { rel: f64, abs: f64 },
    /// Within a factor either way: for the churn, whose two medians (of ~20 and ~115
    /// frames of a heavy-tailed count) differ by a ratio, on noise, in either direction.
    Factor(f64),
}

fn assert_like_top(what: &str, r: &Run, band: Band) -> (f64, f64) {
    let top: Vec<f64> = r.top.iter().map(|f| f.running).collect();
    let ours = running(&r.ttop, "scan_running");
    let truth = running(&r.ttop, "true_avg");
    let views: Vec<&Value> = r.ttop.iter().map(|f| &f["runnable"]["top_view"]).collect();
    eprintln!("{what}: top -H running {top:?} (of {:?} threads)", {
        r.top.iter().map(|f| f.total).collect::<Vec<_>>()
    });
    eprintln!("{what}: ttop scan_running {ours:?}, true_avg {truth:.1?}");
    for v in &views {
        eprintln!("{what}: top_view {v}");
    }
    // Four tops on the churn write a frame each every 0.7-0.9 s (about 25 a top in its
    // window); a control's one top, 12-18. Far fewer means top was held up (a pipe
    // nobody read once held every top after its second frame).
    let want = if what == "churn" { 40 } else { 8 };
    assert!(
        top.len() >= want,
        "{what}: only {} top frames in the window",
        top.len()
    );
    assert!(ours.len() >= 3, "{what}: only {} ttop frames", ours.len());
    let (mt, mo) = (median(&top), median(&ours));
    eprintln!(
        "{what}: medians: top -H {mt} of {} frames, ttop {mo} of {} ({:.2}x)",
        top.len(),
        ours.len(),
        mo / mt
    );
    match band {
        Band::Within { rel, abs } => {
            let tol = (rel * mt).max(abs);
            assert!(
                (mo - mt).abs() <= tol,
                "{what}: ttop's top view (median {mo}) is not top's (median {mt}) within {tol}"
            );
        }
        Band::Factor(k) => assert!(
            mt > 0.0 && mo >= mt / k && mo <= mt * k,
            "{what}: ttop's top view (median {mo}) is not within {k}x of top's (median {mt})"
        ),
    }
    (mt, mo)
}

fn undercounts(frames: &[Value]) -> usize {
    frames
        .iter()
        .filter(|f| !f["runnable"]["undercount"].is_null())
        .count()
}

/// Seed 000's experiment 4: 120 creators, each creating a thread that spins 1 ms and
/// joining it. top -H shows a fraction of the ~120 runnable threads, and so does ttop's
/// top view, which says why; true_avg follows the kernel's own procs_running.
#[test]
fn top_view_undercounts_churn_as_top_does() {
    if !require_root("top_view_undercounts_churn_as_top_does") {
        return;
    }
    let _g = kernel_lock();
    let secs = CHURN_S.to_string();
    let r = side_by_side("creators", &["120", &secs, "1000", "0"], CHURN_S, 4);
    let (top_med, ours_med) = assert_like_top("churn", &r, Band::Factor(2.0));
    let truth = median(&running(&r.ttop, "true_avg"));
    assert!(truth > 80.0, "churn: true_avg median {truth} (120 pairs)");
    // top undercounts here, and so the line fires on most of ttop's frames.
    assert!(
        top_med < truth / 1.5,
        "churn: top itself saw {top_med} of {truth:.0}: the experiment did not reproduce"
    );
    let fired = undercounts(&r.ttop);
    assert!(
        fired * 2 > r.ttop.len(),
        "churn: the undercount line fired on {fired} of {} frames (top view median {ours_med})",
        r.ttop.len()
    );
    // Every frame that undercounts explains it: some of the causes are not zero.
    for f in r
        .ttop
        .iter()
        .filter(|f| !f["runnable"]["undercount"].is_null())
    {
        let v = &f["runnable"]["top_view"];
        let causes = ["skipped_running", "unlisted_running", "vanished"]
            .iter()
            .map(|k| v[k].as_f64().unwrap())
            .sum::<f64>()
            + v["ghosts"].as_f64().unwrap();
        assert!(
            causes > 0.0,
            "churn: an undercount with no cause found: {v}"
        );
    }
    // The finding (held 3 intervals) names it with the same split.
    let found: Vec<&Value> = r
        .ttop
        .iter()
        .flat_map(|f| f["findings"].as_array().unwrap())
        .filter(|f| f["kind"] == "scan_undercount" && f["active"] == true)
        .collect();
    assert!(!found.is_empty(), "churn: no scan_undercount finding");
    for f in &found {
        let fig = &f["figures"];
        for k in [
            "unlisted_running",
            "skipped_running",
            "vanished",
            "true_avg",
        ] {
            assert!(fig[k].is_number(), "churn: finding without {k}: {f}");
        }
        assert!(
            f["summary"]
                .as_str()
                .unwrap()
                .contains("born after top listed"),
            "churn: {f}"
        );
    }
    // The truth, against the kernel's own instantaneous count sampled at 1 kHz.
    let pr: Vec<f64> = r.procs_running.iter().map(|p| p.1).collect();
    let reference = pr.iter().sum::<f64>() / pr.len().max(1) as f64;
    let ours = running(&r.ttop, "true_avg");
    let mean = ours.iter().sum::<f64>() / ours.len() as f64;
    eprintln!(
        "churn: true_avg mean {mean:.2}, procs_running mean {reference:.2} ({} reads)",
        pr.len()
    );
    assert!(pr.len() > 1000, "churn: {} procs_running reads", pr.len());
    assert_within("churn: true_avg vs procs_running", mean, reference, 0.05);
}

/// The controls: a pool of 40 threads doing the same units of work (always runnable, no
/// thread ever ends) and 8 spinners. top counts them right; so does the top view, and
/// no undercount is reported.
#[test]
fn top_view_matches_top_where_top_is_right() {
    if !require_root("top_view_matches_top_where_top_is_right") {
        return;
    }
    let _g = kernel_lock();
    let secs = RUN_S.to_string();
    for (what, workload, args, k) in [
        ("pool", "creators", vec!["40", &secs, "1000", "1"], 40.0),
        ("spinners", "spin", vec!["8", &secs], 8.0),
    ] {
        let r = side_by_side(workload, &args, RUN_S, 1);
        let (top_med, ours_med) = assert_like_top(what, &r, Band::Within { rel: 0.1, abs: 1.0 });
        // Machine-wide counts: at least the workload's K (more when something else runs,
        // as the other engineers' compilers did beside these tests).
        assert!(
            top_med >= 0.75 * k,
            "{what}: top itself saw {top_med} of {k}"
        );
        assert!(
            ours_med >= 0.75 * k,
            "{what}: ttop's top view saw {ours_med} of {k}"
        );
        let found = r
            .ttop
            .iter()
            .flat_map(|f| f["findings"].as_array().unwrap())
            .filter(|f| f["kind"] == "scan_undercount")
            .count();
        assert_eq!(
            found, 0,
            "{what}: a scan_undercount finding where top is right"
        );
        let fired = undercounts(&r.ttop);
        assert!(
            fired <= 1,
            "{what}: an undercount fired on {fired} of {} frames where top is right",
            r.ttop.len()
        );
    }
}

/// The task rows of one `top -b` frame as (PID, %CPU), from top's default columns (PID
/// USER PR NI VIRT RES SHR S %CPU %MEM TIME+ COMMAND); in -H mode PID is the thread's.
fn top_rows(lines: &[&str]) -> Vec<(u32, f64)> {
    lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 12 {
                return None;
            }
            Some((f[0].parse().ok()?, f[8].parse().ok()?))
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Threads that live 0.7 s each (three creators, each making one and joining it, over
/// and over; each spins its whole life): most are seen by one scan and end before the
/// next, three in ten by none. The process's own counter in /proc/PID/stat holds its
/// exited threads' CPU, so a per-process scan (procps `top -b`) sees it all, and ttop's
/// SCAN% is that figure; the threads' own counters (/proc/PID/task/TID/stat) lose each
/// thread's last stretch and the ghosts whole, and `scan_miss` is what they lose, counted
/// once. Checked against real top side by side over the same seconds: `top -b -p` for the
/// process, and three `top -H -b -p` for its threads. (procps 4 shows the process's whole
/// counter on the main thread's row in -H mode: the main thread here only sleeps in
/// pthread_join, so the threads' view is the sum of the other rows.)
#[test]
fn scan_cpu_and_miss_match_top_per_process_and_per_thread() {
    if !require_root("scan_cpu_and_miss_match_top_per_process_and_per_thread") {
        return;
    }
    let _g = kernel_lock();
    let secs = 14.0;
    let n = (secs + 4.0).to_string();
    let ttop = ttop_spawn(&["--json", "-d", "1", "-n", &n]);
    std::thread::sleep(Duration::from_millis(1500));
    let start = wall_now();
    let mut w = spawn_workload("creators", &["3", &secs.to_string(), "700000", "0"]);
    let pid = common::watch::pid_of(&mut w) as u32;
    let count = (secs as u32 + 2).to_string();
    let top = |threads: bool| {
        let mut a = vec!["-b", "-d", "1", "-n", &count, "-w", "512", "-p"];
        let p = pid.to_string();
        a.push(&p);
        if threads {
            a.insert(0, "-H");
        }
        drained(
            Command::new("top")
                .args(&a)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("run top (apt-get install procps)"),
        )
    };
    let procs_top = top(false);
    // A third of a second apart, so the three read the threads at different points of
    // their lives (started together, they read the same instants).
    let thread_tops: Vec<_> = (0..3)
        .map(|i| {
            std::thread::sleep(Duration::from_millis(if i > 0 { 333 } else { 0 }));
            top(true)
        })
        .collect();
    assert!(wait_timeout(&mut w, Duration::from_secs(40)), "workload");
    let end = wall_now();
    let text = |c: (u32, std::thread::JoinHandle<String>)| c.1.join().unwrap();
    let procs_out = text(procs_top);
    let threads_out: Vec<String> = thread_tops.into_iter().map(text).collect();
    let frames = ttop.frames(Duration::from_secs(30));
    let (lo, hi) = (start + SETTLE_S, end - TAIL_S);
    let in_window = |t: f64| t >= lo.floor() && t + 1.0 <= hi.ceil();

    // top: the process's %CPU, and the sum of its threads' rows (the main thread's row,
    // which procps fills from the process's own counter, apart).
    let mut top_proc = Vec::new();
    for (t, lines) in top_frames(&procs_out, start) {
        if in_window(t) {
            let rows = top_rows(&lines);
            top_proc.extend(rows.iter().filter(|r| r.0 == pid).map(|r| r.1));
        }
    }
    let (mut top_threads, mut top_main) = (Vec::new(), Vec::new());
    for out in &threads_out {
        for (t, lines) in top_frames(out, start) {
            let rows = top_rows(&lines);
            if !in_window(t) || rows.is_empty() {
                continue;
            }
            top_threads.push(rows.iter().filter(|r| r.0 != pid).map(|r| r.1).sum());
            top_main.extend(rows.iter().filter(|r| r.0 == pid).map(|r| r.1));
        }
    }

    // ttop: the process's row in each frame of the window; its first frame apart.
    let rows: Vec<(f64, &Value)> = frames
        .iter()
        .filter_map(|f| {
            let p = f["procs"].as_array()?.iter().find(|p| p["pid"] == pid)?;
            Some((f["t"].as_f64().unwrap(), p))
        })
        .collect();
    let (_, first) = rows.first().expect("ttop never listed the workload");
    for k in ["cpu_pct_scan", "cpu_pct_scan_threads", "scan_miss"] {
        assert!(
            first[k].is_null(),
            "its first interval has no earlier read, so {k} is not measured: {first}"
        );
    }
    let kept: Vec<&Value> = rows
        .iter()
        .filter(|(t, _)| t - 1.0 >= lo && *t <= hi)
        .map(|(_, p)| *p)
        .collect();
    let col = |k: &str| -> Vec<f64> { kept.iter().map(|p| p[k].as_f64().unwrap()).collect() };
    let (scan, threads, truth, miss) = (
        col("cpu_pct_scan"),
        col("cpu_pct_scan_threads"),
        col("cpu_pct_true"),
        col("scan_miss"),
    );
    eprintln!("top -b {pid}: {top_proc:?}");
    eprintln!("top -H threads but main: {top_threads:?}; main row {top_main:?}");
    eprintln!("ttop scan {scan:.1?}\nttop threads {threads:.1?}\nttop true {truth:.1?}");
    eprintln!("ttop scan_miss {miss:.1?}");
    // What the old rule (TRUE% - SCAN% plus the ghosts' CPU) would have said, for the log.
    let ghost = col("ghost_cpu_ms");
    let old: Vec<f64> = (0..kept.len())
        .map(|i| (truth[i] - scan[i]).max(0.0) + ghost[i] / 10.0)
        .collect();
    eprintln!("the old rule's miss {old:.1?} (mean {:.1})", mean(&old));
    assert!(top_proc.len() >= 6, "{} top -b frames", top_proc.len());
    assert!(
        top_threads.len() >= 18,
        "{} top -H frames",
        top_threads.len()
    );
    assert!(kept.len() >= 6, "{} ttop frames", kept.len());
    for p in &kept {
        let v = |k: &str| p[k].as_f64().unwrap();
        let (t, th, m) = (v("cpu_pct_true"), v("cpu_pct_scan_threads"), v("scan_miss"));
        assert!(
            (m - (t - th).max(0.0)).abs() < 1e-6,
            "scan_miss is TRUE% less the threads' own: {p}"
        );
    }
    let (top_p, top_t) = (mean(&top_proc), mean(&top_threads));
    // The per-process view: one steady load read at different seconds by each scan, in
    // ticks of 1%; 15% covers that.
    assert_within("SCAN% vs top -b's %CPU", mean(&scan), top_p, 0.15);
    // ...misses none of it: the exited threads' CPU is in the process's counter.
    assert_within("TRUE% vs SCAN%", mean(&truth), mean(&scan), 0.10);
    // The per-thread view: how much of each 0.7 s thread a scan counts depends on where
    // the scans fall in its life (none for three in ten), so two scans at different
    // phases agree over ~60 threads to about 14% (one standard deviation of the
    // difference, from the spread of a thread's counted share): 30% is two of those.
    assert!(
        top_t < 0.7 * top_p,
        "the experiment did not reproduce: top -H's threads add up to {top_t:.0} of {top_p:.0}"
    );
    assert_within(
        "threads' SCAN% vs top -H's rows",
        mean(&threads),
        top_t,
        0.30,
    );
    // What the per-thread view misses, against what top -H's rows miss of the truth.
    // Adding the ghosts' CPU to TRUE% - SCAN% (the per-process view's miss) gave about
    // half of this: the bug this test was written for.
    assert_within(
        "scan_miss vs TRUE% less top -H's rows",
        mean(&miss),
        mean(&truth) - top_t,
        0.30,
    );
}
