//! `ttop replay`'s arguments.

use std::path::PathBuf;

use clap::Args;

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
