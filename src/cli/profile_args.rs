//! `ttop profile`'s flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse::parse_interval;

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
    /// --off-cpu: off-CPU nanoseconds), with source files and lines for user frames in
    /// binaries with DWARF line info.
    #[arg(long = "pprof", value_name = "FILE")]
    pub pprof: Option<PathBuf>,

    /// Run at real-time priority (SCHED_FIFO 1; needs root), as `ttop --rt`: on a
    /// saturated machine the thread that drains the samples is otherwise starved and
    /// the ring buffer drops them (off-CPU mode under thread churn: most of them).
    #[arg(long = "rt")]
    pub rt: bool,
}
