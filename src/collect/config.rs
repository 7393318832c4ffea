//! What a session asks the collectors for: eBPF or not, which processes, profiles, and
//! how futex waits are measured.

use crate::collect::contention::FutexHooks;

#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Try to load the eBPF programs (false: --no-bpf).
    pub bpf: bool,
    /// Only these processes (ttop -p).
    pub pids: Option<Vec<u32>>,
    /// Only processes with this comm (ttop --comm), resolved every tick.
    pub comm: Option<String>,
    /// Only processes in this cgroup and below (ttop --cgroup), resolved every tick; a
    /// path below the cgroup2 mount once main has checked it (`cgroup::resolve_path`).
    pub cgroup: Option<String>,
    /// Sample on-CPU stacks at this rate per CPU (ttop --profile).
    pub profile_hz: Option<u64>,
    /// Weight stacks by time off the CPU instead (--profile --off-cpu).
    pub profile_off_cpu: bool,
    /// How futex waits are measured, as the user asked.
    pub futex: FutexChoice,
    /// The ceiling on ttop's own eBPF cost, % of one CPU (--bpf-budget; None: no
    /// ceiling, as in Config::default()).
    pub bpf_budget_pct: Option<f64>,
}

/// The user's futex choice (the hooks then used: `Config::futex_hooks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FutexChoice {
    /// Waits that slept, from the scheduler probes, which a futex storm does not feel
    /// (every call with -p or --comm: a person looking at one process wants its calls).
    #[default]
    Sleeps,
    /// The same, with the per-call programs loaded beside them so that
    /// `Request::FutexCalls` can hook every call while the dashboard's futex view is open.
    OnDemand,
    /// Every futex call hooked (--futex-calls): calls, EAGAINs and wake calls counted, at
    /// a cost per call.
    Calls,
    /// Not measured at all (--no-futex).
    Off,
}

impl Config {
    /// The futex hooks loaded and attached at start.
    pub fn futex_hooks(&self) -> FutexHooks {
        match self.futex {
            FutexChoice::Off => FutexHooks::Off,
            FutexChoice::Calls => FutexHooks::Calls,
            _ if self.filtered() => FutexHooks::Calls,
            FutexChoice::Sleeps | FutexChoice::OnDemand => FutexHooks::Sleeps,
        }
    }

    /// The session watches some processes only (-p, --comm, --cgroup).
    pub fn filtered(&self) -> bool {
        self.pids.is_some() || self.comm.is_some() || self.cgroup.is_some()
    }

    /// Whether the per-call programs are loaded beside the scheduler ones.
    pub fn futex_on_demand(&self) -> bool {
        self.futex == FutexChoice::OnDemand
    }
}
