//! What the irq collector samples (cumulative): IPIs received and sent per CPU, TLB flushes
//! by reason, shootdowns, who sent them, which of these this kernel's hooks measured, and
//! the kernel's own /proc/interrupts counters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Order of `IrqCpu::recv` (enum ttop_ipi_recv in bpf/ttop.h).
pub const RECV_NAMES: [&str; 4] = [
    "call_function",
    "call_function_single",
    "reschedule",
    "irq_work",
];
/// Order of `IrqCpu::sent` and `IpiSender::kind` (enum ttop_ipi_sent).
pub const SENT_NAMES: [&str; 4] = ["reschedule", "tlb", "call", "other"];
pub const KIND_TLB: u32 = 1;
/// Order of `IrqCpu::tlb` (enum tlb_flush_reason in the kernel).
pub const TLB_REASONS: [&str; 6] = [
    "task_switch",
    "remote_shootdown",
    "local_shootdown",
    "local_mm_shootdown",
    "remote_send_ipi",
    "remote_wrong_cpu",
];

/// Per-CPU IPI and TLB counters from BPF (cumulative).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqCpu {
    pub cpu: u32,
    /// IPIs received, indexed like RECV_NAMES.
    pub recv: Vec<u64>,
    /// IPIs sent from this CPU (one per target), indexed like SENT_NAMES.
    pub sent: Vec<u64>,
    /// tlb:tlb_flush events on this CPU, indexed like TLB_REASONS.
    pub tlb: Vec<u64>,
    /// flush_tlb_func run here on behalf of another CPU (what /proc/interrupts TLB counts).
    pub tlb_shootdowns: u64,
    /// Remote TLB flushes this CPU queued for others.
    pub tlb_requests: u64,
}

/// Who sent IPIs (or queued remote calls) and for what (cumulative).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IpiSender {
    /// Current process at send time (0: idle or interrupt context on an idle CPU).
    pub tgid: u32,
    /// Index into SENT_NAMES.
    pub kind: u32,
    /// Function the IPI ran, resolved from the kernel symbols at collection ("" if unknown).
    pub func: String,
    /// IPIs actually sent (one per target CPU).
    pub ipis: u64,
    /// Remote calls queued (with or without an IPI).
    pub queued: u64,
}

/// Everything the irq collector read in one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqSample {
    pub cpus: Vec<IrqCpu>,
    pub senders: Vec<IpiSender>,
    /// Which of these counters this kernel's hooks fed (recordings made before ttop kept
    /// it: all of them).
    #[serde(default)]
    pub measured: IrqMeasured,
}

/// Which IPI and TLB counters were measured: a counter no hook fed is not measured
/// (null, `-`), never a zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqMeasured {
    /// `IrqCpu::recv` (irq_vectors:*_entry, x86). Where `recv_proc` is set, only its
    /// call/call-single split is used, fed while the split is asked for.
    pub recv: bool,
    /// IPIs received by kind and TLB shootdowns are the kernel's own counts
    /// (`Sample::interrupts`: x86 RES, CAL, IWI, TLB), not counted by a program.
    #[serde(default)]
    pub recv_proc: bool,
    /// Bumped each time the split's programs attach: an interval whose two Samples
    /// have `recv` and the same epoch was split whole.
    #[serde(default)]
    pub split_epoch: u32,
    /// `IrqCpu::sent` and the senders' `ipis` (ipi:ipi_send_cpu/cpumask, 6.3+).
    pub sent: bool,
    /// `IrqCpu::tlb_requests` and the senders' `queued` of every kind (csd:csd_queue_cpu).
    pub queued: bool,
    /// `IrqCpu::tlb_shootdowns` (csd:csd_function_entry, a kprobe on the flush function,
    /// or tlb:tlb_flush's remote-shootdown reason).
    pub shootdowns: bool,
    /// Senders' `queued` of kind tlb: shootdowns each process caused (csd_queue_cpu, or
    /// the kprobe charging the flushed address space's owner).
    pub caused: bool,
    /// `IrqCpu::tlb` (tlb:tlb_flush, x86).
    pub reasons: bool,
}

impl Default for IrqMeasured {
    fn default() -> Self {
        Self {
            recv: true,
            recv_proc: false,
            split_epoch: 0,
            sent: true,
            queued: true,
            shootdowns: true,
            caused: true,
            reasons: true,
        }
    }
}

/// The kernel's own per-CPU interrupt counters (/proc/interrupts), for the lines that
/// count IPIs: x86 RES, CAL, TLB, IWI; arm64 IPIn. Cumulative.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcInterrupts {
    pub lines: BTreeMap<String, Vec<u64>>,
    /// The CPU of each column (the header's CPUn: online CPUs only). Empty in
    /// recordings made before ttop kept it: column i is CPU i.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
}

impl ProcInterrupts {
    /// Parse /proc/interrupts, keeping the IPI lines.
    pub fn parse(text: &str) -> Self {
        let mut lines = BTreeMap::new();
        let mut it = text.lines();
        let cpus: Vec<u32> = it.next().map_or_else(Vec::new, |h| {
            h.split_whitespace()
                .filter_map(|w| w.strip_prefix("CPU")?.parse().ok())
                .collect()
        });
        let ncpus = cpus.len();
        for l in it {
            let Some((label, rest)) = l.split_once(':') else {
                continue;
            };
            let label = label.trim();
            let keep = matches!(label, "RES" | "CAL" | "TLB" | "IWI") || label.starts_with("IPI");
            if !keep {
                continue;
            }
            let counts: Vec<u64> = rest
                .split_whitespace()
                .take(ncpus)
                .map_while(|w| w.parse().ok())
                .collect();
            lines.insert(label.to_string(), counts);
        }
        Self { lines, cpus }
    }

    /// The count of `line` for `cpu` (None: no such line or column).
    pub fn of(&self, line: &str, cpu: u32) -> Option<u64> {
        let col = if self.cpus.is_empty() {
            cpu as usize
        } else {
            self.cpus.iter().position(|&c| c == cpu)?
        };
        self.lines.get(line)?.get(col).copied()
    }

    /// The CPU of column `col`.
    pub fn cpu_of(&self, col: usize) -> u32 {
        self.cpus.get(col).copied().unwrap_or(col as u32)
    }
}
