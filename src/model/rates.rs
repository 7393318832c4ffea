//! Rates from cumulative counters, shared by every part of derive (kept apart from
//! derive so that the parts it composes import this, not derive: no import circle).

/// Difference of a cumulative counter. A counter that went backwards was reset
/// (map entry recreated, PID reused, collector restarted): count from zero.
pub fn delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev { cur - prev } else { cur }
}

/// `ns` as a percentage of `interval_ns` (100 = the whole interval).
pub fn pct_of(ns: u64, interval_ns: u64) -> f64 {
    100.0 * ns as f64 / interval_ns.max(1) as f64
}
