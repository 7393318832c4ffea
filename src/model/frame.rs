//! A Frame is what the screen (and `--json`) shows for one interval: rates, averages,
//! gaps between the eBPF truth and the /proc scan. Built only by `derive`.
//!
//! Field names are a public contract (`ttop --json`): add fields, never rename them.
//! Counts are per interval; `interval_s` says how long the interval was.

use crate::model::procs::wall::TimeSplit;
use serde::Serialize;

use super::opt::Opt;
pub use super::procs::proc_frame::ProcFrame;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Frame {
    /// Wall clock at the end of the interval, seconds since the Unix epoch.
    pub t: f64,
    /// Measured length of the interval (not the nominal one).
    pub interval_s: f64,
    /// "bpf" (eBPF and /proc) or "procfs" (the /proc scan only).
    pub mode: String,
    /// The processes this session watches ("pid 4242,4243", "comm postgres"); null when
    /// it watches the whole machine. With a filter, runnable counts are theirs.
    pub filter: Option<String>,
    /// What is missing and how to fix it; empty when everything works.
    pub problems: Vec<String>,
    /// What this kernel let ttop measure and how (Sample::mode's): the views say why a
    /// figure is `-`. Not in the JSON frames (`ttop probe --json` prints it).
    #[serde(skip)]
    pub features: Vec<super::features::Feature>,
    pub host: String,
    pub kernel: String,
    pub ncpus: u32,
    pub uptime_s: f64,
    pub seq: u64,
    pub runnable: Runnable,
    /// Context switches and forks in the interval, per /proc/stat (the kernel's own
    /// counters, read at the same instant as the BPF maps).
    pub ctxt: u64,
    pub forks: u64,
    pub cpus: Vec<CpuFrame>,
    pub procs: Vec<ProcFrame>,
    /// Ghost threads grouped by process and name, biggest first.
    pub ghost_groups: Vec<super::procs::ghosts::GhostGroup>,
    /// Threads blocked (uninterruptible) at the tick, longest first, with the kernel
    /// stack they sleep in; null without eBPF (not measured).
    pub blocked: Option<Vec<super::procs::blocked::BlockedRow>>,
    /// Per-thread rows: in the JSON output only with a filter (record::dump::json_line).
    #[serde(skip)]
    pub threads: Vec<ThreadFrame>,
    /// Events lost this interval because a BPF map was full (all maps) or a lock wait
    /// nested deeper than tracked, plus scheduler events the kernel never delivered
    /// (`drops_by_map.sched_gaps`) and latency samples they made unknowable
    /// (`lat_stale`). A stack that could not be stored loses a caller's name, not an
    /// event: it is counted apart (`contention_drops.stacks`). The header shows this
    /// figure, red when `lost_data` holds (a figure on screen is a floor).
    pub drops: u64,
    /// Events lost this interval, by map.
    pub drops_by_map: DropsFrame,
    /// ttop's own cost: its process's CPU, its memory, its eBPF programs' run time (the
    /// JSON `self`; null in replays of recordings made before it was measured).
    #[serde(rename = "self")]
    pub own: Option<super::own::OwnFrame>,
    /// TLB flushes by reason, and remote shootdowns (null without eBPF).
    pub tlb: Option<super::irq::TlbFrame>,
    /// Who sent IPIs in the interval and for what, most first.
    pub ipi_senders: Vec<super::irq::IpiSenderFrame>,
    /// Scheduling latency (runnable -> on CPU) per CPU and per thread (null without eBPF).
    pub latency: Option<super::latency::LatencyFrame>,
    /// `futexes`, `futex_threads`, `locks`, `mmap_lock`, `contention_drops`.
    #[serde(flatten)]
    pub contention: super::contention::frame::ContentionFrame,
    /// The seeds' patterns seen in the last intervals, active first, most severe first
    /// (see `findings`; empty until a `findings::Window` has judged the frame).
    pub findings: Vec<super::findings::Finding>,
    /// The interval's on-CPU stacks (`--profile`; null when stacks are not sampled).
    pub profile: Option<super::profile::ProfileFrame>,
    /// Cgroups (v2) as a tree, parents first: CPU, throttling, pressure, memory, I/O and
    /// their processes (empty without a cgroup2 mount).
    pub cgroups: Vec<super::cgroup::CgroupFrame>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Runnable {
    /// Time-weighted average of runnable threads (running + waiting in run queues),
    /// summed over CPUs; null without eBPF.
    pub true_avg: Option<f64>,
    /// Largest number of runnable threads seen at once during the interval.
    pub true_max: Option<f64>,
    /// Threads in state R found by a top-style /proc scan.
    pub scan_running: u32,
    /// /proc/stat procs_running at the end of the interval (an instant, not an average).
    pub procs_running: u32,
    pub procs_blocked: u32,
    pub loadavg: [f32; 3],
    /// true_avg / scan_running when the scan sees markedly fewer runnable threads
    /// than there really were (ratio >= 1.5 and a gap of at least one thread).
    pub undercount: Option<f64>,
    /// Threads in state R the scan found, including those top's rule leaves out
    /// (`scan_running` + `top_view.skipped_running` + `top_view.unlisted_running`):
    /// what a scan that reads every thread at the same moments would count.
    pub scan_all_running: u32,
    /// How the scan went as top's would have, and the gap split into its causes (null
    /// for recordings made before ttop paced its scan to top's, and with an unpaced scan).
    pub top_view: Option<super::procs::top_view::TopView>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuFrame {
    pub cpu: u32,
    /// Busy share of the interval, percent (100 - idle - iowait).
    pub util: f64,
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
    /// Time-weighted average run-queue length (running + waiting); null without eBPF.
    pub runq_avg: Option<f64>,
    pub runq_max: Option<u32>,
    /// Context switches on this CPU during the interval.
    pub switches: Option<u64>,
    /// Tasks migrated to this CPU during the interval.
    pub migrations: Option<u64>,
    /// IPIs this CPU received, by type (eBPF).
    pub ipi: Option<super::irq::IpiRecvFrame>,
    /// IPIs this CPU sent, by purpose (eBPF).
    pub ipi_sent: Option<super::irq::IpiSentFrame>,
    /// TLB shootdowns this CPU ran for other CPUs (eBPF; /proc/interrupts TLB counts the same).
    pub tlb_shootdowns: Option<u64>,
    /// The kernel's own IPI counters for this CPU (/proc/interrupts: RES, CAL, TLB, IWI).
    pub interrupts: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThreadFrame {
    pub tid: u32,
    pub pid: u32,
    pub comm: super::name::Name,
    pub state: char,
    /// The thread's utime+stime delta since the previous scan (all its ticks when it is
    /// new in a process that scan saw, as top -H counts it); null in its process's
    /// first interval.
    pub cpu_pct_scan: Opt<f64>,
    pub cpu_pct_true: Opt<f64>,
    pub runq_wait_ms: Opt<f64>,
    /// Where the thread's wall time went in the interval (seconds per part; null
    /// without eBPF and in the first interval).
    pub time: TimeSplit,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DropsFrame {
    pub threads: u64,
    pub procs: u64,
    pub sched_gaps: u64,
    pub lat_threads: u64,
    pub lat_stale: u64,
    pub ipi_senders: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_row_is_a_default_row_with_its_names() {
        let (comm, cmd): (super::super::name::Name, super::super::name::Name<31>) =
            ("postgres".into(), "postgres -D /db".into());
        let want = ProcFrame {
            pid: 7,
            comm: comm.clone(),
            cmdline: cmd.clone(),
            ..Default::default()
        };
        assert_eq!(ProcFrame::named(7, comm, cmd), want);
    }

    /// Rows are written 10,000 at a time: keep them small (see `opt` and `name`).
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn rows_stay_small() {
        // 256 before the everyday columns (USER, PR/NI, TIME+, START, switches, faults)
        // (+80) and the wall-time split (+48, twelve f32; ThreadFrame likewise).
        assert_eq!(std::mem::size_of::<ProcFrame>(), 384);
        assert_eq!(std::mem::size_of::<ThreadFrame>(), 104);
    }

    /// `--json` rows with shared strings read exactly as with Strings: the name and
    /// command line are JSON strings, escaped the same way.
    #[test]
    fn shared_strings_in_rows_serialise_as_strings() {
        let (comm, cmd) = ("\x1b[2Jevil\x07", "./evil \"q\" \\ \u{202e}");
        let row = ProcFrame {
            pid: 7,
            comm: comm.into(),
            cmdline: cmd.into(),
            ..Default::default()
        };
        let s = |v: &str| serde_json::to_string(v).unwrap();
        let want = format!(
            r#"{{"pid":7,"comm":{},"cmdline":{},"state":"#,
            s(comm),
            s(cmd)
        );
        assert!(serde_json::to_string(&row).unwrap().starts_with(&want));
        let t = ThreadFrame {
            tid: 8,
            pid: 7,
            comm: comm.into(),
            ..Default::default()
        };
        let want = format!(r#"{{"tid":8,"pid":7,"comm":{},"state":"#, s(comm));
        assert!(serde_json::to_string(&t).unwrap().starts_with(&want));
    }
}
