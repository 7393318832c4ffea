//! `ttop serve`'s flags.

use clap::Args;

use super::CollectArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: PORT, :PORT (both on 127.0.0.1) or HOST:PORT (0.0.0.0:9464 for
    /// every interface).
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub listen: String,

    /// How many processes and futex words get their own labelled series, and how many
    /// command names and cgroups get their own `ttop_process_group_*_total` and
    /// `ttop_cgroup_*_total` counters (every other one adds to one `comm=""` or
    /// `cgroup=""` series): the series stay bounded however many come and go.
    #[arg(long = "top", value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub top: u16,

    /// What ranks the command names and cgroups that get their own counters: cpu (on-CPU
    /// seconds), runq-wait (seconds waiting for a CPU), threads (threads created),
    /// futex-wait (seconds in futex waits); several add up (cpu,runq-wait). Cgroups are
    /// ranked by cpu and runq-wait only (by cpu when neither is chosen).
    #[arg(long = "top-by", value_name = "KEY", value_enum, value_delimiter = ',',
          default_values_t = crate::serve::groups::DEFAULT_TOP_BY)]
    pub top_by: Vec<crate::serve::groups::TopBy>,

    #[command(flatten)]
    pub collect: CollectArgs,
}
