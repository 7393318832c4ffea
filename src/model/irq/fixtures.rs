//! Fixtures for the IPI/TLB views' snapshots: seed 000's host on the kernel the tests run
//! on, and the same host on Linux 6.1 (no ipi:* nor csd:* tracepoints).

use std::collections::BTreeMap;

use super::sample::{IpiSender, IrqCpu, IrqMeasured, IrqSample, KIND_TLB, ProcInterrupts};
use crate::model::sample::Sample;

/// Fixture: the same host on Linux 6.1, which has no ipi:ipi_send_* nor csd:*
/// tracepoints: shootdowns received and caused come from a kprobe on flush_tlb_func, IPIs
/// sent are not measured (the kernel matrix found exactly this on Debian 12's kernel).
pub fn fixture_6_1_into(s: &mut Sample, secs: u64) {
    use crate::model::features::{Feature, Status};
    fixture_into(s, secs);
    let irq = s.irq.as_mut().expect("fixture_into sets it");
    irq.measured = IrqMeasured {
        sent: false,
        queued: false,
        ..IrqMeasured::default()
    };
    for c in &mut irq.cpus {
        c.sent = vec![0; 4];
        c.tlb_requests = 0;
    }
    irq.senders.retain(|x| x.kind == KIND_TLB);
    for x in &mut irq.senders {
        x.ipis = 0;
    }
    s.mode.features = vec![
        Feature::measured("ipi_received", "raw_tp/irq_vectors:*_entry"),
        Feature::missing(
            "ipi_sent",
            "this kernel has no ipi:ipi_send_cpu tracepoint (added in Linux 6.3); IPIs received are counted per CPU",
        ),
        Feature::new(
            "tlb_shootdowns",
            Status::Fallback,
            "kprobe/flush_tlb_func",
            "this kernel has no csd:csd_function_entry tracepoint (added in Linux 6.3)",
        ),
        Feature::new(
            "tlb_caused",
            Status::Fallback,
            "kprobe/flush_tlb_func",
            "charged to the process whose address space is flushed (mm->owner)",
        ),
        Feature::measured("tlb_reasons", "raw_tp/tlb:tlb_flush"),
    ];
    s.mode.problems = s
        .mode
        .features
        .iter()
        .filter_map(Feature::problem)
        .collect();
}

/// Fixture: seed 000's TiFlash host, `secs` seconds in (cumulative counters), for
/// screen snapshots. tiflash (4242) frees thread stacks while its threads run on every
/// CPU: thousands of TLB shootdowns a second.
pub fn fixture_into(s: &mut Sample, secs: u64) {
    let ncpu = 4u32;
    s.irq = Some(IrqSample {
        cpus: (0..ncpu)
            .map(|cpu| {
                let k = u64::from(cpu) + 1;
                IrqCpu {
                    cpu,
                    recv: vec![
                        40 * secs,
                        (2400 + 100 * k) * secs,
                        (900 + 50 * k) * secs,
                        3 * secs,
                    ],
                    sent: vec![(880 + 40 * k) * secs, (2300 + 90 * k) * secs, 150 * secs, 0],
                    tlb: vec![
                        500 * secs,
                        (2300 + 90 * k) * secs,
                        2 * secs,
                        (5200 + 10 * k) * secs,
                        (2600 + 5 * k) * secs,
                        4 * secs,
                    ],
                    tlb_shootdowns: (2310 + 90 * k) * secs,
                    tlb_requests: (2310 + 90 * k) * secs,
                }
            })
            .collect(),
        senders: vec![
            IpiSender {
                tgid: 4242,
                kind: KIND_TLB,
                func: "flush_tlb_func".into(),
                ipis: 9_100 * secs,
                queued: 9_300 * secs,
            },
            IpiSender {
                tgid: 4242,
                kind: 0,
                func: String::new(),
                ipis: 2_900 * secs,
                queued: 0,
            },
            IpiSender {
                tgid: 4242,
                kind: 2,
                func: "sched_ttwu_pending".into(),
                ipis: 420 * secs,
                queued: 610 * secs,
            },
            IpiSender {
                tgid: 0,
                kind: 2,
                func: "nohz_csd_func".into(),
                ipis: 160 * secs,
                queued: 160 * secs,
            },
            IpiSender {
                tgid: 1817,
                kind: 0,
                func: String::new(),
                ipis: 500 * secs,
                queued: 0,
            },
            IpiSender {
                tgid: 1817,
                kind: KIND_TLB,
                func: "flush_tlb_func".into(),
                ipis: 30 * secs,
                queued: 30 * secs,
            },
        ],
        // x86 as the IPI view sees it: the kernel's lines, and the call split it asks for.
        measured: IrqMeasured {
            recv_proc: true,
            split_epoch: 1,
            ..IrqMeasured::default()
        },
    });
    let mut lines = BTreeMap::new();
    // The kernel's counts of what the programs' counters above say (CAL: both kinds).
    let per_cpu = |base: u64, step: u64| {
        (0..u64::from(ncpu))
            .map(|k| (base + step * (k + 1)) * secs)
            .collect()
    };
    lines.insert("TLB".to_string(), per_cpu(2310, 90));
    lines.insert("CAL".to_string(), per_cpu(2440, 100));
    lines.insert("RES".to_string(), per_cpu(900, 50));
    lines.insert("IWI".to_string(), per_cpu(3, 0));
    s.interrupts = ProcInterrupts {
        lines,
        ..Default::default()
    };
}
