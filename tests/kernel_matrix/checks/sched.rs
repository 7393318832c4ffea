//! The scheduler's figures: thread creations and exits, the runnable count, and the
//! thread_churn finding built on them.

use std::time::Duration;

use super::super::common::runnable;
use super::super::common::stream::{Stream, f, u};
use super::super::common::watch::pid_of;
use super::super::common::*;
use super::{in_vm, output, rows_of};

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
/// whose whole interval lies inside the sampling; within 8% on the host, 15% under
/// TCG). A run queue changed from another CPU (a load-balancing pull) must be
/// counted when it changes: counted at its own next switch, the host read 5-16% high
/// (3.25-3.54 against 3.06-3.10), and 0-4% once it was. Single frames can still read up
/// to 0.33 above the reads over them; a throwaway program on sched_update_nr_running_tp,
/// integrating every change of rq->nr_running, agreed with ttop within 2% in such
/// frames (2026-11-29), so the reads are what is off there (the reader's own share is
/// known only over the whole window): hence 8%, not 5%.
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
    // The reader's own runnable share is added back (long under QEMU): see
    // common::runnable.
    let pr = runnable::sample(Duration::from_millis(3000));
    let frames = ttop.stop_after(1);
    let _ = w.kill();
    let _ = w.wait();
    let inside = pr.inside(frames);
    let avgs: Vec<f64> = inside
        .iter()
        .map(|fr| f(&fr["runnable"]["true_avg"]))
        .collect();
    let truth = avgs.iter().sum::<f64>() / avgs.len().max(1) as f64;
    let reference = pr.mean_over(&inside);
    eprintln!(
        "true_avg {avgs:?} mean {truth:.2}; procs_running mean {reference:.2} ({} reads, \
         the reader's own runnable share {:.2} included)",
        pr.reads.len(),
        pr.self_runnable
    );
    assert!(avgs.len() >= 2, "{} frames inside the sampling", avgs.len());
    // Under QEMU the reader gets a few hundred turns beside the spinners: enough for a
    // mean good to a few percent.
    assert!(
        pr.reads.len() >= 100,
        "only {} procs_running reads",
        pr.reads.len()
    );
    assert!(
        reference >= 2.5,
        "the spinners were not running ({reference:.2})"
    );
    let tolerance = if in_vm() { 0.15 } else { 0.08 };
    assert_within("true_avg vs procs_running", truth, reference, tolerance);
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
    // Under TCG a churner of 4 threads at a time with 100 µs of work, beside a pool
    // waking 4,000 times a second, made 88-336 threads a second (2026-11-29, two guests
    // side by side), around the finding's 200: a guest in three never showed it. In the
    // guests the churner makes 16 at a time with no work, for longer, and the pool (a
    // control: it creates nothing, however often it wakes) wakes every 10 ms.
    let (secs, batch, work, period) = if in_vm() {
        ("8", "16", "0", "10")
    } else {
        ("3", "4", "100", "1")
    };
    let mut churn = spawn_workload("bench_churn", &[secs, batch, work]);
    let mut pool = spawn_workload("bench_threads", &["4", secs, period]);
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
    let rows = rows_of(&frames, p_churn);
    let created: Vec<f64> = rows
        .iter()
        .map(|r| f(&r["threads_created"]) / 0.5)
        .collect();
    let fired = about(p_churn).iter().any(|k| k == "thread_churn");
    eprintln!(
        "churn: creations/s per frame {created:?}; findings {:?}",
        about(p_churn)
    );
    if !in_vm() {
        assert!(fired, "thread_churn never fired for the churner");
    } else {
        // A guest under TCG, beside another, churned at 74-378 threads a second in one CI
        // run and 236-1,382 in others: around the rule's 200 a second, for reasons of its
        // own speed. There the finding must agree with the rule on the frames ttop
        // measured: it fires if and only if HOLD frames in a row created at least
        // CHURN_CREATED_PER_S a second, at least CHURN_EXIT_SHARE of them exiting.
        use ttop::model::findings::HOLD;
        use ttop::model::findings::rules::{CHURN_CREATED_PER_S, CHURN_EXIT_SHARE};
        // Per frame, over its own interval (what the rule divides by).
        let meets: Vec<bool> = frames
            .iter()
            .filter_map(|fr| {
                let r = fr["procs"]
                    .as_array()?
                    .iter()
                    .find(|r| u(&r["pid"]) == p_churn)?;
                let (c, e) = (f(&r["threads_created"]), f(&r["threads_exited"]));
                let secs = f(&fr["interval_s"]);
                Some(c / secs >= CHURN_CREATED_PER_S && e >= CHURN_EXIT_SHARE * c)
            })
            .collect();
        let held = meets.windows(HOLD).any(|w| w.iter().all(|m| *m));
        eprintln!("the rule held for {HOLD} frames in a row: {held}; the finding fired: {fired}");
        assert!(
            created.iter().filter(|c| **c > 0.0).count() >= 3,
            "the churner's creations were not counted: {created:?}"
        );
        assert_eq!(
            fired, held,
            "thread_churn against its rule on ttop's frames"
        );
    }
    assert!(
        !about(p_pool).iter().any(|k| k == "thread_churn"),
        "thread_churn fired for the pool: {:?}",
        about(p_pool)
    );
}
