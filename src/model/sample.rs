//! A Sample is what one tick collected: raw, cumulative counters exactly as read from
//! /proc and from the BPF maps. Rates are never computed here (see `derive`).
//! Samples are what a recording stores, so every field is serde-serialisable.

use std::sync::Arc;

use super::name::Name;
use serde::{Deserialize, Serialize};

/// Facts about the machine that do not change during a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub host: String,
    pub kernel: String,
    pub ncpus: u32,
    /// USER_HZ: the unit of /proc tick counters.
    pub clk_tck: u64,
    pub page_size: u64,
    /// Seconds since boot when the session started.
    pub boot_time_s: u64,
}

/// How the sample was collected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    /// True when the eBPF collector is running.
    pub bpf: bool,
    /// Why eBPF is off or partly off, and what to do about it (shown as a banner).
    pub problems: Vec<String>,
    /// What this kernel let ttop measure, and through which hooks (empty in recordings
    /// made before ttop kept it: then everything they hold was measured).
    #[serde(default)]
    pub features: Vec<super::features::Feature>,
}

/// One `cpuN` line of /proc/stat, in clock ticks (cumulative).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub cpu: u32,
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// System-wide counters from /proc/stat and /proc/loadavg.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcStat {
    pub cpus: Vec<CpuTimes>,
    /// Cumulative context switches (`ctxt`).
    pub ctxt: u64,
    /// Cumulative forks (`processes`).
    pub forks: u64,
    /// Instantaneous runnable count (`procs_running`): the kernel's own sum of nr_running.
    pub procs_running: u32,
    pub procs_blocked: u32,
    pub loadavg: [f32; 3],
    pub uptime_s: f64,
}

/// One thread as the /proc scan saw it (/proc/PID/task/TID/stat).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskScan {
    pub tid: u32,
    /// Inline (a comm is at most 15 bytes): the scanner keeps last tick's tasks and
    /// hands a copy to each Sample, 10,000 of them a tick with a 10,000-thread process,
    /// and an `Arc` cost two atomic counts and a free for each (two thirds of the scan
    /// loop's own time). Serialised as a plain string.
    pub comm: Name,
    pub state: char,
    /// Cumulative user and system time in clock ticks.
    pub utime: u64,
    pub stime: u64,
}

/// One process as the /proc scan saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcScan {
    pub pid: u32,
    pub ppid: u32,
    /// Inline, as a thread's; serde writes it as a plain string.
    pub comm: Name,
    /// Shared with the Frame rows (and the scanner's cmdline cache) instead of copied
    /// every tick; serde writes it as a plain string.
    /// Read once per new process; empty for kernel threads.
    pub cmdline: Arc<str>,
    pub state: char,
    /// num_threads from /proc/PID/stat.
    pub num_threads: u32,
    /// Cumulative utime+stime of the whole thread group (includes exited threads).
    pub utime: u64,
    pub stime: u64,
    pub rss_pages: u64,
    /// Start time in clock ticks after boot: tells a reused PID from the old one.
    pub starttime: u64,
    /// The threads the scan found (empty when the task directory vanished mid-scan).
    pub tasks: Vec<TaskScan>,
    /// Its cgroup v2 path (/proc/PID/cgroup's "0::" line), shared among the processes of
    /// one cgroup; empty on a host without cgroup v2 and in older recordings (and then
    /// not written, so those read back byte for byte).
    #[serde(default, skip_serializing_if = "str_empty")]
    pub cgroup: Arc<str>,
    /// priority and nice from /proc/PID/stat (top's PR and NI); None in recordings made
    /// before ttop kept them (and then not written, as cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Major page faults of the process (majflt in /proc/PID/stat), cumulative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub majflt: Option<u64>,
    /// The real uid (/proc/PID/status), and its name in /etc/passwd (empty when the file
    /// does not name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(default, skip_serializing_if = "str_empty")]
    pub user: Arc<str>,
    /// voluntary_ctxt_switches and nonvoluntary_ctxt_switches of /proc/PID/status
    /// (the thread group leader's own), cumulative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx_voluntary: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx_involuntary: Option<u64>,
}

fn str_empty(s: &Arc<str>) -> bool {
    s.is_empty()
}

