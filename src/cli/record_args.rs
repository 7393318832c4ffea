//! `ttop record`'s flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::CollectArgs;
use super::parse::{parse_duration, parse_size, parse_span};

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
    /// and how many command names and cgroups get their own counters (default 20; see
    /// `ttop serve`).
    #[arg(long = "top", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100), requires = "metrics")]
    pub top: Option<u16>,

    /// With --metrics: what ranks the command names and cgroups that get their own counters (as
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
