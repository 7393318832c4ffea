//! Command line (clap derive). Flag and subcommand names are a public contract.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

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

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Also print libbpf's log: the verifier's log of every program this kernel rejected.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print the table as one JSON object (kernel, mode, features[], problems[]).
    #[arg(long)]
    pub json: bool,
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

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Only these processes (-p 1,2 or -p 1 -p 2); default: every process.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,

    /// Only processes with this command name (as in /proc/PID/comm), including ones
    /// started while the profile runs.
    #[arg(long = "comm", value_name = "NAME")]
    pub comm: Option<String>,

    /// How long to sample, in seconds (Ctrl-C ends it early and still writes).
    #[arg(long = "duration", value_name = "SECONDS", default_value = "30", value_parser = parse_interval,
          allow_negative_numbers = true)]
    pub duration: Duration,

    /// Samples per second on each CPU (as perf record -F; 99 avoids lockstep with
    /// timers that run at round rates).
    #[arg(short = 'F', long = "freq", value_name = "HZ", default_value_t = 99,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub freq: u64,

    /// Weight stacks by time off the CPU instead (from leaving a CPU to running again,
    /// in microseconds), under a first frame that says why: runnable (preempted), io,
    /// futex, sleep, blocked (another uninterruptible wait: a kernel lock), wait (poll,
    /// read, ...). Needs -p or --comm.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,

    /// Write the folded stacks (`root;...;leaf COUNT`, flamegraph.pl / inferno input)
    /// to FILE; `-` or nothing: stdout, unless --svg is given.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Also (or only) write an interactive SVG flame graph (inferno) to FILE.
    #[arg(long = "svg", value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Also (or only) write the profile in pprof's protobuf format to FILE, for `go tool
    /// pprof`, Pyroscope, Parca or Grafana (on-CPU: samples and CPU nanoseconds; with
    /// --off-cpu: off-CPU nanoseconds).
    #[arg(long = "pprof", value_name = "FILE")]
    pub pprof: Option<PathBuf>,

    /// Run at real-time priority (SCHED_FIFO 1; needs root), as `ttop --rt`: on a
    /// saturated machine the thread that drains the samples is otherwise starved and
    /// the ring buffer drops them (off-CPU mode under thread churn: most of them).
    #[arg(long = "rt")]
    pub rt: bool,
}

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

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording to create (never overwritten; mode 0600: it holds command lines).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        required_unless_present = "dir",
        conflicts_with = "dir"
    )]
    pub output: Option<PathBuf>,

    /// Record continuously into DIR: one file per --rotate period, named by its UTC start
    /// time (ttop-YYYYMMDDTHHMMSSZ.ttop), the oldest deleted past --keep / --max-size.
    #[arg(long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// With --dir: start a new file every PERIOD, aligned to the clock (30s, 15m, 1h, 1d;
    /// default 1h).
    #[arg(long, value_name = "PERIOD", value_parser = parse_span, requires = "dir", conflicts_with = "output")]
    pub rotate: Option<Duration>,

    /// With --dir: delete files that ended longer ago than this (12h, 7d; default 7d).
    #[arg(long, value_name = "AGE", value_parser = parse_span, requires = "dir", conflicts_with = "output")]
    pub keep: Option<Duration>,

    /// With --dir: also delete the oldest files while the directory's recordings take
    /// more than this (500M, 2G, bytes without a suffix).
    #[arg(long = "max-size", value_name = "SIZE", value_parser = parse_size, requires = "dir", conflicts_with = "output")]
    pub max_size: Option<u64>,

    /// Stop after this long: seconds, or with an s/m/h suffix (90, 15m, 2h).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Also serve the current frame as OpenMetrics on http://ADDR/metrics (as `ttop serve`).
    #[arg(long = "metrics", value_name = "ADDR")]
    pub metrics: Option<String>,

    /// With --metrics: how many processes and futex words get their own labelled series,
    /// and how many command names get their own counters (default 20; see `ttop serve`).
    #[arg(long = "top", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100), requires = "metrics")]
    pub top: Option<u16>,

    /// With --metrics: what ranks the command names that get their own counters (as
    /// `ttop serve --top-by`).
    #[arg(long = "top-by", value_name = "KEY", value_enum, value_delimiter = ',',
          default_values_t = crate::serve::groups::DEFAULT_TOP_BY, requires = "metrics")]
    pub top_by: Vec<crate::serve::groups::TopBy>,

    #[command(flatten)]
    pub collect: CollectArgs,
}

impl RecordArgs {
    pub const DEFAULT_ROTATE: Duration = Duration::from_secs(3600);
    pub const DEFAULT_KEEP: Duration = Duration::from_secs(7 * 86_400);
    pub const DEFAULT_TOP: u16 = 20;
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A recording made by `ttop record` or `ttop --record`, or a directory written by
    /// `ttop record --dir` (played across its files; a file in it plays from there on).
    #[arg(value_name = "FILE|DIR")]
    pub file: PathBuf,

    /// Print the recorded frames as JSON Lines (the schema of `ttop --json`).
    #[arg(long)]
    pub json: bool,

    /// Start with the process table narrowed to these PIDs (`p` changes it).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: PORT, :PORT (both on 127.0.0.1) or HOST:PORT (0.0.0.0:9464 for
    /// every interface).
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub listen: String,

