//! Command line (clap derive). Flag and subcommand names are a public contract.

use std::time::Duration;

use clap::{Parser, Subcommand};

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

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the libbpf log and what loaded (debugging aid).
    Probe,
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
}
