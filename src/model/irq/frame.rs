//! IPIs and TLB shootdowns per interval: the Frame's parts (`cpus[].ipi`, `tlb`,
//! `ipi_senders`, `procs[].*_caused`), derived from two irq Samples. A counter no hook of
//! this kernel fed is null, never 0. `irq_frame` returns them as an `IrqParts`, which
//! `derive` places in the Frame (this module does not know the Frame).

use std::collections::HashMap;

use serde::Serialize;

use super::sample::{IrqCpu, IrqSample, KIND_TLB, SENT_NAMES};
use crate::model::opt::Opt;
use crate::model::rates::delta;
use crate::model::sample::Sample;

/// IPIs received by one CPU in the interval (`cpus[].ipi`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IpiRecvFrame {
    /// Function-call IPIs of both kinds (/proc/interrupts CAL on x86).
    pub call: u64,
    /// Their split (irq_vectors:call_function*_entry), measured only while asked for
    /// (the IPI view open): null in the other intervals.
    pub call_function: Option<u64>,
    pub call_function_single: Option<u64>,
    pub reschedule: u64,
    pub irq_work: u64,
}

/// IPIs sent by one CPU in the interval, by purpose (`cpus[].ipi_sent`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IpiSentFrame {
    pub reschedule: u64,
    pub tlb: u64,
    pub call: u64,
    pub other: u64,
}

/// TLB flushes in the interval, machine-wide (`tlb`). A count no hook of this kernel
/// fed is null (see `IrqMeasured` and `ttop probe`), never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TlbFrame {
    /// tlb:tlb_flush by reason.
    pub task_switch: Option<u64>,
    pub remote_shootdown: Option<u64>,
    pub local_shootdown: Option<u64>,
    pub local_mm_shootdown: Option<u64>,
    /// A sender's flush_tlb_multi call: intent, not IPIs (see `ipis`).
    pub remote_send_ipi: Option<u64>,
    pub remote_wrong_cpu: Option<u64>,
    /// Remote flushes run (flush_tlb_func for another CPU): what /proc/interrupts TLB counts.
    pub shootdowns: Option<u64>,
    /// Remote flushes queued by senders.
    pub requests: Option<u64>,
    /// IPIs actually sent for TLB flushes.
    pub ipis: Option<u64>,
    /// The kernel's TLB line delta (sum over CPUs); null where the line does not exist.
    pub proc_interrupts: Option<u64>,
}

/// One sender row (`ipi_senders[]`): a process, a purpose and a function.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IpiSenderFrame {
    pub pid: u32,
    pub comm: String,
    /// "tlb", "call", "reschedule" or "other".
    pub kind: String,
    pub func: String,
    /// IPIs it sent (null before Linux 6.3: no ipi:ipi_send_* tracepoints).
    pub ipis: Option<u64>,
    /// Remote calls it queued; for kind tlb, the shootdowns it caused (null where not
    /// measured).
    pub queued: Option<u64>,
}

/// Per-process sums for `procs[]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcIpi {
    pub ipis: u64,
    pub tlb_ipis: u64,
    pub tlb_shootdowns: u64,
}

fn idx(v: &[u64], i: usize) -> u64 {
    v.get(i).copied().unwrap_or(0)
}

fn vdelta(p: &[u64], c: &[u64], i: usize) -> u64 {
    delta(idx(p, i), idx(c, i))
}

/// Per-interval sender rows, keyed by (tgid, kind, func).
fn sender_deltas(prev: Option<&IrqSample>, cur: &IrqSample) -> Vec<(u32, u32, String, u64, u64)> {
    let prev_map: HashMap<(u32, u32, &str), (u64, u64)> = prev
        .map(|p| {
            p.senders
                .iter()
                .map(|s| ((s.tgid, s.kind, s.func.as_str()), (s.ipis, s.queued)))
                .collect()
        })
        .unwrap_or_default();
    let mut agg: HashMap<(u32, u32, String), (u64, u64)> = HashMap::new();
    for s in &cur.senders {
        let (pi, pq) = prev_map
            .get(&(s.tgid, s.kind, s.func.as_str()))
            .copied()
            .unwrap_or((0, 0));
        // Several addresses may resolve to one name: merge.
        let e = agg.entry((s.tgid, s.kind, s.func.clone())).or_default();
        e.0 += delta(pi, s.ipis);
        e.1 += delta(pq, s.queued);
    }
    agg.into_iter()
        .filter(|(_, (i, q))| i + q > 0)
        .map(|((t, k, f), (i, q))| (t, k, f, i, q))
        .collect()
}

