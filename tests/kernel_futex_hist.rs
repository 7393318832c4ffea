//! The futex wait histogram of `ttop serve` (`ttop_futex_wait_duration_seconds`) on a
//! workload whose waits sleep a known time: two thousand FUTEX_WAITs that time out after
//! 1.5 ms (they sleep 1.5 to about 2.2 ms here, at real-time priority). Across the run the histogram's count
//! moves with ttop's own count of slept waits (`ttop_futex_waits_total`, every process),
//! its sum with the wait seconds counter (both every process: a process that exits
//! between two scans can leave its last waits out of the counters, not the histogram),
//! and the workload's waits are in the buckets
//! from 1.05 to 4.19 ms (2^20 to 2^22 ns).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::scrape::{metric, serve, settled_scrape};
use common::stream::{first_line, num, rest};
use common::*;

fn value(text: &str, series: &str) -> f64 {
    metric(text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

/// The histogram's cumulative buckets: (le in seconds, count).
fn buckets(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("ttop_futex_wait_duration_seconds_bucket{le=\"")?;
            let (le, v) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, v.split(' ').next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn futex_waits_of_a_known_length_land_in_their_buckets() {
    if !require_root("futex_waits_of_a_known_length") {
        return;
    }
    let _g = kernel_lock();
    let (_serve, port) = serve(&["-d", "0.5"]);
    let a = settled_scrape(port);
    if !a.contains("ttop_futex_wait_duration_seconds_count") {
        // Every kernel CI runs on has the futex probes: a missing histogram there is the
        // feature broken, not a host without it.
        assert!(
            !is_ci(),
            "no ttop_futex_wait_duration_seconds histogram in /metrics: {a}"
        );
        eprintln!("SKIPPED: no futex wait histogram here (no eBPF futex probes)");
        return;
    }
    // Real-time priority: a wait's time runs to its switch-in, so on a loaded machine a
    // CFS waiter's wait would include its run-queue wait, ms at times.
    let mut w = Command::new("chrt")
        .args(["-f", "10"])
        .arg(workload("futexsleep"))
        .args(["2000", "1500"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("chrt (util-linux)");
    let (_, r) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, Duration::from_secs(30)),
        "futexsleep hung"
    );
    let own = rest(r);
    let b = settled_scrape(port);
    let d = |name: &str| value(&b, name) - value(&a, name);
    let count = d("ttop_futex_wait_duration_seconds_count");
    let waits = d("ttop_futex_waits_total");
    let sum = d("ttop_futex_wait_duration_seconds_sum");
    let wait_s = d("ttop_futex_wait_seconds_total");
    let slept = num(&own, "slept");
    let (ba, bb) = (buckets(&a), buckets(&b));
    assert_eq!(ba.len(), bb.len());
    let cum = |v: &[(f64, f64)], le: f64| {
        v.iter()
            .find(|(l, _)| (*l - le).abs() < 1e-12)
            .unwrap_or_else(|| panic!("no bucket le={le}: {v:?}"))
            .1
    };
    let (lo, hi) = ((1u64 << 20) as f64 / 1e9, (1u64 << 22) as f64 / 1e9);
    let in_range = (cum(&bb, hi) - cum(&bb, lo)) - (cum(&ba, hi) - cum(&ba, lo));
    let per_bucket: Vec<String> = bb
        .iter()
        .zip(&ba)
        .scan((0.0, 0.0), |prev, ((le, vb), (_, va))| {
            let n = (vb - prev.0) - (va - prev.1);
            *prev = (*vb, *va);
            Some(format!("{le}:{n}"))
        })
        .filter(|s| !s.ends_with(":0"))
        .collect();
    println!(
        "workload: {slept} waits slept, {:.0}-{:.0} us each; serve: histogram count {count}, \
         slept waits counter {waits}; sum {sum:.4} s, wait seconds counter {wait_s:.4} s; \
         1.05-4.19 ms buckets {in_range}; per bucket (le s: n) {per_bucket:?}",
        num(&own, "min_us"),
        num(&own, "max_us"),
    );
    assert_eq!(slept, 2000.0, "every wait timed out");
    assert_within("histogram count against slept waits", count, waits, 0.02);
    assert_within("histogram sum against wait seconds", sum, wait_s, 0.02);
    // Against the workload's own count, both ways: the histogram is machine-wide, so the
    // scrapes' window holds the workload's waits and whatever else slept on a futex
    // meanwhile, but few other waits last 1.05-4.19 ms (a double count would read 2x).
    assert!(
        in_range >= 0.98 * slept && in_range <= 1.05 * slept + 20.0,
        "{in_range} waits in the 1.05-4.19 ms buckets, the workload slept {slept} there"
    );
    assert!(
        count >= 0.98 * slept,
        "histogram count {count}: the workload alone slept {slept} times"
    );
    // The workload's waits are 1.5 ms each: their sum is a floor for the histogram's.
    let own_s = slept * num(&own, "min_us") / 1e6;
    assert!(
        sum >= 0.98 * own_s,
        "histogram sum {sum:.4} s below the workload's own {own_s:.4} s"
    );
}
