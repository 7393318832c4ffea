//! Command line (clap derive). Flag and subcommand names are a public contract.
//!
//! Here: the top-level flags (`Cli`), the subcommands (`Command`) and the settings a
//! collecting run takes from them. Each subcommand's arguments are in `*_args.rs`
//! (`collect_args.rs`: what record and serve share with the live mode), the flags' value
//! parsers in `parse.rs`, the checks of -p and --comm in `processes.rs`, and what is
//! generated from these definitions in `completions.rs` and `man.rs`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

mod collect_args;
mod completions;
mod man;
mod parse;
mod probe_args;
mod processes;
mod profile_args;
mod record_args;
mod replay_args;
mod serve_args;

pub use collect_args::CollectArgs;
pub use completions::{CompletionsArgs, Shell, completions};
pub use man::man_page;
pub use parse::{
    BpfBudget, parse_bpf_budget, parse_count, parse_duration, parse_interval, parse_size,
    parse_span,
};
pub use probe_args::ProbeArgs;
pub use processes::{COMM_LEN, check_processes, comm_notes, kernel_comm, tgid_of};
pub use profile_args::ProfileArgs;
pub use record_args::RecordArgs;
pub use replay_args::ReplayArgs;
pub use serve_args::ServeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "ttop",
    version,
    about = "A system monitor that shows where a /proc scan (top) is wrong, using eBPF"
)]
pub struct Cli {
    /// Interval between updates, in seconds (0.1 to 3600).
    #[arg(short = 'd', long = "delay", value_name = "SECONDS", default_value = "1", value_parser = parse_interval,
          allow_negative_numbers = true)]
    pub delay: Duration,

    /// Print one JSON object per interval on stdout (JSON Lines) instead of the dashboard.
    #[arg(long)]
    pub json: bool,

    /// With --json: stop after COUNT intervals.
    #[arg(short = 'n', long = "count", value_name = "COUNT", value_parser = parse_count,
          allow_negative_numbers = true)]
    pub count: Option<u64>,

    /// Do not load eBPF programs: show the /proc view only.
    #[arg(long = "no-bpf")]
    pub no_bpf: bool,

    /// Do not hook the futex syscalls: the futex view and the per-process futex figures
    /// are not measured. Under a futex storm the hooks' dispatch slows every futex call
    /// (README: Overhead); the kernel-lock and mmap_lock views stay on.
    #[arg(long = "no-futex")]
    pub no_futex: bool,

    /// Hook every futex call: the futex view also counts calls, EAGAINs and wake calls
    /// (what shows an idle program's futex storm: a timer parking and waking its threads
    /// a thousand times a second), at a cost to every futex call on the machine. Without it only waits that slept are counted, from the scheduler probes,
    /// which a futex storm does not feel. On with -p or --comm.
    #[arg(long = "futex-calls", conflicts_with = "no_futex")]
    pub futex_calls: bool,

    /// A ceiling on ttop's own eBPF cost, % of one CPU for all its programs together
    /// (3 unless given, the budget docs/overhead.md measures against): above it,
    /// kernel-lock stacks are kept for fewer contentions, then none, then futex user
    /// stacks are no longer walked, and the header says so. `off` (or 0): no ceiling.
    #[arg(long = "bpf-budget", value_name = "PCT", value_parser = parse_bpf_budget)]
    pub bpf_budget: Option<BpfBudget>,

    /// Sample on-CPU stacks of the watched processes (or of the whole machine) at HZ per
    /// CPU (99 when no HZ is given): `--json` frames and recordings carry each interval's
    /// `profile`.
    #[arg(long = "profile", value_name = "HZ", num_args = 0..=1, require_equals = true,
          default_missing_value = "99", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub profile: Option<u64>,

    /// With --profile: weight stacks by time off the CPU instead (microseconds, under a
    /// first frame that says why, as `ttop profile --off-cpu`). Needs -p or --comm.
    #[arg(long = "off-cpu", requires = "profile")]
    pub off_cpu: bool,

    /// Run the collector at real-time priority (SCHED_FIFO 1) so that a saturated
    /// machine cannot starve it. Needs root.
    #[arg(long = "rt")]
    pub rt: bool,

    /// Also record every Sample to FILE (a new file, mode 0600) while showing the
    /// dashboard or printing --json; `ttop replay FILE --json` prints the same frames.
    #[arg(long = "record", value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Watch only these processes (comma-separated or repeated). Every panel is scoped
    /// to them, and the kernel side counts only them.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',', num_args = 1..)]
    pub pids: Vec<u32>,

    /// Watch only processes with this command name (as in /proc/PID/comm), including
    /// ones started later.
    #[arg(long = "comm", value_name = "NAME")]
    pub comm: Option<String>,

    /// Watch only the processes in this cgroup (v2) and below it, including ones started
    /// later: a path below the cgroup2 mount (/system.slice/nginx.service) or under it.
    /// The cgroup view (7) shows that subtree.
    #[arg(long = "cgroup", value_name = "PATH")]
    pub cgroup: Option<String>,

    /// When to use colour: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(
        long = "color",
        value_name = "WHEN",
        default_value = "auto",
        value_enum
    )]
    pub color: ColorWhen,

    /// The dashboard's settings file (view, sort, tree, hidden rows, interval, colour),
    /// written back when they change [default: ~/.config/ttop/config.toml].
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to use colour, given NO_COLOR (https://no-color.org).
    pub fn enabled(self) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What works here: each figure ttop measures, whether this kernel lets it (measured,
    /// through a fallback hook, or not available), the hook used and why.
    Probe(ProbeArgs),
    /// Record Samples to a file, or to a directory of rotated files, without a dashboard
    /// (for nohup, tmux, systemd).
    Record(RecordArgs),
    /// Replay a recording (a file, or a directory written by `record --dir`) in the
    /// dashboard, or print its frames with --json.
    Replay(ReplayArgs),
    /// Serve the current frame as OpenMetrics text on http://ADDR/metrics (Prometheus).
    Serve(ServeArgs),
    /// Sample on-CPU stacks (user and kernel, unwound without frame pointers) of some
    /// processes or the whole machine, and write them folded (flame graph input) or as
    /// an SVG flame graph.
    Profile(ProfileArgs),
    /// Print shell completions for bash, zsh or fish on stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout: `ttop man | man -l -`.
    Man,
}

/// What a collecting run uses: the interval, real-time priority and the collector's
/// configuration, from the top-level flags and (winning) the subcommand's.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The --comm NAME as given (the config holds it as the kernel keeps it).
    pub comm_given: Option<String>,
    pub delay: Duration,
    pub rt: bool,
    pub cfg: crate::collect::Config,
}