/// Per-process IPI sums for the interval (for `procs[]`).
pub fn proc_ipis(prev: Option<&Sample>, cur: &Sample) -> HashMap<u32, ProcIpi> {
    let mut out: HashMap<u32, ProcIpi> = HashMap::new();
    let (Some(c), Some(_)) = (cur.irq.as_ref(), prev) else {
        return out;
    };
    for (tgid, kind, _, ipis, queued) in sender_deltas(prev.and_then(|p| p.irq.as_ref()), c) {
        let e = out.entry(tgid).or_default();
        e.ipis += ipis;
        if kind == KIND_TLB {
            e.tlb_ipis += ipis;
            e.tlb_shootdowns += queued;
        }
    }
    out
}

/// One CPU's IPI figures for the interval (`cpus[].ipi`, `ipi_sent`, `tlb_shootdowns`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IrqCpuPart {
    pub cpu: u32,
    pub ipi: Option<IpiRecvFrame>,
    pub ipi_sent: Option<IpiSentFrame>,
    pub tlb_shootdowns: Option<u64>,
}

/// What each process caused (`procs[].ipis_caused`, `tlb_ipis_caused`,
/// `tlb_shootdowns_caused`): per pid, and whether the hooks behind each were there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IrqCaused {
    pub sent: bool,
    pub caused: bool,
    pub per_pid: HashMap<u32, ProcIpi>,
}

impl IrqCaused {
    /// (ipis_caused, tlb_ipis_caused, tlb_shootdowns_caused) of one process row.
    pub fn of(&self, pid: u32) -> (Opt<u64>, Opt<u64>, Opt<u64>) {
        let pi = self.per_pid.get(&pid).copied().unwrap_or_default();
        let opt = |on: bool, n: u64| if on { Opt::some(n) } else { Opt::NONE };
        (
            opt(self.sent, pi.ipis),
            opt(self.sent, pi.tlb_ipis),
            opt(self.caused, pi.tlb_shootdowns),
        )
    }
}

/// The IPI/TLB parts of an interval's Frame; `derive` places them (cpus[].interrupts,
/// cpus[].ipi, cpus[].tlb_shootdowns, tlb, ipi_senders, procs[].*_caused).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IrqParts {
    /// /proc/interrupts' IPI lines: (CPU index, line name, count in the interval).
    pub interrupts: Vec<(u32, String, u64)>,
    /// Per CPU from the eBPF hooks (empty without them).
    pub cpus: Vec<IrqCpuPart>,
    pub tlb: Option<TlbFrame>,
    pub ipi_senders: Vec<IpiSenderFrame>,
    /// None without the eBPF hooks: the process rows keep their defaults.
    pub caused: Option<IrqCaused>,
}

