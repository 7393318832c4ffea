//! The IPI / TLB collector: loads bpf/irq.bpf.c with the kernel addresses it compares
//! against (kernel symbols, see kallsyms.rs), attaches each probe on its own, and reads
//! the maps once per tick.

use foldhash::{HashMap, HashMapExt};
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use super::bpf_common::{explain, from_bytes};
use super::kallsyms;
use super::map_read;
use crate::model::irq::{IpiSender, IrqCpu, IrqSample};

mod skel {
    include!(concat!(env!("OUT_DIR"), "/irq.skel.rs"));
}
use skel::{IrqSkel, IrqSkelBuilder, types};

pub struct IrqCollector {
    skel: IrqSkel<'static>,
    _links: Vec<Link>,
    ncpus: u32,
    names: HashMap<u64, String>,
    /// ipi_src, read through the insert count the BPF side keeps.
    walk: super::map_read::Tracked,
    /// Probes that could not attach (or facts missing), with why.
    pub problems: Vec<String>,
}

impl IrqCollector {
    /// Open, set the function addresses, load and attach. Err is a one-line reason.
    pub fn load() -> Result<Self, String> {
        let ncpus = libbpf_rs::num_possible_cpus().map_err(|e| e.to_string())? as u32;
        let mut problems = Vec::new();
        let flush = kallsyms::addr_of("flush_tlb_func");
        let smp_ipi = kallsyms::addr_of("generic_smp_call_function_single_interrupt");
        if !kallsyms::available() {
            problems.push(
                "IPI purposes unknown: kernel addresses are hidden (run as root); \
                 TLB shootdowns are not told apart from other function calls"
                    .to_string(),
            );
        } else if flush == 0 && cfg!(target_arch = "x86_64") {
            problems.push(
                "no kernel symbol flush_tlb_func: TLB shootdowns are not counted".to_string(),
            );
        }
        // The skeleton borrows its object for its whole life (see SchedCollector::load).
        let obj: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = IrqSkelBuilder::default()
            .open(obj)
            .map_err(|e| explain("eBPF IPI probes: open", &e))?;
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.flush_tlb_func_addr = flush;
            ro.smp_ipi_func_addr = smp_ipi;
            ro.cpumask_words = ncpus.div_ceil(64).max(1);
        }
        let mut skel = open
            .load()
            .map_err(|e| explain("eBPF IPI probes: load", &e))?;
        let mut links = Vec::new();
        let progs = &mut skel.progs;
        let mut attach =
            |name: &str, what: &str, p: &libbpf_rs::ProgramMut<'static>| match p.attach() {
                Ok(l) => links.push(l),
                Err(e) => problems.push(format!(
                    "{} ({what})",
                    explain(&format!("probe {name}"), &e)
                )),
            };
        attach(
            "call_function_entry",
            "function-call IPIs received",
            &progs.ttop_call_function_entry,
        );
        attach(
            "call_function_single_entry",
            "single function-call IPIs received",
            &progs.ttop_call_function_single_entry,
        );
        attach(
            "reschedule_entry",
            "reschedule IPIs received",
            &progs.ttop_reschedule_entry,
        );
        attach(
            "irq_work_entry",
            "irq_work IPIs received",
            &progs.ttop_irq_work_entry,
        );
        attach(
            "ipi_send_cpu",
            "IPIs sent to one CPU",
            &progs.ttop_ipi_send_cpu,
        );
        attach(
            "ipi_send_cpumask",
            "IPIs sent to CPU sets",
            &progs.ttop_ipi_send_cpumask,
        );
        attach(
            "csd_queue_cpu",
            "what IPIs are for, TLB shootdowns caused",
            &progs.ttop_csd_queue_cpu,
        );
        attach(
            "csd_function_entry",
            "TLB shootdowns received",
            &progs.ttop_csd_function_entry,
        );
        attach("tlb_flush", "TLB flushes by reason", &progs.ttop_tlb_flush);
        if links.is_empty() {
            return Err(problems
                .first()
                .cloned()
                .unwrap_or_else(|| "no IPI probe attached".into()));
        }
        Ok(Self {
            skel,
            _links: links,
            ncpus,
            names: HashMap::new(),
            walk: Default::default(),
            problems,
        })
    }

    fn name(&mut self, addr: u64) -> String {
        if addr == 0 {
            return String::new();
        }
        self.names
            .entry(addr)
            .or_insert_with(|| kallsyms::name_of(addr).unwrap_or_else(|| format!("{addr:#x}")))
            .clone()
    }

    /// Read every map once. Returns the sample and the sender-table drop count.
    pub fn read(&mut self) -> (IrqSample, u64) {
        let mut out = IrqSample::default();
        let inserts = self.skel.maps.bss_data.as_deref().map(|b| b.inserts[0]);
        let maps = &self.skel.maps;
        for cpu in 0..self.ncpus {
            let Ok(Some(v)) = maps.irq_cpu.lookup(&cpu.to_ne_bytes(), MapFlags::ANY) else {
                continue;
            };
            let c: types::irq_cpu_stats = from_bytes(&v);
            out.cpus.push(IrqCpu {
                cpu,
                recv: c.recv[..4].to_vec(),
                sent: c.sent[..4].to_vec(),
                tlb: c.tlb[..6].to_vec(),
                tlb_shootdowns: c.tlb_shootdowns,
                tlb_requests: c.tlb_requests,
            });
        }
        let mut raw = Vec::new();
        self.walk.for_each(&maps.ipi_src, inserts, |k, v| {
            let k: types::ipi_src_key = from_bytes(k);
            let s: types::ipi_src_stats = from_bytes(v);
            raw.push((k, s));
        });
        for (k, s) in raw {
            let func = self.name(k.func);
            out.senders.push(IpiSender {
                tgid: k.tgid,
                kind: k.kind,
                func,
                ipis: s.ipis,
                queued: s.queued,
            });
        }
        let drops = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .map_or(0, |b| b.idrops[0]);
        (out, drops)
    }

    /// Forget the sender rows of processes that are gone (after they were reported).
    pub fn forget_procs(&self, tgids: &[u32]) {
        if tgids.is_empty() {
            return;
        }
        let gone: foldhash::HashSet<u32> = tgids.iter().copied().collect();
        let maps = &self.skel.maps;
        let mut keys = Vec::new();
        map_read::for_each(&maps.ipi_src, |k, _| {
            if gone.contains(&from_bytes::<types::ipi_src_key>(k).tgid) {
                keys.extend_from_slice(k);
            }
        });
        map_read::delete_all(&maps.ipi_src, &keys);
    }
}