    /// How many processes and futex words get their own labelled series, and how many
    /// command names get their own `ttop_process_group_*_total` counters (every other
    /// process adds to one `comm=""` series): the series stay bounded however many
    /// processes come and go.
    #[arg(long = "top", value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub top: u16,

    /// What ranks the command names that get their own counters: cpu (on-CPU seconds),
    /// runq-wait (seconds waiting for a CPU), threads (threads created), futex-wait
    /// (seconds in futex waits); several add up (cpu,runq-wait).
    #[arg(long = "top-by", value_name = "KEY", value_enum, value_delimiter = ',',
          default_values_t = crate::serve::groups::DEFAULT_TOP_BY)]
    pub top_by: Vec<crate::serve::groups::TopBy>,

    #[command(flatten)]
    pub collect: CollectArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
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
            },
        }
    }
}

/// Shell completions for `shell`, generated from these definitions (they never drift).
pub fn completions(shell: Shell) -> Vec<u8> {
    use clap::CommandFactory;
    use clap_complete::{generate, shells};
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    match shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "ttop", &mut out),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "ttop", &mut out),
        Shell::Fish => generate(shells::Fish, &mut cmd, "ttop", &mut out),
    }
    out
}

#[path = "cli_man.rs"]
mod man;
pub use man::man_page;

/// The longest name the kernel keeps for a task (TASK_COMM_LEN 16, with its NUL).
pub const COMM_LEN: usize = 15;

/// `name` as /proc/PID/comm shows it: cut to 15 bytes (on a character boundary).
pub fn kernel_comm(name: &str) -> &str {
    let mut end = name.len().min(COMM_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// What to tell a person about a `--comm NAME` before watching starts: a name the kernel
/// cuts, and a name no process has now (`running`: how many processes have the name as
/// the kernel keeps it).
pub fn comm_notes(name: &str, running: usize) -> Vec<String> {
    let kept = kernel_comm(name);
    let mut notes = Vec::new();
    if kept != name {
        notes.push(format!(
            "--comm {name}: the kernel keeps {COMM_LEN} characters of a name, so processes \
             named '{kept}' are watched"
        ));
    }
    if running == 0 {
        notes.push(format!(
            "--comm {kept}: no process has this name now (names as in /proc/PID/comm, \
             e.g. `ps -eo comm`); one that starts later is watched"
        ));
    }
    notes
}

/// -p takes process IDs: a thread's ID (its `Tgid` is another) is refused, naming its
/// process. `tgid_of` reads a task's process ID and name (None: no such task).
pub fn check_processes(
    pids: &[u32],
    tgid_of: impl Fn(u32) -> Option<(u32, String)>,
) -> Result<(), String> {
    for &pid in pids {
        if let Some((tgid, name)) = tgid_of(pid)
            && tgid != pid
        {
            return Err(format!(
                "{pid} is a thread of process {tgid} ({name}), not a process: -p takes \
                 process IDs (-p {tgid}; Enter on it in the dashboard shows its threads)"
            ));
        }
    }
    Ok(())
}

/// A task's process ID and its process's name, from /proc/PID/status (a thread's ID
/// works there too, though /proc does not list it).
pub fn tgid_of(pid: u32) -> Option<(u32, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()?;
    let name = std::fs::read_to_string(format!("/proc/{tgid}/comm")).unwrap_or_default();
    Some((tgid, name.trim_end().to_string()))
}

/// Parse --count: a number of intervals, at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of intervals: COUNT is 1 or more"
        )),
    }
}

/// Parse a span for rotation and retention: a duration (see `parse_duration`) or days
/// with a d suffix ("7d").
pub fn parse_span(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Some(days) = t.strip_suffix('d') {
        let d = days
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0 && *v < 1e6)
            .ok_or_else(|| format!("'{s}' is not a duration (examples: 30s, 15m, 1h, 7d)"))?;
        return Ok(Duration::from_secs_f64(d * 86_400.0));
    }
    parse_duration(t).map_err(|_| format!("'{s}' is not a duration (examples: 30s, 15m, 1h, 7d)"))
}

/// Parse a size: bytes, or with a K/M/G/T suffix (powers of 1024; a trailing B is allowed).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().trim_end_matches(['B', 'b']);
    let (num, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("'{s}' is not a size (examples: 500M, 2G)")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale as f64)
        .filter(|v| v.is_finite() && *v >= 1.0 && *v < 1e18)
        .map(|v| v as u64)
        .ok_or_else(|| format!("'{s}' is not a size (examples: 500M, 2G)"))
}

/// Parse a duration: plain seconds or with an s/m/h suffix ("90", "1.5h", "15m").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 's')) => (&t[..i], 1.0),
        _ => (t, 1.0),
    };
    let secs = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite() && *v > 0.0 && *v < 1e9)
        .ok_or_else(|| format!("'{s}' is not a duration (examples: 90, 30s, 15m, 2h)"))?;
    Ok(Duration::from_secs_f64(secs))
}

/// Parse an interval in seconds: "1", "0.5", "2s", "100ms".
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1.0)
    } else {
        (t, 1.0)
    };
    let secs: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds (examples: 1, 0.5, 250ms)"))?;
    let secs = secs * scale;
    if !secs.is_finite() || !(0.1..=3600.0).contains(&secs) {
        return Err(format!(
            "interval must be between 0.1 and 3600 seconds, got '{s}'"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