/// Per-CPU scheduler counters from BPF (cumulative, except runq_max).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfCpu {
    pub cpu: u32,
    pub switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    /// Integral of rq->nr_running over time (task*ns), extrapolated to the sample time.
    pub runq_area_ns: u128,
    /// Largest rq->nr_running seen since the previous sample (interval-scoped).
    pub runq_max: u32,
    /// rq->nr_running at the last scheduler event on this CPU.
    pub runq_now: u32,
}

/// Per-thread BPF counters (cumulative since ttop first saw the thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfThread {
    pub tid: u32,
    pub tgid: u32,
    pub oncpu_ns: u64,
    pub runq_wait_ns: u64,
    pub switches: u64,
    /// Off-CPU time by cause (`model::procs::wall::OFF_CAUSES`), open sleep included.
    #[serde(
        default,
        skip_serializing_if = "all_zero",
        deserialize_with = "off_ns_any_len"
    )]
    pub off_ns: [u64; OFF_CAUSES],
    /// Wall-clock time on a CPU (oncpu_ns is the task's runtime, which leaves out
    /// interrupts and steal while it held the CPU), open stretch included.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oncpu_wall_ns: u64,
}

/// Per-process BPF counters (cumulative) for what outlives threads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfProc {
    pub tgid: u32,
    pub created: u64,
    pub exited: u64,
    pub ghosts: u64,
    pub dead_oncpu_ns: u64,
    pub dead_runq_wait_ns: u64,
    pub ghost_oncpu_ns: u64,
    /// The group leader's comm when it exited (empty while it lives).
    pub comm: String,
    /// Off-CPU time of exited threads by cause.
    #[serde(
        default,
        skip_serializing_if = "all_zero",
        deserialize_with = "off_ns_any_len"
    )]
    pub dead_off_ns: [u64; OFF_CAUSES],
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dead_oncpu_wall_ns: u64,
}

/// How many causes the off-CPU time is split into (bpf/ttop.h enum ttop_split).
pub const OFF_CAUSES: usize = 10;

/// Off-CPU time by cause as recorded: recordings made before the kernel-lock causes
/// (8 of them) load with those two at 0 (and the features say they were not measured).
fn off_ns_any_len<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u64; OFF_CAUSES], D::Error> {
    let v: Vec<u64> = Deserialize::deserialize(d)?;
    if v.len() > OFF_CAUSES {
        return Err(serde::de::Error::invalid_length(
            v.len(),
            &"at most 10 off-CPU causes",
        ));
    }
    let mut out = [0; OFF_CAUSES];
    out[..v.len()].copy_from_slice(&v);
    Ok(out)
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn all_zero(v: &[u64; OFF_CAUSES]) -> bool {
    v.iter().all(|x| *x == 0)
}

/// Ghost threads of one process that had the same name (cumulative).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GhostName {
    pub tgid: u32,
    pub comm: String,
    pub count: u64,
    pub oncpu_ns: u64,
}

/// Events lost because a map was full, by map (cumulative).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Drops {
    /// Thread table full: a thread went unaccounted.
    pub threads: u64,
    /// Process table full.
    pub procs: u64,
    /// sched_switch events the kernel did not deliver (the next switch on that CPU
    /// named a different previous task). On-CPU time stays exact (it comes from the
    /// kernel's own runtime counter); run-queue wait and switch counts lose that event.
    #[serde(default)]
    pub sched_gaps: u64,
    /// Ghost-name table full (per-process ghost counts stay exact).
    #[serde(default)]
    pub ghost_names: u64,
    /// Per-thread latency table full: a thread's scheduling latencies went uncounted.
    #[serde(default)]
    pub lat_threads: u64,
    /// Latency samples discarded because a missed sched_switch made the wait unknowable.
    #[serde(default)]
    pub lat_stale: u64,
    /// IPI sender table full.
    #[serde(default)]
    pub ipi_senders: u64,
}

