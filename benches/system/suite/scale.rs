//! Item 8: the fastest thread creation this machine does, and whether ttop counts every
//! thread of it or reports what it lost.

use serde_json::Value;

use super::bpfstats::{self, wait_progs};
use super::procs::{JsonTtop, Workload, kv_f64};
use super::{Opts, Row, rate, say, secs};

fn churn_rate(run_secs: f64, batch: u32) -> (f64, f64, u32) {
    let w = Workload::spawn(
        "bench_churn",
        &[
            format!("{run_secs}"),
            batch.to_string(),
            "0".into(),
            "16".into(),
        ],
    );
    let pid = w.pid;
    let (kv, _) = w.finish(secs(run_secs + 60.0));
    (kv_f64(&kv, "rate"), kv_f64(&kv, "created"), pid)
}

/// Item 8: the fastest thread creation this machine does, counted by ttop.
pub fn scale(o: &Opts) -> Vec<Row> {
    say("8: scale: the highest thread-creation rate, counted by ttop");
    let trial = if o.quick { 0.5 } else { 2.0 };
    let mut best = (0.0, 64u32);
    let batches: &[u32] = if o.quick {
        &[1024]
    } else {
        &[16, 64, 256, 1024]
    };
    for &b in batches {
        let (r, _, _) = churn_rate(trial, b);
        if r > best.0 {
            best = (r, b);
        }
    }
    let batch = best.1;
    let (base_rate, _, _) = churn_rate(o.scale_secs, batch);
    let ttop = JsonTtop::spawn(&["-d", "1"]);
    let ids = wait_progs(ttop.pid(), secs(20.0));
    std::thread::sleep(secs(1.5));
    let a = bpfstats::snapshot(&ids);
    let (with_rate, created, pid) = churn_rate(o.scale_secs, batch);
    std::thread::sleep(secs(2.5)); // at least one full interval after the last exit
    let b = bpfstats::snapshot(&ids);
    let frames = ttop.stop();
    let misses: u64 = bpfstats::diff(&a, &b)
        .iter()
        .map(|p| p.recursion_misses)
        .sum();
    let rows_for: Vec<&Value> = frames
        .iter()
        .flat_map(|f| f["procs"].as_array().into_iter().flatten())
        .filter(|p| p["pid"].as_u64() == Some(u64::from(pid)))
        .collect();
    let sum = |k: &str| {
        rows_for
            .iter()
            .map(|r| r[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let (seen_created, seen_exited, ghosts) = (
        sum("threads_created"),
        sum("threads_exited"),
        sum("ghost_threads"),
    );
    let drops: u64 = frames
        .iter()
        .map(|f| f["drops"].as_u64().unwrap_or(0))
        .sum();
    // threads_created also counts the process's own birth (its task_newtask).
    let want = created as u64 + 1;
    let missing_c = want.abs_diff(seen_created);
    let missing_e = want.abs_diff(seen_exited);
    let accounted = missing_c.max(missing_e) <= drops + misses;
    let target = 100_000.0;
    vec![
        Row::new(
            8,
            "scale-rate",
            format!(
                "thread creations per second, the most this machine does (batches of {batch}, \
                 no work, 16 KB stacks; {:.0} s runs), without and with `ttop --json -d 1`",
                o.scale_secs
            ),
        )
        .ttop(rate(with_rate))
        .baseline(format!("no monitor: {}", rate(base_rate)))
        .ratio(with_rate / base_rate)
        .target("100k/s, or the machine's most", Some(base_rate >= target))
        .verdict(if base_rate >= target {
            "met".to_string()
        } else {
            format!("machine max {}", rate(base_rate))
        }),
        Row::new(
            8,
            "scale-count",
            "at that rate: threads ttop counted (created / exited / ghosts) vs the workload's \
             own count, and events reported lost (map drops + BPF recursion misses)",
        )
        .ttop(format!(
            "{seen_created} / {seen_exited} / {ghosts}; lost and reported: {drops} drops, \
             {misses} misses"
        ))
        .baseline(format!("workload: {want} (threads + its own process)"))
        .ratio(seen_created as f64 / want as f64)
        .target("every event counted or reported lost", Some(accounted)),
    ]
}
