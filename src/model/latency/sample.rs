//! What the scheduler collector samples of scheduling latency: per CPU and per thread,
//! cumulative histograms (the slot layout is `latency::slot_of`'s). The Sample holds it;
//! `latency` turns two of them into the Frame's rows.

use serde::{Deserialize, Serialize};

/// One histogram (a CPU's or a thread's), cumulative.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatStats {
    /// CPU number (per-CPU rows) or tid (per-thread rows).
    pub id: u32,
    /// Thread rows: the process.
    pub tgid: u32,
    pub count: u64,
    pub sum_ns: u64,
    /// Largest latency since the previous sample (0: none in the interval).
    pub max_ns: u64,
    /// CLOCK_MONOTONIC (ns) when that one got the CPU.
    pub max_ts: u64,
    /// Non-empty slots as (slot, cumulative count mod 2^32), ascending.
    pub slots: Vec<(u16, u32)>,
    /// Thread rows: the thread has exited, and these are its last counts (the kernel
    /// entry is deleted once read; a later entry under the tid is another thread's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exited: bool,
    /// Thread rows of exited threads: the name the thread had at exit (the scan may
    /// never have seen it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comm: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySample {
    pub cpus: Vec<LatStats>,
    pub threads: Vec<LatStats>,
}