/// Everything the eBPF side collected in one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfSample {
    pub cpus: Vec<BpfCpu>,
    pub threads: Vec<BpfThread>,
    pub procs: Vec<BpfProc>,
    pub drops: Drops,
    /// Ghost threads by (process, name).
    #[serde(default)]
    pub ghost_names: Vec<GhostName>,
    /// Largest system-wide runnable count seen since the previous sample.
    pub runq_peak: u32,
    /// Scheduling latency histograms, per CPU and per thread.
    #[serde(default)]
    pub latency: super::latency::sample::LatencySample,
    /// Threads in an uninterruptible sleep at the read, longest first (at most
    /// BLOCKED_ROWS).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedThread>,
}

/// Rows of `BpfSample::blocked` kept per tick: the longest sleeps.
pub const BLOCKED_ROWS: usize = 20;

/// A thread blocked (uninterruptible: block I/O, a page fault, another D wait) at the
/// read, with the kernel stack it sleeps in, named at collection (a recording is
/// replayed where this kernel's symbols are not).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockedThread {
    pub tid: u32,
    pub tgid: u32,
    /// The thread's name (/proc/PID/task/TID/comm at the read; empty if it was gone).
    pub comm: String,
    /// The part of the time split it is in: an index into OFF_CAUSES' names (io, fault
    /// or uninterruptible).
    pub cause: u8,
    /// How long it had been asleep at the read.
    pub for_ns: u64,
    /// Its kernel stack at the read (what /proc/PID/stack shows), innermost first, the
    /// scheduler's own frames left out; empty when not known (no task iterators on this
    /// kernel, or it woke and slept again between the map's read and the stack's).
    pub stack: Vec<String>,
}

/// The processes a session watches (ttop -p / --comm), and the PIDs that matched at
/// this tick. Panels are scoped to them; None means the whole machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilterSpec {
    pub pids: Vec<u32>,
    pub comm: Option<String>,
    /// PIDs that matched when the sample was taken.
    #[serde(default)]
    pub matched: Vec<u32>,
    /// ttop --cgroup: the processes in this cgroup and below it (a path below the
    /// cgroup2 mount); the cgroup view shows that subtree.
    #[serde(default)]
    pub cgroup: Option<String>,
}

/// What one tick collected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Sequence number within the session, from 0.
    pub seq: u64,
    /// Wall clock (Unix epoch, ns) at collection.
    pub wall_ns: u64,
    /// CLOCK_MONOTONIC (ns) at collection; the same clock as bpf_ktime_get_ns().
    pub mono_ns: u64,
    pub mode: Mode,
    pub stat: ProcStat,
    pub procs: Vec<ProcScan>,
    pub bpf: Option<BpfSample>,
    /// Set when the session watches only some processes.
    #[serde(default)]
    pub filter: Option<FilterSpec>,
    /// Futexes, kernel locks and mmap_lock from eBPF (bpf/contention.bpf.c).
    #[serde(default)]
    pub contention: Option<super::contention::ContentionSample>,
    /// IPIs and TLB shootdowns from eBPF (bpf/irq.bpf.c).
    #[serde(default)]
    pub irq: Option<super::irq::IrqSample>,
    /// The kernel's own IPI counters (/proc/interrupts), read with the BPF maps.
    #[serde(default)]
    pub interrupts: super::irq::ProcInterrupts,
    /// How the scan went as top's scan would have: what it missed and why (None in
    /// recordings made before ttop paced its scan to top's).
    #[serde(default)]
    pub top_scan: Option<TopScan>,
    /// On-CPU stack samples of the interval (`--profile`; None when off, and in
    /// recordings made before ttop sampled stacks).
    #[serde(default)]
    pub profile: Option<super::profile::ProfileSample>,
    /// cgroup v2 counters from cgroupfs (None without a cgroup2 mount, and in recordings
    /// made before ttop read them).
    #[serde(default)]
    pub cgroups: Option<super::cgroup::CgroupSample>,
    /// ttop's own cost: its CPU, memory and eBPF run time (None in recordings made
    /// before ttop measured it).
    #[serde(default)]
    pub own: Option<super::own::OwnSample>,
}

