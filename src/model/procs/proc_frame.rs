//! A process's row of the Frame: what the process table, `--json`'s `procs` and the
//! per-process metrics show of one process for one interval. Built by `procs::rows`
//! (and the contention part by `contention::frame`); named `model::frame::ProcFrame`
//! too, where it stood before.

use serde::Serialize;

use crate::model::opt::Opt;
use crate::model::procs::wall::TimeSplit;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProcFrame {
    pub pid: u32,
    /// Shared with the Sample's ProcScan (no copy per frame); serialised as a string.
    pub comm: crate::model::name::Name,
    pub cmdline: crate::model::name::Name<31>,
    /// Scan state of the process ('R', 'S', 'D', ...); 'X' when it was gone at the scan.
    pub state: char,
    /// The process existed during the interval but was gone when /proc was scanned.
    pub gone: bool,
    /// The parent's PID at the scan (the previous scan's for a process gone at this one;
    /// 0 when never scanned). Kernel threads are kthreadd's (2) children.
    pub ppid: u32,
    /// Threads the /proc scan found.
    pub threads_seen: u32,
    /// Of those, threads in state R.
    pub running_seen: u32,
    /// Threads created / exited during the interval (eBPF).
    pub threads_created: Option<u64>,
    pub threads_exited: Option<u64>,
    /// Threads born and dead between two /proc scans: no scan ever saw them.
    pub ghost_threads: Option<u64>,
    /// CPU time (ms) those ghost threads used, which a thread scan attributes to nobody.
    pub ghost_cpu_ms: Opt<f64>,
    /// CPU% from utime+stime deltas in /proc/PID/stat: what a per-process scan (top,
    /// htop's process rows) shows; 100 = one CPU. The process's own counter holds its
    /// exited threads' CPU too, ghosts included. Null in the process's first interval
    /// (no earlier read to take a delta from) and when it was gone at the scan.
    pub cpu_pct_scan: Opt<f64>,
    /// The per-thread scan's CPU% for the process: the sum over the threads listed in
    /// /proc/PID/task of each one's own utime+stime delta (a thread new since the last
    /// scan counts all its ticks, as top -H counts it): what rows of its threads add up
    /// to. (procps top -H shows the process's whole counter on the main thread's row
    /// instead of the main thread's own.) Null when cpu_pct_scan is, or when the
    /// previous scan read none of its threads.
    pub cpu_pct_scan_threads: Opt<f64>,
    /// CPU% from on-CPU time measured at context switches, exited threads included.
    pub cpu_pct_true: Option<f64>,
    /// Time this process's threads spent runnable but waiting for a CPU, ms.
    pub runq_wait_ms: Option<f64>,
    pub rss_kb: u64,
    /// CPU percentage points a per-thread scan (each thread's own counter) misses:
    /// max(0, cpu_pct_true - cpu_pct_scan_threads), the CPU of threads that ended
    /// between two scans (their last stretch, and ghosts whole); all of cpu_pct_true
    /// when the process was gone at the scan. A per-process scan misses none of that
    /// (see cpu_pct_scan). Null without eBPF and in the process's first interval.
    pub scan_miss: Opt<f64>,
    /// Its threads that were runnable (on a CPU or waiting for one), time-weighted.
    pub runnable_avg: Opt<f64>,
    /// Remote TLB flushes this process requested (each one runs flush_tlb_func on
    /// another CPU), and IPIs it sent: all, and those for TLB flushes.
    pub tlb_shootdowns_caused: Opt<u64>,
    pub ipis_caused: Opt<u64>,
    pub tlb_ipis_caused: Opt<u64>,
    /// Futex calls during the interval (eBPF; null when the futex probes are off or
    /// only waits that slept are counted, the default without -p: see
    /// `contention_measured.futex_calls`).
    pub futex_calls: Opt<u64>,
    /// Futex waits of its threads that slept during the interval (null when the futex
    /// probes are off).
    pub futex_slept: Opt<u64>,
    /// Time its threads spent blocked in futex wait calls, ms.
    pub futex_wait_ms: Opt<f64>,
    /// The name of its real uid (/proc/PID/status) in /etc/passwd, else the uid as a
    /// number; null when not read (gone at the scan, or a recording made before ttop
    /// kept it). The same for every field below.
    #[serde(serialize_with = "empty_is_null")]
    pub user: crate::model::name::Name,
    pub uid: Option<u32>,
    /// The kernel's priority and nice value (/proc/PID/stat; top's PR and NI: -100 to
    /// 39 and -20 to 19).
    pub priority: Option<i8>,
    pub nice: Option<i8>,
    /// CPU time used since it started, utime+stime of the whole process, in seconds
    /// (top's TIME+).
    pub cpu_time_s: Opt<f64>,
    /// When it started, Unix seconds (starttime in /proc/PID/stat after boot).
    pub start_time: Opt<f64>,
    /// Context switches per second of its main thread (/proc/PID/status): voluntary (it
    /// blocked) and involuntary (preempted); null in its first interval.
    pub ctx_switches_voluntary_per_s: Opt<f64>,
    pub ctx_switches_involuntary_per_s: Opt<f64>,
    /// Major page faults (that needed I/O) per second, majflt of /proc/PID/stat; null in
    /// its first interval.
    pub majflt_per_s: Opt<f64>,
    /// Where its threads' wall time went in the interval (thread-seconds per part,
    /// exited threads included; `model::procs::wall`); null without eBPF and in the
    /// first interval.
    pub time: TimeSplit,
}

