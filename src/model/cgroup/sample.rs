//! What one tick read of cgroupfs (cgroup v2): per cgroup its raw, cumulative counters as
//! the kernel keeps them (cpu.stat, the three pressure files, memory.current/max/high,
//! memory.events, io.stat). Rates are derived in `frame`.

use serde::{Deserialize, Serialize};

/// One line of a pressure file (`some` or `full`): the kernel's 10-second average, percent
/// of wall time, and the cumulative stall time in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub avg10: f32,
    pub total_us: u64,
}

/// cpu.pressure, memory.pressure or io.pressure: `some` (at least one task stalled) and
/// `full` (every non-idle task stalled at once; absent for CPU before Linux 5.13).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub some: Psi,
    pub full: Option<Psi>,
}

/// cpu.stat, cumulative. usage/user/system are always there (the core); the bandwidth
/// fields only with the cpu controller enabled for the cgroup (`bandwidth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuStat {
    pub usage_usec: u64,
    pub user_usec: u64,
    pub system_usec: u64,
    /// nr_periods, nr_throttled and throttled_usec were in the file.
    pub bandwidth: bool,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_usec: u64,
}

/// io.stat summed over devices, cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct IoStat {
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
}

/// One cgroup as read at the tick. An Option is None when its file is absent (the
/// controller is not enabled for this cgroup, or the kernel lacks it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupScan {
    /// Path below the cgroup2 mount, "/" for the root ("/system.slice/nginx.service").
    pub path: String,
    pub cpu: Option<CpuStat>,
    /// cpu.max: the quota in µs per period (None: "max", no limit) and the period.
    pub cpu_max: Option<(Option<u64>, u64)>,
    pub cpu_pressure: Option<Pressure>,
    pub memory_pressure: Option<Pressure>,
    pub io_pressure: Option<Pressure>,
    /// Bytes; memory.max and memory.high are `NO_LIMIT` when "max" (an Option inside
    /// the Option would read back from JSON as absent).
    pub memory_current: Option<u64>,
    pub memory_max: Option<u64>,
    pub memory_high: Option<u64>,
    /// memory.events `oom_kill` and `high` (times over memory.high), cumulative.
    pub oom_kill: Option<u64>,
    pub high_events: Option<u64>,
    pub io: Option<IoStat>,
}

/// memory.max or memory.high of "max": no limit.
pub const NO_LIMIT: u64 = u64::MAX;

/// Everything read from cgroupfs in one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupSample {
    /// Where the cgroup2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
    /// on a hybrid host).
    pub mount: String,
    /// Pre-order, children by name: a parent before its children.
    pub cgroups: Vec<CgroupScan>,
    /// Cgroups left unread because the walk reached its limit.
    #[serde(default)]
    pub skipped: u32,
}
