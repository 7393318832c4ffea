//! True runnable threads (time-weighted, under real eBPF) against the kernel's own
//! procs_running read at 1 kHz over the same seconds, and against spinners that know how
//! many they are. Needs root (CI runs as root and never skips).

mod common;

use std::time::Duration;

use common::stream::{f, proc_row};
use common::*;

/// K spinning threads: true runnable is K and the background read before them (within 15%), and
/// agrees with /proc/stat procs_running sampled at 1 kHz over the same seconds: ttop
/// runs first, and only the frames whose whole interval lies inside the sampling are
/// compared (ttop's start-up, its loader threads runnable beside the spinners, is in
/// neither), each read standing for the time around it, the reader's own runnable share
/// added back (as the kernel matrix's runnable check).
#[test]
fn runnable_matches_spinners_and_procs_running() {
    if !require_root("runnable_matches_spinners_and_procs_running") {
        return;
    }
    let _g = kernel_lock();
    let k = 4.0;
    // What else wants a CPU on this machine (0 on an idle one): procs_running before the
    // workload, less the reader itself.
    let mut bg = Vec::new();
    for _ in 0..300 {
        bg.extend(ttop::collect::procfs::scan::procs_running().map(|n| f64::from(n) - 1.0));
        std::thread::sleep(Duration::from_millis(1));
    }
    let background = bg.iter().sum::<f64>() / bg.len().max(1) as f64;
    let ttop = stream::Stream::start(&["--json", "-n", "400", "-d", "0.5"]);
    let mut w = spawn_workload("spin", &["4", "60"]);
    let pid = {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(w.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        parse_kv(&line)["pid"].parse::<u64>().unwrap()
    };
    std::thread::sleep(Duration::from_millis(300));
    let pr = runnable::sample(Duration::from_millis(2500));
    let frames = ttop.stop_after(1);
    stop_running(&mut w, "spin");
    let inside = pr.inside(frames);
    assert!(
        inside.len() >= 2,
        "{} frames inside the sampling",
        inside.len()
    );
    let avgs: Vec<f64> = inside
        .iter()
        .map(|fr| f(&fr["runnable"]["true_avg"]))
        .collect();
    let truth = avgs.iter().sum::<f64>() / avgs.len() as f64;
    let reference = pr.mean_over(&inside);
    eprintln!(
        "true_avg per frame {avgs:?}; mean {truth:.2}; procs_running mean {reference:.2} ({} reads, \
         the reader's own runnable share {:.2} included)",
        pr.reads.len(),
        pr.self_runnable
    );
    eprintln!("background runnable before the workload: {background:.2}");
    assert!(
        pr.reads.len() >= 100,
        "only {} procs_running reads",
        pr.reads.len()
    );
    // The machine-wide figure is K and whatever else wanted a CPU before the workload (0 on
    // CI's idle machine): judged every run, never skipped.
    assert_within(
        "true_avg vs spinners and background",
        truth,
        k + background,
        0.15,
    );
    assert_within("true_avg vs procs_running", truth, reference, 0.15);
    // The workload's own runnable threads, whatever else runs: exactly its 4 spinners.
    // A thread's on-CPU time is the kernel's sum_exec_runtime, which leaves out time
    // stolen from its vCPU (paravirt steal accounting); with a spinner on every vCPU,
    // that is the VM's whole steal in the same frame (README, Costs and limits).
    for fr in &inside {
        let own = f(&proc_row(fr, pid, "spin")["runnable_avg"]);
        let stolen: f64 = fr["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| f(&c["steal"]) / 100.0)
            .sum();
        eprintln!("own runnable_avg {own:.2}, stolen by the host {stolen:.2} CPUs");
        assert_within(
            "the spinners' own runnable_avg + steal",
            own + stolen,
            k,
            0.15,
        );
        let max = f(&fr["runnable"]["true_max"]);
        assert!(max >= k, "true_max {max} below the {k} spinners");
    }
}