/// An empty name as null (not read), any other as its text.
fn empty_is_null<S: serde::Serializer>(
    n: &crate::model::name::Name,
    s: S,
) -> Result<S::Ok, S::Error> {
    match n.is_empty() {
        true => s.serialize_none(),
        false => s.serialize_str(n),
    }
}

impl ProcFrame {
    /// A kernel thread (kthreadd or one of its children), as htop tells them.
    pub fn is_kernel_thread(&self) -> bool {
        self.pid == 2 || self.ppid == 2
    }

    /// What a per-thread scan misses of it, 0 when that is not measured: for
    /// highlighting and picking the worst row.
    #[inline]
    pub fn miss(&self) -> f64 {
        self.scan_miss.get().unwrap_or(0.0)
    }

    /// A row with its name and command line and every other field at its default.
    /// `ProcFrame { comm, cmdline, ..Default::default() }` would make two default
    /// strings and drop them again: four atomic operations per row on the one shared
    /// empty `Arc<str>`, a sixth of a derive at 10,000 processes.
    #[inline]
    pub fn named(
        pid: u32,
        comm: crate::model::name::Name,
        cmdline: crate::model::name::Name<31>,
    ) -> Self {
        ProcFrame {
            pid,
            comm,
            cmdline,
            state: char::default(),
            gone: false,
            ppid: 0,
            threads_seen: 0,
            running_seen: 0,
            threads_created: None,
            threads_exited: None,
            ghost_threads: None,
            ghost_cpu_ms: Opt::NONE,
            cpu_pct_scan: Opt::NONE,
            cpu_pct_scan_threads: Opt::NONE,
            cpu_pct_true: None,
            runq_wait_ms: None,
            rss_kb: 0,
            scan_miss: Opt::NONE,
            runnable_avg: Opt::NONE,
            tlb_shootdowns_caused: Opt::NONE,
            ipis_caused: Opt::NONE,
            tlb_ipis_caused: Opt::NONE,
            futex_calls: Opt::NONE,
            futex_slept: Opt::NONE,
            futex_wait_ms: Opt::NONE,
            time: TimeSplit::NONE,
            user: Default::default(),
            uid: None,
            priority: None,
            nice: None,
            cpu_time_s: Opt::NONE,
            start_time: Opt::NONE,
            ctx_switches_voluntary_per_s: Opt::NONE,
            ctx_switches_involuntary_per_s: Opt::NONE,
            majflt_per_s: Opt::NONE,
        }
    }
}
