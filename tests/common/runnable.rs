//! /proc/stat procs_running read at about 1 kHz beside a ttop --json run, and ttop's
//! time-weighted runnable count compared with it over the same seconds (the runnable
//! checks of kernel_runnable.rs and of the kernel matrix).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::stream::f;

/// procs_running over one stretch: each read's (wall time, value less the reader itself)
/// and the stretch's ends (Unix seconds).
pub struct ProcsRunning {
    pub reads: Vec<(f64, f64)>,
    pub start: f64,
    pub end: f64,
    /// The reader's own runnable share over the stretch (its schedstat): it is running
    /// at each read (taken off every read) and runnable for a while between reads, which
    /// ttop rightly counts, so it is added back to the mean.
    pub self_runnable: f64,
}

fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn own_ns() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let v: Vec<f64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    v[0] + v[1]
}

/// Read procs_running every millisecond for `dur`, on this thread.
pub fn sample(dur: Duration) -> ProcsRunning {
    let (t0, start, own0) = (Instant::now(), wall(), own_ns());
    let mut reads = Vec::new();
    while t0.elapsed() < dur {
        if let Some(n) = ttop::collect::procfs::scan::procs_running() {
            reads.push((wall(), f64::from(n) - 1.0));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = wall();
    let self_runnable = (own_ns() - own0) / 1e9 / (end - start);
    ProcsRunning {
        reads,
        start,
        end,
        self_runnable,
    }
}

impl ProcsRunning {
    /// The frames whose whole interval lies inside the stretch.
    pub fn inside(&self, frames: Vec<Value>) -> Vec<Value> {
        frames
            .into_iter()
            .filter(|fr| {
                f(&fr["t"]) - f(&fr["interval_s"]) >= self.start && f(&fr["t"]) <= self.end
            })
            .collect()
    }

    /// The mean over those frames' own span, each read standing for the time around it
    /// (read for read, the mean would lean towards quiet moments: when more threads want
    /// the CPUs, the reader gets fewer turns), the reader's own share added back.
    pub fn mean_over(&self, inside: &[Value]) -> f64 {
        let span = (
            inside
                .iter()
                .map(|fr| f(&fr["t"]) - f(&fr["interval_s"]))
                .fold(f64::MAX, f64::min),
            inside.iter().map(|fr| f(&fr["t"])).fold(0.0, f64::max),
        );
        time_weighted(&self.reads, span) + self.self_runnable
    }
}

/// The mean of a sampled value over [a, b], each (time, value) read standing for the
/// time half-way to its neighbours.
fn time_weighted(reads: &[(f64, f64)], (a, b): (f64, f64)) -> f64 {
    let (mut area, mut total) = (0.0, 0.0);
    for (i, &(t, v)) in reads.iter().enumerate() {
        let lo = if i == 0 {
            t
        } else {
            (reads[i - 1].0 + t) / 2.0
        };
        let hi = reads.get(i + 1).map_or(t, |n| (t + n.0) / 2.0);
        let w = hi.min(b) - lo.max(a);
        if w > 0.0 {
            area += v * w;
            total += w;
        }
    }
    area / total.max(1e-9)
}
