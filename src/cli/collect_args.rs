//! The collecting flags `record` and `serve` share with the live mode.

use std::time::Duration;

use clap::Args;

use super::parse::{BpfBudget, parse_bpf_budget, parse_interval};

/// What every collecting subcommand (record, serve) accepts, as the live mode does.
/// Given before the subcommand (`ttop -d 2 record ...`) they apply too; given after it,
/// they win.
#[derive(Debug, Clone, Args)]
pub struct CollectArgs {
    /// Interval between samples, in seconds (0.1 to 3600; default 1).
    #[arg(short = 'd', long = "delay", value_name = "SECONDS", value_parser = parse_interval,
          allow_negative_numbers = true)]
    pub delay: Option<Duration>,

    /// Only these processes (-p 1,2 or -p 1 -p 2).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,

    /// Only processes with this command name (as in /proc/PID/comm), including ones
    /// started later.
    #[arg(long = "comm", value_name = "NAME")]
    pub comm: Option<String>,

    /// Only the processes in this cgroup (v2) and below it.
    #[arg(long = "cgroup", value_name = "PATH")]
    pub cgroup: Option<String>,

    /// Do not load eBPF programs: the /proc view only.
    #[arg(long = "no-bpf")]
    pub no_bpf: bool,

    /// Do not hook the futex syscalls: the futex figures are not measured.
    #[arg(long = "no-futex")]
    pub no_futex: bool,

    /// Hook every futex call: calls, EAGAINs and wake calls are counted too (on with -p
    /// or --comm).
    #[arg(long = "futex-calls", conflicts_with = "no_futex")]
    pub futex_calls: bool,

    /// A ceiling on ttop's own eBPF cost, % of one CPU for all its programs together
    /// (3 unless given, the budget docs/overhead.md measures against): above it,
    /// kernel-lock stacks are kept for fewer contentions, then none, then futex user
    /// stacks are no longer walked, and the header says so. `off` (or 0): no ceiling.
    #[arg(long = "bpf-budget", value_name = "PCT", value_parser = parse_bpf_budget)]
    pub bpf_budget: Option<BpfBudget>,

    /// Sample on-CPU stacks at HZ per CPU (99 when no HZ is given) into each Sample.
    #[arg(long = "profile", value_name = "HZ", num_args = 0..=1, require_equals = true,
          default_missing_value = "99", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub profile: Option<u64>,

    /// With --profile: stacks weighted by time off the CPU (microseconds). Needs -p or
    /// --comm.
    #[arg(long = "off-cpu", requires = "profile")]
    pub off_cpu: bool,

    /// Run at real-time priority (SCHED_FIFO 1). Needs root.
    #[arg(long = "rt")]
    pub rt: bool,
}
