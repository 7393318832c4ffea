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

/// One CPU's latencies: per-bucket counts (the last one +Inf), their sum and count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatHist {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    pub count: u64,
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
        self.buckets.resize(BUCKETS + 1, 0);
        for &(slot, n) in hist {
            self.buckets[bucket_of(slot)] += n;
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
        let buckets: Vec<(f64, u64)> = (0..=BUCKETS)
            .map(|i| {
                let le = if i == BUCKETS {
                    f64::INFINITY
                } else {
                    (1u64 << (FIRST as usize + i)) as f64 / 1e9
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
}