impl Cli {
    /// The settings for this run: the top-level flags, overridden by a collecting
    /// subcommand's own.
    pub fn settings(&self) -> Settings {
        let sub = match &self.command {
            Some(Command::Record(a)) => Some(&a.collect),
            Some(Command::Serve(a)) => Some(&a.collect),
            _ => None,
        };
        let mut pids = self.pids.clone();
        let mut comm = self.comm.clone();
        let mut cgroup = self.cgroup.clone();
        let (mut delay, mut rt, mut no_bpf) = (self.delay, self.rt, self.no_bpf);
        if let Some(Command::Profile(a)) = &self.command {
            rt |= a.rt;
        }
        let mut no_futex = self.no_futex;
        let mut futex_calls = self.futex_calls;
        let mut bpf_budget = self.bpf_budget;
        let mut profile = self.profile;
        let mut off_cpu = self.off_cpu;
        if let Some(s) = sub {
            delay = s.delay.unwrap_or(delay);
            profile = s.profile.or(profile);
            off_cpu |= s.off_cpu;
            rt |= s.rt;
            no_bpf |= s.no_bpf;
            no_futex |= s.no_futex;
            futex_calls |= s.futex_calls;
            bpf_budget = s.bpf_budget.or(bpf_budget);
            if !s.pids.is_empty() {
                pids = s.pids.clone();
            }
            if s.comm.is_some() {
                comm = s.comm.clone();
            }
            if s.cgroup.is_some() {
                cgroup = s.cgroup.clone();
            }
        }
        Settings {
            comm_given: comm.clone(),
            delay,
            rt,
            cfg: crate::collect::Config {
                bpf: !no_bpf,
                pids: (!pids.is_empty()).then_some(pids),
                // The kernel keeps 15 bytes of a name: match what /proc/PID/comm holds.
                comm: comm.map(|c| kernel_comm(&c).to_string()),
                cgroup,
                profile_hz: profile,
                profile_off_cpu: off_cpu,
                futex: if no_futex {
                    crate::collect::FutexChoice::Off
                } else if futex_calls {
                    crate::collect::FutexChoice::Calls
                } else {
                    crate::collect::FutexChoice::Sleeps
                },
                // Without the flag, the target budget: a ceiling ttop keeps on its own.
                bpf_budget_pct: match bpf_budget {
                    None => Some(crate::model::shed::TARGET_BUDGET_PCT),
                    Some(b) => b.0,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests;
