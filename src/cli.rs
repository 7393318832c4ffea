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
    #[arg(short = 'd', long = "delay", value_name = "SECONDS", default_value = "1", value_parser = parse_interval, global = true)]
    pub delay: Duration,

    /// Print one JSON object per interval on stdout (JSON Lines) instead of the dashboard.
    #[arg(long)]
    pub json: bool,

    /// With --json: stop after COUNT intervals.
    #[arg(short = 'n', long = "count", value_name = "COUNT")]
    pub count: Option<u64>,

    /// Do not load eBPF programs: show the /proc view only.
    #[arg(long = "no-bpf", global = true)]
    pub no_bpf: bool,

    /// Run the collector at real-time priority (SCHED_FIFO 1) so that a saturated
    /// machine cannot starve it. Needs root.
    #[arg(long = "rt", global = true)]
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

    /// When to use colour: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(
        long = "color",
        value_name = "WHEN",
        default_value = "auto",
        value_enum
    )]
    pub color: ColorWhen,

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
    /// Print the libbpf log and what loaded (debugging aid).
    Probe,
    /// Record Samples to a file without a dashboard (for nohup, tmux, systemd).
    Record(RecordArgs),
    /// Replay a recording in the dashboard, or print its frames with --json.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording to create (never overwritten; mode 0600: it holds command lines).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,

    /// Stop after this long: seconds, or with an s/m/h suffix (90, 15m, 2h).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Only these processes (-p 1,2 or -p 1 -p 2).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A recording made by `ttop record` or `ttop --record`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Print the recorded frames as JSON Lines (the schema of `ttop --json`).
    #[arg(long)]
    pub json: bool,

    /// Start with the process table narrowed to these PIDs (`p` changes it).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
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
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("0.1").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
        assert!(parse_interval("0.05").is_err());
        assert!(parse_interval("abc").is_err());
        assert!(parse_interval("-1").is_err());
        assert!(parse_interval("NaN").is_err());
        assert!(parse_interval("inf").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        for bad in ["", "0", "-5", "x", "5d", "NaNs", "infh", "1ms"] {
            assert!(parse_duration(bad).is_err(), "{bad} accepted");
        }
    }
}
