//! Scheduling latency per CPU as an OpenMetrics histogram, summed since the start.
//!
//! Buckets: one per power of two from 2^10 ns (1.024 us) to 2^30 ns (1.07 s), then +Inf.
//! The kernel's histogram (model::latency) has 8 slots per power of two and every
//! power of two is a slot boundary, so each bucket count is exact, not interpolated
//! (a latency of exactly 2^k ns, which the slot starting there holds, counts one
//! bucket up);
//! 22 buckets per CPU instead of 192 slots keeps the series few, and the range covers a
//! wake-up that runs at once (under 1 us) to one starved for a second. prometheus-client's
//! Histogram only takes one observation at a time, so this metric hands the summed
//! buckets to the encoder directly (`encode_histogram`).

use std::sync::Mutex;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

use crate::model::latency::{SLOTS, slot_bounds};

/// Bucket upper bounds are 2^(FIRST + i) ns.
const FIRST: u32 = 10;
/// Finite buckets (2^10 .. 2^30 ns).
pub const BUCKETS: usize = 21;

/// Futex wait buckets: 2^10 ns (1.024 us) to 2^36 ns (68.7 s), then +Inf.
const FUTEX_FIRST: u32 = 10;
pub const FUTEX_BUCKETS: usize = 27;

/// One CPU's latencies (or every futex wait): per-bucket counts (the last one +Inf),
/// their sum and count. Bucket i's upper bound is 2^(first + i) ns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatHist {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    pub count: u64,
    pub first: u32,
}

/// The bucket a kernel slot falls in: the first power of two at or above its top.
fn bucket_of(slot: usize) -> usize {
    if slot >= SLOTS - 1 {
        return BUCKETS;
    }
    let hi = slot_bounds(slot).1 as u64;
    let k = 64 - (hi - 1).leading_zeros();
    (k.saturating_sub(FIRST) as usize).min(BUCKETS)
}

impl LatHist {
    /// Add an interval's histogram ((slot, count) pairs) and its sum.
    pub fn add(&mut self, hist: &[(usize, u64)], sum_ns: u64) {
        self.first = FIRST;
        self.buckets.resize(BUCKETS + 1, 0);
        for &(slot, n) in hist {
            self.buckets[bucket_of(slot)] += n;
            self.count += n;
        }
        self.sum_ns += sum_ns;
    }
}

impl LatHist {
    /// Add an interval's futex wait histogram: `slots[k]` counts waits of 2^k to
    /// 2^(k+1) ns, so it lands whole in the bucket whose bound is 2^(k+1) (exact, as
    /// for latency).
    pub fn add_log2(&mut self, slots: &[u64], sum_ns: u64) {
        self.first = FUTEX_FIRST;
        self.buckets.resize(FUTEX_BUCKETS + 1, 0);
        for (k, &n) in slots.iter().enumerate() {
            let b = (k as u32 + 1).saturating_sub(FUTEX_FIRST) as usize;
            self.buckets[b.min(FUTEX_BUCKETS)] += n;
            self.count += n;
        }
        self.sum_ns += sum_ns;
    }
}

/// A histogram whose buckets are set, not observed.
#[derive(Debug, Default)]
pub struct SetHist(Mutex<LatHist>);

impl SetHist {
    pub fn set(&self, h: &LatHist) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = h.clone();
    }
}

impl TypedMetric for SetHist {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for SetHist {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let h = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let finite = h.buckets.len().saturating_sub(1);
        let buckets: Vec<(f64, u64)> = (0..=finite)
            .map(|i| {
                let le = if i == finite {
                    f64::INFINITY
                } else {
                    (1u64 << (h.first as usize + i)) as f64 / 1e9
                };
                (le, h.buckets.get(i).copied().unwrap_or(0))
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(h.sum_ns as f64 / 1e9, h.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::latency::slot_of;

    #[test]
    fn every_latency_lands_in_the_power_of_two_bucket_that_holds_it() {
        for ns in [
            1u64,
            1023,
            1024,
            1025,
            2047,
            2048,
            5_000,
            1 << 20,
            (1 << 30) - 1,
        ] {
            let b = bucket_of(slot_of(ns));
            let le = 1u64 << (FIRST as usize + b);
            assert!(ns < le, "{ns} ns in bucket le={le}");
            if b > 0 {
                assert!(ns >= le / 2, "{ns} ns could go in a lower bucket than {le}");
            }
        }
        assert_eq!(bucket_of(slot_of(1 << 31)), BUCKETS);
    }

    #[test]
    fn futex_waits_land_in_the_power_of_two_bucket_that_holds_them() {
        // 2 ms is in slot 20 (2^20 <= 2e6 < 2^21): bucket le=2^21 ns (2.1 ms).
        let mut slots = vec![0u64; 40];
        slots[20] = 7;
        slots[3] = 1;
        slots[39] = 2;
        let mut h = LatHist::default();
        h.add_log2(&slots, 123);
        assert_eq!(h.count, 10);
        assert_eq!(h.buckets.len(), FUTEX_BUCKETS + 1);
        assert_eq!(h.buckets[21 - FUTEX_FIRST as usize], 7);
        assert_eq!(h.buckets[0], 1, "under 1 us: the first bucket");
        assert_eq!(h.buckets[FUTEX_BUCKETS], 2, "over 68 s: +Inf");
    }
}
