//! What the scan (top's view) missed this interval, and why: the figures behind the
//! undercount line. Built by `derive` from the Sample's `top_scan` and the ghost threads.

use serde::Serialize;

use crate::model::sample::TopScan;

/// How the scan went, as top's would have, and the gap between it and the truth split
/// into its causes. Counts are threads at the scan; `ghosts` is a time-weighted average.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TopView {
    /// Wall time the scan took (s), the part spent waiting to keep top's pace, and the
    /// time top itself would have taken at that pace.
    pub scan_s: f64,
    pub paced_s: f64,
    pub top_s: f64,
    /// top's CPU cost per thread on this machine (µs, measured by ttop at start).
    pub thread_cost_us: f64,
    /// Runnable threads per CPU that top would have waited behind after its first slice.
    pub others_per_cpu: f64,
    /// The pacing hit its cap (half the interval): the rest was read at ttop's speed.
    pub capped: bool,
    /// Listed threads that were gone when their turn came.
    pub vanished: u32,
    /// Threads top never read because an earlier thread of their process vanished
    /// (procps stops reading a process there), and how many of them were running.
    pub skipped: u32,
    pub skipped_running: u32,
    /// Threads created after top listed their process (never seen), and how many ran.
    pub unlisted: u32,
    pub unlisted_running: u32,
    /// Ghost threads (born and dead between two scans) as runnable threads averaged over
    /// the interval: their CPU time divided by the interval. Null without eBPF.
    pub ghosts: Option<f64>,
    /// What the causes above do not explain: the truth less the scan's running threads
    /// and every cause above, i.e. the rest of the difference between an average over
    /// the interval and one instant's reading. Null without eBPF.
    pub other: Option<f64>,
}

/// The split of the gap, from the scan's figures, the truth and the ghosts' CPU time.
pub fn top_view(
    t: &TopScan,
    true_avg: Option<f64>,
    scan_running: u32,
    ghost_cpu_s: Option<f64>,
    interval_s: f64,
) -> TopView {
    let ghosts = ghost_cpu_s.map(|c| c / interval_s.max(1e-9));
    let explained = f64::from(t.skipped_running + t.unlisted_running + t.vanished);
    let other = true_avg
        .zip(ghosts)
        .map(|(ta, g)| ta - f64::from(scan_running) - explained - g);
    TopView {
        scan_s: t.scan_ns as f64 / 1e9,
        paced_s: t.paced_ns as f64 / 1e9,
        top_s: t.top_ns as f64 / 1e9,
        thread_cost_us: f64::from(t.thread_cost_ns) / 1e3,
        others_per_cpu: f64::from(t.others_per_cpu),
        capped: t.capped,
        vanished: t.vanished,
        skipped: t.skipped,
        skipped_running: t.skipped_running,
        unlisted: t.unlisted,
        unlisted_running: t.unlisted_running,
        ghosts,
        other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_causes_and_the_rest_add_up_to_the_gap() {
        let t = TopScan {
            scan_ns: 250_000_000,
            paced_ns: 240_000_000,
            top_ns: 245_000_000,
            thread_cost_ns: 14_500,
            others_per_cpu: 60.0,
            vanished: 3,
            skipped: 100,
            skipped_running: 90,
            unlisted: 5,
            unlisted_running: 4,
            ..TopScan::default()
        };
        let v = top_view(&t, Some(120.0), 12, Some(0.5), 1.0);
        assert_eq!(v.ghosts, Some(0.5));
        let other = v.other.unwrap();
        assert!((other - (120.0 - 12.0 - 90.0 - 4.0 - 3.0 - 0.5)).abs() < 1e-9);
        assert_eq!((v.scan_s, v.thread_cost_us), (0.25, 14.5));
        // Without eBPF nothing is guessed.
        let v = top_view(&t, None, 12, None, 1.0);
        assert_eq!((v.ghosts, v.other), (None, None));
    }
}