/// What the /proc scan (paced to top's, see collect/procfs/top_pace.rs) missed and why. The
/// threads it read are in `Sample::procs`; these are the ones top would not have shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TopScan {
    /// Wall time the scan took, and the part of it spent waiting to keep top's pace.
    pub scan_ns: u64,
    pub paced_ns: u64,
    /// Wall time top's own scan would have taken at the pace used.
    pub top_ns: u64,
    /// top's CPU cost per thread on this machine (measured by ttop at start), and the
    /// runnable threads per CPU besides top that stretched its wall time.
    pub thread_cost_ns: u32,
    pub others_per_cpu: f32,
    /// The pacing reached its cap: the rest of the scan ran at ttop's own speed.
    pub capped: bool,
    /// Threads listed, but gone when their turn came.
    pub vanished: u32,
    /// Threads listed after a vanished one of the same process: top stops reading a
    /// process's threads at the first that vanished (procps `readeither`), so it never
    /// shows them. ttop reads them anyway, to say how many were running.
    pub skipped: u32,
    pub skipped_running: u32,
    /// Threads alive once their process was read that its listing lacked: created after
    /// top listed the process. Looked for only in processes whose threads were born or
    /// exited during the interval (or every process, without eBPF).
    pub unlisted: u32,
    pub unlisted_running: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording made before the kernel-lock causes holds 8 of them: it loads, the two
    /// new ones 0 (its features say they were not measured); more than 10 is an error.
    #[test]
    fn off_cpu_causes_of_older_recordings_load() {
        let t: BpfThread =
            serde_json::from_str(r#"{"tid":1,"tgid":1,"oncpu_ns":0,"runq_wait_ns":0,"switches":0,"off_ns":[1,2,3,4,5,6,7,8]}"#)
                .unwrap();
        assert_eq!(t.off_ns, [1, 2, 3, 4, 5, 6, 7, 8, 0, 0]);
        let long = r#"{"tid":1,"tgid":1,"oncpu_ns":0,"runq_wait_ns":0,"switches":0,"off_ns":[0,0,0,0,0,0,0,0,0,0,0]}"#;
        assert!(serde_json::from_str::<BpfThread>(long).is_err());
        let back: BpfThread = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    /// ProcScan and TaskScan as they were when comm and cmdline were Strings.
    #[derive(Serialize)]
    struct StringTask {
        tid: u32,
        comm: String,
        state: char,
        utime: u64,
        stime: u64,
    }

    #[derive(Serialize)]
    struct StringProc {
        pid: u32,
        ppid: u32,
        comm: String,
        cmdline: String,
        state: char,
        num_threads: u32,
        utime: u64,
        stime: u64,
        rss_pages: u64,
        starttime: u64,
        tasks: Vec<StringTask>,
    }

    /// Shared strings (`Arc<str>`) serialise byte for byte as the Strings they replaced,
    /// so recordings and `--json` are unchanged, and old recordings read back the same.
    #[test]
    fn shared_strings_serialise_as_strings() {
        for (comm, cmd) in [
            ("postgres", "postgres: checkpointer"),
            ("", ""),
            ("\x1b[2Jevil\x07", "./evil \x1b]0;pwned\x07 \"q\" \\ \n"),
            ("名前\u{202e}", "/bin/x \u{feff}"),
        ] {
            let new = ProcScan {
                pid: 7,
                ppid: 1,
                comm: comm.into(),
                cmdline: cmd.into(),
                state: 'S',
                num_threads: 1,
                utime: 3,
                stime: 4,
                rss_pages: 5,
                starttime: 6,
                tasks: vec![TaskScan {
                    tid: 7,
                    comm: comm.into(),
                    state: 'R',
                    utime: 1,
                    stime: 2,
                }],
                ..Default::default()
            };
            let old = StringProc {
                pid: 7,
                ppid: 1,
                comm: comm.to_string(),
                cmdline: cmd.to_string(),
                state: 'S',
                num_threads: 1,
                utime: 3,
                stime: 4,
                rss_pages: 5,
                starttime: 6,
                tasks: vec![StringTask {
                    tid: 7,
                    comm: comm.to_string(),
                    state: 'R',
                    utime: 1,
                    stime: 2,
                }],
            };
            let bytes = serde_json::to_vec(&old).unwrap();
            assert_eq!(serde_json::to_vec(&new).unwrap(), bytes, "{comm:?}");
            let back: ProcScan = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(back, new);
        }
    }
}