/// The IPI/TLB parts of the interval between two Samples (nothing on the first).
pub fn irq_frame(prev: Option<&Sample>, cur: &Sample) -> IrqParts {
    let mut out = IrqParts::default();
    let Some(p) = prev else {
        return out;
    };
    // The kernel's own counters, even without eBPF.
    let mut tlb_ref: Option<u64> = None;
    for (name, counts) in &cur.interrupts.lines {
        for (i, &v) in counts.iter().enumerate() {
            let cpu = cur.interrupts.cpu_of(i);
            // A CPU that came online in the interval counts from 0.
            let d = delta(p.interrupts.of(name, cpu).unwrap_or(0), v);
            if name == "TLB" {
                *tlb_ref.get_or_insert(0) += d;
            }
            out.interrupts.push((cpu, name.clone(), d));
        }
    }
    // The kernel's count of one line for one CPU over the interval.
    let kernel = |line: &str, cpu: u32| {
        cur.interrupts
            .of(line, cpu)
            .map(|v| delta(p.interrupts.of(line, cpu).unwrap_or(0), v))
    };
    let Some(c) = cur.irq.as_ref() else {
        return out;
    };
    let pirq = p.irq.as_ref();
    let prev_cpus: HashMap<u32, &IrqCpu> = pirq
        .map(|s| s.cpus.iter().map(|c| (c.cpu, c)).collect())
        .unwrap_or_default();
    let m = c.measured;
    let pm = pirq.map(|s| s.measured);
    // The call/call-single split counted by the eBPF programs for the whole interval.
    let split =
        m.recv && (!m.recv_proc || pm.is_some_and(|pm| pm.recv && pm.split_epoch == m.split_epoch));
    let zero = |on: bool| on.then_some(0u64);
    let mut tlb = TlbFrame {
        task_switch: zero(m.reasons),
        remote_shootdown: zero(m.reasons),
        local_shootdown: zero(m.reasons),
        local_mm_shootdown: zero(m.reasons),
        remote_send_ipi: zero(m.reasons),
        remote_wrong_cpu: zero(m.reasons),
        shootdowns: zero(m.shootdowns),
        requests: zero(m.queued),
        ipis: zero(m.sent),
        proc_interrupts: tlb_ref,
    };
    let add = |o: &mut Option<u64>, n: u64| {
        if let Some(v) = o.as_mut() {
            *v += n;
        }
    };
    let empty = IrqCpu::default();
    for ic in &c.cpus {
        let pc = prev_cpus.get(&ic.cpu).copied().unwrap_or(&empty);
        let r = |i| vdelta(&pc.recv, &ic.recv, i);
        let s = |i| vdelta(&pc.sent, &ic.sent, i);
        let t = |i| vdelta(&pc.tlb, &ic.tlb, i);
        let shoot = if m.recv_proc {
            kernel("TLB", ic.cpu).unwrap_or(0)
        } else {
            delta(pc.tlb_shootdowns, ic.tlb_shootdowns)
        };
        add(&mut tlb.task_switch, t(0));
        add(&mut tlb.remote_shootdown, t(1));
        add(&mut tlb.local_shootdown, t(2));
        add(&mut tlb.local_mm_shootdown, t(3));
        add(&mut tlb.remote_send_ipi, t(4));
        add(&mut tlb.remote_wrong_cpu, t(5));
        add(&mut tlb.shootdowns, shoot);
        add(&mut tlb.requests, delta(pc.tlb_requests, ic.tlb_requests));
        add(&mut tlb.ipis, s(1));
        out.cpus.push(IrqCpuPart {
            cpu: ic.cpu,
            ipi: if m.recv_proc {
                Some(IpiRecvFrame {
                    call: kernel("CAL", ic.cpu).unwrap_or(0),
                    call_function: split.then(|| r(0)),
                    call_function_single: split.then(|| r(1)),
                    reschedule: kernel("RES", ic.cpu).unwrap_or(0),
                    irq_work: kernel("IWI", ic.cpu).unwrap_or(0),
                })
            } else {
                m.recv.then(|| IpiRecvFrame {
                    call: r(0) + r(1),
                    call_function: Some(r(0)),
                    call_function_single: Some(r(1)),
                    reschedule: r(2),
                    irq_work: r(3),
                })
            },
            ipi_sent: m.sent.then(|| IpiSentFrame {
                reschedule: s(0),
                tlb: s(1),
                call: s(2),
                other: s(3),
            }),
            tlb_shootdowns: m.shootdowns.then_some(shoot),
        });
    }
    out.tlb = Some(tlb);

    // Senders, and their per-process sums.
    // Names for the senders only (a handful), not a table of every process: the BPF
    // side's name for a process gone from /proc, the scan's where it has one.
    let deltas = sender_deltas(pirq, c);
    let mut names: foldhash::HashMap<u32, &str> = deltas.iter().map(|d| (d.0, "")).collect();
    if let Some(b) = cur.bpf.as_ref() {
        for p in &b.procs {
            if let Some(n) = names.get_mut(&p.tgid) {
                *n = p.comm.as_str();
            }
        }
    }
    for p in &cur.procs {
        if let Some(n) = names.get_mut(&p.pid) {
            *n = &p.comm;
        }
    }
    let mut senders: Vec<IpiSenderFrame> = deltas
        .into_iter()
        .map(|(tgid, kind, func, ipis, queued)| IpiSenderFrame {
            pid: tgid,
            comm: if tgid == 0 {
                "[idle/irq]".to_string()
            } else {
                names.get(&tgid).map_or_else(String::new, |s| s.to_string())
            },
            kind: SENT_NAMES
                .get(kind as usize)
                .unwrap_or(&"other")
                .to_string(),
            func: if kind == 0 && func.is_empty() {
                "reschedule".into()
            } else {
                func
            },
            ipis: m.sent.then_some(ipis),
            queued: if kind == KIND_TLB { m.caused } else { m.queued }.then_some(queued),
        })
        .collect();
    senders.sort_by(|a, b| {
        (b.ipis, b.queued, a.pid, &a.func).cmp(&(a.ipis, a.queued, b.pid, &b.func))
    });
    out.ipi_senders = senders;
    out.caused = Some(IrqCaused {
        sent: m.sent,
        caused: m.caused,
        per_pid: proc_ipis(prev, cur),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::irq::{IpiSender, IrqMeasured, ProcInterrupts};

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:     115804     115377   Local timer interrupts\n\
IWI:          0          1   IRQ work interrupts\n\
RES:      13137      12313   Rescheduling interrupts\n\
CAL:    1274297    1268805   Function call interrupts\n\
TLB:      28036      27107   TLB shootdowns\n\
ERR:          0\n";

    #[test]
    fn parses_ipi_lines_only() {
        let p = ProcInterrupts::parse(INTERRUPTS);
        assert_eq!(p.lines.len(), 4);
        assert_eq!(p.lines["TLB"], vec![28036, 27107]);
        assert_eq!(p.lines["CAL"], vec![1274297, 1268805]);
        assert!(!p.lines.contains_key("LOC"));
    }

    fn sample(k: u64) -> Sample {
        let mut s = Sample {
            interrupts: ProcInterrupts::parse(INTERRUPTS),
            ..Default::default()
        };
        for v in s.interrupts.lines.values_mut() {
            for (i, x) in v.iter_mut().enumerate() {
                *x += k * (10 + i as u64);
            }
        }
        s.irq = Some(IrqSample {
            cpus: (0..2)
                .map(|cpu| IrqCpu {
                    cpu,
                    recv: vec![k, 2 * k, 3 * k, 0],
                    sent: vec![k, 5 * k, 0, 0],
                    tlb: vec![0, 4 * k, 0, 7 * k, 5 * k, 0],
                    tlb_shootdowns: 4 * k,
                    tlb_requests: 5 * k,
                })
                .collect(),
            senders: vec![
                IpiSender {
                    tgid: 42,
                    kind: KIND_TLB,
                    func: "flush_tlb_func".into(),
                    ipis: 10 * k,
                    queued: 10 * k,
                },
                IpiSender {
                    tgid: 0,
                    kind: 0,
                    func: String::new(),
                    ipis: 2 * k,
                    queued: 0,
                },
            ],
            measured: IrqMeasured::default(),
        });
        s
    }

    fn cpu(f: &IrqParts, cpu: u32) -> &IrqCpuPart {
        f.cpus.iter().find(|c| c.cpu == cpu).unwrap()
    }

    fn interrupts(f: &IrqParts, cpu: u32, name: &str) -> u64 {
        let line = f.interrupts.iter().find(|l| l.0 == cpu && l.1 == name);
        line.unwrap().2
    }

    /// What process 42 caused, as its row shows it.
    fn caused(f: &IrqParts) -> (Opt<u64>, Opt<u64>, Opt<u64>) {
        f.caused.as_ref().unwrap().of(42)
    }

    #[test]
    fn deltas_per_cpu_reason_and_sender() {
        let (p, c) = (sample(100), sample(103));
        let f = irq_frame(Some(&p), &c);
        let ipi = cpu(&f, 1).ipi.as_ref().unwrap();
        assert_eq!(
            (ipi.call_function, ipi.call_function_single, ipi.reschedule),
            (Some(3), Some(6), 9)
        );
        assert_eq!(ipi.call, 9);
        assert_eq!(cpu(&f, 0).tlb_shootdowns, Some(12));
        assert_eq!(interrupts(&f, 1, "TLB"), 33);
        let tlb = f.tlb.as_ref().unwrap();
        assert_eq!(tlb.shootdowns, Some(24));
        assert_eq!(tlb.remote_shootdown, Some(24));
        assert_eq!(tlb.local_mm_shootdown, Some(42));
        assert_eq!(tlb.ipis, Some(30));
        assert_eq!(tlb.proc_interrupts, Some(30 + 33));
        assert_eq!(f.ipi_senders[0].pid, 42);
        assert_eq!(f.ipi_senders[0].kind, "tlb");
        assert_eq!(f.ipi_senders[1].func, "reschedule");
        assert_eq!(caused(&f).2.get(), Some(30));
        assert_eq!(caused(&f).0.get(), Some(30));
    }

    /// Linux 6.1: no ipi:ipi_send_* nor csd:*; shootdowns received and caused come from a
    /// kprobe on the flush function. What no hook fed is null, never 0; the rest as before.
    #[test]
    fn what_no_hook_fed_is_null() {
        let (mut p, mut c) = (sample(100), sample(103));
        let m = IrqMeasured {
            sent: false,
            queued: false,
            ..IrqMeasured::default()
        };
        p.irq.as_mut().unwrap().measured = m;
        c.irq.as_mut().unwrap().measured = m;
        let f = irq_frame(Some(&p), &c);
        assert!(cpu(&f, 1).ipi.is_some() && cpu(&f, 1).ipi_sent.is_none());
        assert_eq!(cpu(&f, 0).tlb_shootdowns, Some(12));
        let tlb = f.tlb.as_ref().unwrap();
        assert_eq!(
            (tlb.shootdowns, tlb.ipis, tlb.requests),
            (Some(24), None, None)
        );
        let tlb_row = f.ipi_senders.iter().find(|s| s.kind == "tlb").unwrap();
        assert_eq!((tlb_row.ipis, tlb_row.queued), (None, Some(30)));
        let resched = f
            .ipi_senders
            .iter()
            .find(|s| s.kind == "reschedule")
            .unwrap();
        assert_eq!((resched.ipis, resched.queued), (None, None));
        assert_eq!(caused(&f).2.get(), Some(30));
        assert_eq!(caused(&f).0.get(), None);
        assert_eq!(caused(&f).1.get(), None);
        let j = serde_json::to_value(&f.tlb).unwrap();
        assert!(j["ipis"].is_null() && j["requests"].is_null(), "{j}");
    }

    /// A sender is named by the scan; one gone from /proc by the eBPF side's last name for
    /// it; the scan's name wins where both have one; a process neither knows stays unnamed.
    #[test]
    fn senders_are_named_by_the_scan_then_the_bpf_side() {
        use crate::model::sample::{BpfProc, BpfSample, ProcScan};
        let (p, mut c) = (sample(100), sample(103));
        let irq = c.irq.as_mut().unwrap();
        for (tgid, ipis) in [(43, 7), (44, 5), (45, 3)] {
            irq.senders.push(IpiSender {
                tgid,
                kind: KIND_TLB,
                func: "f".into(),
                ipis: 103 * ipis,
                queued: 0,
            });
        }
        let named = |pid: u32, comm: &str| ProcScan {
            pid,
            comm: comm.into(),
            ..Default::default()
        };
        c.procs = vec![named(42, "scanned"), named(44, "scan-wins")];
        c.bpf = Some(BpfSample {
            procs: [(43, "gone"), (44, "bpf-name")]
                .into_iter()
                .map(|(tgid, comm)| BpfProc {
                    tgid,
                    comm: comm.into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        let f = irq_frame(Some(&p), &c);
        let name = |pid: u32| {
            f.ipi_senders
                .iter()
                .find(|s| s.pid == pid)
                .map(|s| s.comm.clone())
        };
        assert_eq!(name(42).as_deref(), Some("scanned"));
        assert_eq!(name(43).as_deref(), Some("gone"));
        assert_eq!(name(44).as_deref(), Some("scan-wins"));
        assert_eq!(name(45).as_deref(), Some(""));
        assert_eq!(name(0).as_deref(), Some("[idle/irq]"));
    }

    #[test]
    fn first_sample_has_no_rates() {
        assert_eq!(irq_frame(None, &sample(1)), IrqParts::default());
    }

    /// x86 by default: received IPIs and shootdowns are the kernel's lines, per CPU by
    /// the header's CPU numbers; the call/call-single split only for an interval whose
    /// two Samples had the split's programs attached since the same attach.
    #[test]
    fn kernel_lines_by_default_and_the_split_only_when_whole() {
        let (mut p, mut c) = (sample(100), sample(103));
        // CPU 1's counts in the BPF sample would say otherwise: ignored.
        let proc_m = |recv: bool, split_epoch: u32| IrqMeasured {
            recv,
            recv_proc: true,
            split_epoch,
            ..IrqMeasured::default()
        };
        p.irq.as_mut().unwrap().measured = proc_m(false, 0);
        c.irq.as_mut().unwrap().measured = proc_m(false, 0);
        let f = irq_frame(Some(&p), &c);
        let ipi = cpu(&f, 1).ipi.clone().unwrap();
        // CPU 1's column grows by 11 a step: 3 steps.
        assert_eq!((ipi.call, ipi.reschedule, ipi.irq_work), (33, 33, 33));
        assert_eq!((ipi.call_function, ipi.call_function_single), (None, None));
        assert_eq!(cpu(&f, 0).tlb_shootdowns, Some(30));
        assert_eq!(f.tlb.as_ref().unwrap().shootdowns, Some(30 + 33));
        // Attached at both ends, same attach: the split.
        p.irq.as_mut().unwrap().measured = proc_m(true, 2);
        c.irq.as_mut().unwrap().measured = proc_m(true, 2);
        let ipi = cpu(&irq_frame(Some(&p), &c), 1).ipi.clone().unwrap();
        assert_eq!(
            (ipi.call_function, ipi.call_function_single),
            (Some(3), Some(6))
        );
        // Detached and attached again in between: part of the interval is missing.
        c.irq.as_mut().unwrap().measured = proc_m(true, 3);
        let ipi = cpu(&irq_frame(Some(&p), &c), 1).ipi.clone().unwrap();
        assert_eq!(ipi.call_function, None);
        // Attached during the interval.
        p.irq.as_mut().unwrap().measured = proc_m(false, 2);
        c.irq.as_mut().unwrap().measured = proc_m(true, 3);
        let ipi = cpu(&irq_frame(Some(&p), &c), 1).ipi.clone().unwrap();
        assert_eq!(ipi.call_function_single, None);
    }

    /// /proc/interrupts lists online CPUs only: with CPU 1 offline, its second column
    /// is CPU 2's.
    #[test]
    fn columns_are_the_headers_cpus() {
        let text = "           CPU0       CPU2       \n\
RES:         10         20   Rescheduling interrupts\n";
        let i = ProcInterrupts::parse(text);
        assert_eq!(i.cpus, vec![0, 2]);
        assert_eq!(i.of("RES", 2), Some(20));
        assert_eq!(i.of("RES", 1), None);
        assert_eq!(i.cpu_of(1), 2);
    }
}
