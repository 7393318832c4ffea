//! Scheduling latency (runnable -> on CPU): the cumulative histograms the scheduler
//! collector samples per CPU and per thread, and their per-interval Frame form with
//! p50 / p99 / max and the wall-clock time of the max (`latency_frame`, which `derive`
//! calls). What the collector samples is in `sample.rs`, which the Sample holds.
//!
//! Histogram layout (bpf/ttop.h, TTOP_LAT_SLOTS): slot 0 holds waits under 1.024 us;
//! from there 8 slots per power of two, each at most 12.5% wide. Percentiles
//! interpolate linearly inside the slot that holds the rank, and never exceed the
//! interval's exact max, so p50/p99 are within one slot (<= 12.5%) of the truth and
//! usually much closer.

use std::collections::HashMap;

use serde::Serialize;

use crate::model::join::KeyMap;
use crate::model::sample::Sample;

pub mod sample;
pub use sample::{LatStats, LatencySample};

pub const SLOTS: usize = 192;
const MIN_SHIFT: u32 = 10;
const SUB_BITS: u32 = 3;
/// Threads listed per frame (the worst by max latency).
pub const MAX_THREAD_ROWS: usize = 200;

/// Per-CPU row of `latency.cpus[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatCpuRow {
    pub cpu: u32,
    /// Latencies measured in the interval; the other fields are null when 0.
    pub count: u64,
    pub avg_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    /// Wall clock (Unix seconds) when the worst one got the CPU.
    pub max_at: Option<f64>,
    /// The interval's histogram, (slot, count) of the non-empty slots (counters add it).
    #[serde(skip)]
    pub hist: Vec<(usize, u64)>,
    /// Sum of the interval's latencies, ns.
    #[serde(skip)]
    pub sum_ns: u64,
}

/// Per-thread row of `latency.threads[]`, worst first.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatThreadRow {
    pub tid: u32,
    pub pid: u32,
    pub comm: String,
    pub count: u64,
    pub avg_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub max_at: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencyFrame {
    pub cpus: Vec<LatCpuRow>,
    /// The threads with the largest max latency in the interval (at most 200).
    pub threads: Vec<LatThreadRow>,
    /// Threads that waited at all in the interval (rows beyond `threads` are cut).
    pub threads_total: u32,
}

