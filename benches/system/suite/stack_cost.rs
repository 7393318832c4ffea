//! Item 2 (issue 19): what keeping futex waiter stacks costs. The mutex storm (one pthread
//! mutex, 4 threads, built -O2 without frame pointers like glibc) runs under ttop's
//! dashboard with its stacks kept (the default) and with `TTOP_USTACKS=off`, alternating
//! round after round: the throughput ratio is the change's whole effect on the storm. The
//! cost per kept stack is measured where it is spent: the BPF side times its walks and
//! copies (`user_frames.kept_ns`), ttop times unwinding, naming and weighing the top
//! words' stacks (`user_frames.named_ns`); both are divided by the walks taken.

use std::collections::BTreeMap;
use std::time::Duration;

use super::procs::{JsonTtop, Workload, kv_f64, median};
use super::{Opts, Row, rate, say};

/// Sum of `user_frames.KEY` over the frames.
fn sum(frames: &[serde_json::Value], key: &str) -> f64 {
    frames
        .iter()
        .map(|f| f["user_frames"][key].as_f64().unwrap_or(0.0))
        .sum()
}

pub fn stack_cost(o: &Opts) -> Vec<Row> {
    say("2: futex waiter stacks, kept vs TTOP_USTACKS=off, alternating");
    let rounds = o.slow_rounds.max(1);
    let mut thr: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let (mut walks, mut copies, mut kept_ns, mut named_ns, mut secs) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for r in 0..rounds {
        for k in 0..2 {
            let c = ["on", "off"][(r + k) % 2];
            let env: &[(&str, &str)] = if c == "off" {
                &[("TTOP_USTACKS", "off")]
            } else {
                &[]
            };
            let t = JsonTtop::spawn_env(&["-d", "1"], env);
            // Probes attached and a first frame out before the storm starts.
            std::thread::sleep(Duration::from_secs(2));
            let w = Workload::spawn(
                "bench_mutex",
                &["4".to_string(), format!("{}", o.slow_secs)],
            );
            let (kv, _) = w.finish(Duration::from_secs_f64(o.slow_secs + 60.0));
            std::thread::sleep(Duration::from_millis(1200));
            let frames = t.stop();
            thr.entry(c).or_default().push(kv_f64(&kv, "rate"));
            if c == "on" {
                walks += sum(&frames, "walks");
                copies += sum(&frames, "copies");
                kept_ns += sum(&frames, "kept_ns");
                named_ns += sum(&frames, "named_ns");
                secs += o.slow_secs;
            }
        }
    }
    let (on, off) = (median(&thr["on"]), median(&thr["off"]));
    let ratio = on / off;
    let per = |ns: f64| {
        if walks > 0.0 {
            format!("{:.1} µs", ns / walks / 1e3)
        } else {
            "no stacks kept".to_string()
        }
    };
    vec![
        Row::new(
            2,
            "stack-storm",
            format!(
                "mutex storm (4 threads, no frame pointers) throughput under the dashboard \
                 with futex waiter stacks kept vs `TTOP_USTACKS=off` (median of {rounds} \
                 alternating runs of {:.0} s)",
                o.slow_secs
            ),
        )
        .ttop(format!("stacks kept: {}", rate(on)))
        .baseline(format!("no stacks: {}", rate(off)))
        .ratio(ratio)
        .target("≥ 0.99 (at most 1 point)", Some(ratio >= 0.99)),
        Row::new(
            2,
            "stack-cost",
            "cost per kept stack under the storm: BPF walk + 8 KB copy, then ttop's \
             unwind + name + weigh, amortised over the walks taken",
        )
        .ttop(format!(
            "{} per kept stack (BPF {} + ttop {}); {:.0} walks/s, {:.0} copies/s",
            per(kept_ns + named_ns),
            per(kept_ns),
            per(named_ns),
            walks / secs.max(1e-9),
            copies / secs.max(1e-9)
        ))
        .baseline(format!(
            "{:.3}% of one CPU in all",
            100.0 * (kept_ns + named_ns) / 1e9 / secs.max(1e-9)
        ))
        .verdict("measured"),
    ]
}
