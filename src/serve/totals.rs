//! Counters since `serve` (or `record --metrics`) started: each Frame's per-interval
//! counts added up, so a scrape at any interval loses nothing between two scrapes
//! (`rate()` and `increase()` work on them). A count no probe measured stays None and
//! its family is left out, never exported as 0.

use std::collections::BTreeMap;

use crate::model::Frame;

/// The IPI kinds a CPU receives, as `ttop_cpu_ipis_per_second` labels them.
pub const IPI_KINDS: [&str; 5] = [
    "call",
    "call_function",
    "call_function_single",
    "reschedule",
    "irq_work",
];

/// The TLB flush reasons of tlb:tlb_flush.
pub const TLB_REASONS: [&str; 4] = [
    "task_switch",
    "remote_shootdown",
    "local_shootdown",
    "local_mm_shootdown",
];

/// One CPU's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuTotals {
    /// Busy seconds per /proc/stat (util share times the interval).
    pub busy_s: f64,
    pub switches: Option<u64>,
    pub migrations: Option<u64>,
    pub tlb_shootdowns: Option<u64>,
    /// By IPI_KINDS. The call/call-single split is counted only while asked for (the
    /// IPI view): its totals are None from the first frame without it on.
    pub ipis: Option<[Option<u64>; 5]>,
}

/// Everything that counts, summed over the frames seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub frames: u64,
    /// Sum of the measured intervals.
    pub seconds: f64,
    pub threads_created: Option<u64>,
    pub threads_exited: Option<u64>,
    pub ghost_threads: Option<u64>,
    /// Context switches and forks per /proc/stat.
    pub ctxt: u64,
    pub forks: u64,
    /// Futex waits that slept, and their time, over every process.
    pub futex_waits: Option<u64>,
    pub futex_wait_s: Option<f64>,
    /// Kernel-lock contentions and wait seconds by lock type.
    pub locks: BTreeMap<String, (u64, f64)>,
    pub locks_measured: bool,
    /// On-CPU seconds of all processes: eBPF's (exited threads included) and the scan's.
    pub cpu_true_s: Option<f64>,
    pub cpu_scan_s: f64,
    /// Seconds threads spent runnable, waiting for a CPU.
    pub runq_wait_s: Option<f64>,
    pub cpus: BTreeMap<u32, CpuTotals>,
    /// tlb:tlb_flush by TLB_REASONS; remote flushes run and TLB IPIs sent.
    pub tlb_reasons: [Option<u64>; 4],
    pub tlb_shootdowns: Option<u64>,
    pub tlb_ipis: Option<u64>,
    /// Scheduling-latency samples (wakeup to on-CPU) counted by the latency probe.
    pub sched_wakeups: Option<u64>,
    /// Scheduling latency per CPU, summed.
    pub latency: BTreeMap<u32, super::histogram::LatHist>,
    /// Futex waits that slept, by duration (None: not measured).
    pub futex_wait_hist: Option<super::histogram::LatHist>,
    pub drops: u64,
    pub sched_gaps: u64,
    pub stacks_unstored: u64,
}

pub(super) fn add(acc: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0) + v);
    }
}

pub(super) fn addf(acc: &mut Option<f64>, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        *acc = Some(acc.unwrap_or(0.0) + v);
    }
}

impl Totals {
    /// Add the interval `f` to the counters.
    pub fn add(&mut self, f: &Frame) {
        let iv = f.interval_s;
        // What eBPF measures starts at 0, not absent, even while no process counts
        // (a `--comm` that has not started yet): increase() needs the series at 0 first.
        if f.mode == "bpf" {
            for c in [
                &mut self.threads_created,
                &mut self.threads_exited,
                &mut self.ghost_threads,
            ] {
                c.get_or_insert(0);
            }
            self.cpu_true_s.get_or_insert(0.0);
            self.runq_wait_s.get_or_insert(0.0);
        }
        if f.contention.contention_measured.futex {
            self.futex_waits.get_or_insert(0);
            self.futex_wait_s.get_or_insert(0.0);
        }
        self.frames += 1;
        self.seconds += iv;
        self.ctxt += f.ctxt;
        self.forks += f.forks;
        for p in &f.procs {
            add(&mut self.threads_created, p.threads_created);
            add(&mut self.threads_exited, p.threads_exited);
            add(&mut self.ghost_threads, p.ghost_threads);
            add(&mut self.futex_waits, p.futex_slept.get());
            addf(
                &mut self.futex_wait_s,
                p.futex_wait_ms.get().map(|ms| ms / 1e3),
            );
            addf(&mut self.cpu_true_s, p.cpu_pct_true.map(|c| c / 100.0 * iv));
            self.cpu_scan_s += p.cpu_pct_scan.get().map_or(0.0, |c| c / 100.0 * iv);
            addf(&mut self.runq_wait_s, p.runq_wait_ms.map(|ms| ms / 1e3));
        }
        if f.contention.contention_measured.locks {
            self.locks_measured = true;
        }
        for t in &f.contention.lock_types {
            let e = self.locks.entry(t.kind.clone()).or_default();
            e.0 += t.contended;
            e.1 += t.wait_ns as f64 / 1e9;
        }
        for c in &f.cpus {
            let e = self.cpus.entry(c.cpu).or_default();
            e.busy_s += c.util / 100.0 * iv;
            add(&mut e.switches, c.switches);
            add(&mut e.migrations, c.migrations);
            add(&mut e.tlb_shootdowns, c.tlb_shootdowns);
            if let Some(i) = &c.ipi {
                let a = e.ipis.get_or_insert([Some(0); 5]);
                for (k, n) in [
                    Some(i.call),
                    i.call_function,
                    i.call_function_single,
                    Some(i.reschedule),
                    Some(i.irq_work),
                ]
                .into_iter()
                .enumerate()
                {
                    a[k] = a[k].zip(n).map(|(t, n)| t + n);
                }
            }
        }
        if let Some(t) = &f.tlb {
            let reasons = [
                t.task_switch,
                t.remote_shootdown,
                t.local_shootdown,
                t.local_mm_shootdown,
            ];
            for (acc, v) in self.tlb_reasons.iter_mut().zip(reasons) {
                add(acc, v);
            }
            add(&mut self.tlb_shootdowns, t.shootdowns);
            add(&mut self.tlb_ipis, t.ipis);
        }
        if let Some(l) = &f.latency {
            add(
                &mut self.sched_wakeups,
                Some(l.cpus.iter().map(|c| c.count).sum()),
            );
            for c in &l.cpus {
                self.latency
                    .entry(c.cpu)
                    .or_default()
                    .add(&c.hist, c.sum_ns);
            }
        }
        let c = &f.contention;
        if !c.futex_wait_hist.is_empty() {
            self.futex_wait_hist
                .get_or_insert_default()
                .add_log2(&c.futex_wait_hist, c.futex_wait_hist_ns);
        } else if c.contention_measured.futex {
            // Measured, nothing yet (the first interval): the series starts at 0.
            self.futex_wait_hist
                .get_or_insert_default()
                .add_log2(&[], 0);
        }
        self.drops += f.drops;
        self.sched_gaps += f.drops_by_map.sched_gaps;
        self.stacks_unstored += f.contention.contention_drops.stacks;
    }
}