/// Slot of a latency, as computed in BPF (for tests and fixtures).
pub fn slot_of(ns: u64) -> usize {
    if ns < 1 << MIN_SHIFT {
        return 0;
    }
    let e = 63 - ns.leading_zeros();
    let sub = (ns >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    let s = 1 + ((e - MIN_SHIFT) << SUB_BITS) as usize + sub as usize;
    s.min(SLOTS - 1)
}

/// [low, high) of a slot in ns.
pub fn slot_bounds(slot: usize) -> (f64, f64) {
    if slot == 0 {
        return (0.0, f64::from(1u32 << MIN_SHIFT));
    }
    let e = MIN_SHIFT + ((slot - 1) as u32 >> SUB_BITS);
    let sub = ((slot - 1) as u64) & ((1 << SUB_BITS) - 1);
    let width = (1u64 << (e - SUB_BITS)) as f64;
    let lo = (1u64 << e) as f64 + sub as f64 * width;
    (lo, lo + width)
}

/// Interval histogram: cur - prev, slot by slot (counts wrap at 2^32; a histogram
/// whose count went backwards was recreated and counts from zero).
pub fn hist_delta(prev: Option<&LatStats>, cur: &LatStats) -> Vec<(usize, u64)> {
    let prev = prev.filter(|p| p.count <= cur.count);
    let pm: HashMap<u16, u32> = prev
        .map(|p| p.slots.iter().copied().collect())
        .unwrap_or_default();
    cur.slots
        .iter()
        .map(|&(s, c)| {
            (
                s as usize,
                u64::from(c.wrapping_sub(pm.get(&s).copied().unwrap_or(0))),
            )
        })
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// The q-quantile (0..1) of an interval histogram, in ns: the rank q*n is located in
/// its slot and interpolated linearly inside it; capped at `max_ns` when known.
pub fn percentile(hist: &[(usize, u64)], q: f64, max_ns: u64) -> Option<f64> {
    let total: u64 = hist.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).max(1.0).min(total as f64);
    let mut below = 0u64;
    let cap = if max_ns > 0 {
        max_ns as f64
    } else {
        f64::INFINITY
    };
    for &(slot, n) in hist {
        if (below + n) as f64 >= rank {
            let (lo, mut hi) = slot_bounds(slot);
            if slot == SLOTS - 1 || hi > cap {
                hi = cap.max(lo);
            }
            let frac = (rank - below as f64) / n as f64;
            return Some((lo + frac * (hi - lo)).min(cap));
        }
        below += n;
    }
    Some(cap)
}

/// Monotonic ns -> wall clock seconds, through the sample's (mono, wall) pair.
pub fn wall_of(cur: &Sample, mono_ns: u64) -> f64 {
    let wall = cur.wall_ns as i128 - (i128::from(cur.mono_ns) - i128::from(mono_ns));
    wall as f64 / 1e9
}

struct Interval {
    count: u64,
    sum_ns: u64,
    hist: Vec<(usize, u64)>,
    avg_us: f64,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    max_us: f64,
    max_at: f64,
}

fn interval(prev: Option<&LatStats>, cur: &LatStats, sample: &Sample) -> Interval {
    let p = prev.filter(|p| p.count <= cur.count);
    let count = cur.count - p.map_or(0, |p| p.count);
    let sum = cur.sum_ns.saturating_sub(p.map_or(0, |p| p.sum_ns));
    let hist = hist_delta(p, cur);
    let us = |ns: f64| ns / 1e3;
    Interval {
        count,
        sum_ns: sum,
        hist: hist.clone(),
        avg_us: if count > 0 {
            us(sum as f64 / count as f64)
        } else {
            0.0
        },
        p50_us: percentile(&hist, 0.50, cur.max_ns).map(us),
        p99_us: percentile(&hist, 0.99, cur.max_ns).map(us),
        max_us: us(cur.max_ns as f64),
        max_at: if cur.max_ns > 0 {
            wall_of(sample, cur.max_ts)
        } else {
            0.0
        },
    }
}

/// The Frame's `latency`, from the two samples' histograms (none without a previous
/// sample or eBPF).
pub fn latency_frame(prev: Option<&Sample>, cur: &Sample) -> Option<LatencyFrame> {
    let (Some(prev), Some(cb)) = (prev, cur.bpf.as_ref()) else {
        return None;
    };
    let c = &cb.latency;
    let empty = LatencySample::default();
    let p = prev.bpf.as_ref().map_or(&empty, |b| &b.latency);
    let pc: HashMap<u32, &LatStats> = p.cpus.iter().map(|s| (s.id, s)).collect();
    let cpus = c
        .cpus
        .iter()
        .map(|s| {
            let i = interval(pc.get(&s.id).copied(), s, cur);
            let some = |v: f64| (i.count > 0).then_some(v);
            LatCpuRow {
                cpu: s.id,
                count: i.count,
                avg_us: some(i.avg_us),
                p50_us: i.p50_us,
                p99_us: i.p99_us,
                max_us: some(i.max_us),
                max_at: some(i.max_at),
                hist: i.hist,
                sum_ns: i.sum_ns,
            }
        })
        .collect();
    let pt: foldhash::HashMap<u32, &LatStats> = p.threads.iter().map(|s| (s.id, s)).collect();
    let mut threads: Vec<LatThreadRow> = c
        .threads
        .iter()
        .filter_map(|s| {
            // An exited thread's last counts are no base for a later thread of its tid.
            let prev = pt.get(&s.id).copied().filter(|p| !p.exited);
            // No wakeup this interval (most threads of a big idle pool): no row, and no
            // histogram delta to build (10,000 of them a tick were 12% of ttop's CPU).
            if prev.is_some_and(|p| p.count == s.count) {
                return None;
            }
            let i = interval(prev, s, cur);
            (i.count > 0).then(|| LatThreadRow {
                tid: s.id,
                pid: s.tgid,
                comm: s.comm.clone(), // for the rows kept, the scan's name if it has one
                count: i.count,
                avg_us: i.avg_us,
                p50_us: i.p50_us.unwrap_or(0.0),
                p99_us: i.p99_us.unwrap_or(0.0),
                max_us: i.max_us,
                max_at: i.max_at,
            })
        })
        .collect();
    threads.sort_by(|a, b| b.max_us.total_cmp(&a.max_us).then(a.tid.cmp(&b.tid)));
    let total = threads.len() as u32;
    threads.truncate(MAX_THREAD_ROWS);
    if !threads.is_empty() {
        fn names(s: &Sample) -> KeyMap<&str> {
            KeyMap::new(
                s.procs
                    .iter()
                    .flat_map(|p| p.tasks.iter().map(|t| (t.tid, &*t.comm)))
                    .collect::<Vec<_>>(),
            )
        }
        // A thread that exited is named as it was at exit; the others as this scan saw
        // them, or the last one (a thread that ended before this scan, named by none).
        let now = names(cur);
        let mut before = None;
        for r in threads.iter_mut().filter(|r| r.comm.is_empty()) {
            let c = now.get(r.tid).copied().or_else(|| {
                before
                    .get_or_insert_with(|| names(prev))
                    .get(r.tid)
                    .copied()
            });
            r.comm = c.map_or_else(String::new, str::to_string);
        }
    }
    Some(LatencyFrame {
        cpus,
        threads,
        threads_total: total,
    })
}

/// A cumulative histogram built from latencies (fixtures and tests).
#[cfg(any(test, feature = "fixtures"))]
pub fn stats_of(id: u32, tgid: u32, lats_ns: &[u64], max_ts: u64) -> LatStats {
    let mut slots = vec![0u32; SLOTS];
    for &l in lats_ns {
        slots[slot_of(l)] += 1;
    }
    LatStats {
        id,
        tgid,
        count: lats_ns.len() as u64,
        sum_ns: lats_ns.iter().sum(),
        max_ns: lats_ns.iter().copied().max().unwrap_or(0),
        max_ts,
        slots: slots
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| (s as u16, *n))
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::BpfSample;

    #[test]
    fn slots_match_the_bpf_layout() {
        assert_eq!(slot_of(0), 0);
        assert_eq!(slot_of(1023), 0);
        assert_eq!(slot_of(1024), 1);
        assert_eq!(slot_of(1024 + 128), 2);
        assert_eq!(slot_of(2047), 8);
        assert_eq!(slot_of(2048), 9);
        assert_eq!(slot_of(u64::MAX), SLOTS - 1);
        for ns in [1500u64, 10_000, 999_999, 1_000_000, 3_333_333, 640_000_000] {
            let (lo, hi) = slot_bounds(slot_of(ns));
            assert!(
                lo <= ns as f64 && (ns as f64) < hi,
                "{ns} not in [{lo}, {hi})"
            );
            assert!((hi - lo) / lo <= 0.125 + 1e-9);
        }
    }

    #[test]
    fn percentiles_interpolate_within_a_slot() {
        // 1..=1000 us, uniformly: p50 = 500 us, p99 = 990 us.
        let lats: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let s = stats_of(0, 0, &lats, 0);
        let h = hist_delta(None, &s);
        let p50 = percentile(&h, 0.5, s.max_ns).unwrap();
        let p99 = percentile(&h, 0.99, s.max_ns).unwrap();
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.03, "p50 {p50}");
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.03, "p99 {p99}");
        // Never above the exact max.
        assert!(percentile(&h, 1.0, s.max_ns).unwrap() <= 1_000_000.0);
        assert_eq!(percentile(&[], 0.5, 0), None);
    }

    #[test]
    fn interval_deltas_wrap_and_reset() {
        let a = LatStats {
            count: 10,
            slots: vec![(5, u32::MAX - 1)],
            ..Default::default()
        };
        let b = LatStats {
            count: 13,
            slots: vec![(5, 1), (7, 2)],
            ..Default::default()
        };
        assert_eq!(hist_delta(Some(&a), &b), vec![(5, 3), (7, 2)]);
        // Recreated entry (count went backwards): counts from zero.
        let c = LatStats {
            count: 2,
            slots: vec![(5, 2)],
            ..Default::default()
        };
        assert_eq!(hist_delta(Some(&b), &c), vec![(5, 2)]);
    }

    #[test]
    fn frame_rows_and_max_at_in_wall_time() {
        let mk = |lats: &[u64], max_ts: u64, mono: u64| Sample {
            mono_ns: mono,
            wall_ns: 1_700_000_000_000_000_000 + mono,
            bpf: Some(BpfSample {
                latency: LatencySample {
                    cpus: vec![stats_of(1, 0, lats, max_ts)],
                    threads: vec![stats_of(77, 70, lats, max_ts)],
                },
                ..Default::default()
            }),
            ..Default::default()
        };
        let prev = mk(&[2_000_000], 5_000_000_000, 10_000_000_000);
        let mut lats = vec![2_000_000];
        lats.extend(std::iter::repeat_n(100_000, 98));
        lats.push(600_000_000);
        let cur = mk(&lats, 10_500_000_000, 11_000_000_000);
        let l = latency_frame(Some(&prev), &cur).unwrap();
        let t = &l.threads[0];
        assert_eq!((t.tid, t.pid, t.count), (77, 70, 99));
        assert_eq!(t.max_us, 600_000.0);
        // The max happened 0.5 s before the sample was taken.
        assert!(
            (t.max_at - (1_700_000_000.0 + 10.5)).abs() < 1e-6,
            "{}",
            t.max_at
        );
        assert!((t.p50_us - 100.0).abs() < 12.5, "p50 {}", t.p50_us);
        assert_eq!(l.cpus[0].count, 99);
        assert!(l.cpus[0].p99_us.unwrap() <= 600_000.0);
    }

    /// An exited thread's last counts make its row (named as at exit), and are no base
    /// for a later thread that gets its tid.
    #[test]
    fn exited_threads_keep_their_last_interval_and_free_their_tid() {
        let mk = |threads: Vec<LatStats>, mono: u64| Sample {
            mono_ns: mono,
            bpf: Some(BpfSample {
                latency: LatencySample {
                    cpus: Vec::new(),
                    threads,
                },
                ..Default::default()
            }),
            ..Default::default()
        };
        let gone = |s: LatStats| LatStats {
            exited: true,
            comm: "w-3".into(),
            ..s
        };
        let a = mk(vec![stats_of(77, 70, &[1_000_000; 5], 1)], 1_000_000_000);
        // Two more waits, then it exited: the row has those two, and its name.
        let b = mk(
            vec![gone(stats_of(77, 70, &[1_000_000; 7], 2))],
            2_000_000_000,
        );
        let l = latency_frame(Some(&a), &b).unwrap();
        let t = &l.threads[0];
        assert_eq!((t.tid, t.count, t.comm.as_str()), (77, 2, "w-3"));
        // A new thread with tid 77 and nine waits: all nine are its own.
        let c = mk(vec![stats_of(77, 71, &[2_000_000; 9], 3)], 3_000_000_000);
        let l = latency_frame(Some(&b), &c).unwrap();
        let t = &l.threads[0];
        assert_eq!((t.pid, t.count), (71, 9));
    }
}
