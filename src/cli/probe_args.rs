//! `ttop probe`'s flags.

use clap::Args;

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Also print libbpf's log: the verifier's log of every program this kernel rejected.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print the table as one JSON object (kernel, mode, features[], problems[]).
    #[arg(long)]
    pub json: bool,
}
