//! The IPI / TLB collector: loads bpf/irq.bpf.c with the kernel addresses it compares
//! against (kernel symbols, see kallsyms.rs), attaches each probe on its own, and reads
//! the maps once per tick.

use foldhash::{HashMap, HashMapExt};
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use crate::collect::bpf::common::{autoload_off, explain, from_bytes, load_degrading};
use crate::collect::bpf::kernel::KernelFacts;
use crate::collect::bpf::map_read;
use crate::collect::stacks::kallsyms;
use crate::model::features::{Feature, Status};
use crate::model::irq::{IpiSender, IrqCpu, IrqMeasured, IrqSample};

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
    walk: crate::collect::bpf::map_read::Tracked,
    /// Probes that could not attach (or facts missing), with why.
    pub problems: Vec<String>,
    /// What they measure on this kernel, and through which hooks.
    pub features: Vec<Feature>,
    measured: IrqMeasured,
    /// Where the per-CPU TLB shootdowns received come from.
    shoot: Shootdowns,
    /// Gone processes whose sender sums a CPU still held at the last forget_procs.
    forget_later: Vec<u32>,
    /// The call/call-single split's links while attached (`set_ipi_split`), where the
    /// kernel's /proc/interrupts lines count the rest.
    split_links: Vec<Link>,
}

/// The hooks the programs can use on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hooks {
    /// irq_vectors:*_entry (x86).
    recv: bool,
    /// ipi:ipi_send_cpu and ipi_send_cpumask (Linux 6.3).
    sent: bool,
    /// csd:csd_queue_cpu and csd_function_entry (Linux 6.3).
    csd: bool,
    /// tlb:tlb_flush (x86).
    reasons: bool,
    /// Without csd: the remote flush function to kprobe, if the kernel takes kprobes.
    kprobe: Option<&'static str>,
    /// x86's /proc/interrupts has RES, CAL, IWI and TLB: IPIs received and TLB
    /// shootdowns are the kernel's counts, and of the receive programs only the
    /// call/call-single split's two are loaded, attached while asked for.
    proc_lines: bool,
}

impl Hooks {
    fn choose(f: &KernelFacts) -> Self {
        let csd = f.has_tp("csd_queue_cpu") && f.has_tp("csd_function_entry");
        Self {
            recv: [
                "call_function_entry",
                "call_function_single_entry",
                "reschedule_entry",
            ]
            .iter()
            .all(|t| f.has_tp(t)),
            sent: f.has_tp("ipi_send_cpu") && f.has_tp("ipi_send_cpumask"),
            csd,
            reasons: f.has_tp("tlb_flush"),
            kprobe: if csd {
                None
            } else {
                ["flush_tlb_func", "flush_tlb_func_remote"]
                    .into_iter()
                    .find(|func| f.can_kprobe(func))
            },
            proc_lines: f.proc_ipi_lines,
        }
    }
}

/// Where the TLB shootdowns received per CPU come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shootdowns {
    /// The kernel's own count, /proc/interrupts TLB (x86).
    Proc,
    /// csd:csd_function_entry of the flush function on another CPU's behalf.
    Csd,
    /// A kprobe on the flush function, remote calls only.
    Kprobe,
    /// tlb:tlb_flush with reason TLB_REMOTE_SHOOTDOWN.
    TlbFlush,
    None,
}

/// The IPI and TLB feature entries for what attached.
fn features(
    facts: &KernelFacts,
    m: &IrqMeasured,
    shoot: Shootdowns,
    kprobe: Option<&str>,
    tlb_known: bool,
) -> Vec<Feature> {
    let x86 = cfg!(target_arch = "x86_64");
    let v63 = "this kernel has no csd:csd_function_entry tracepoint (added in Linux 6.3)";
    let mut out = vec![if m.recv_proc {
        Feature::measured(
            "ipi_received",
            "/proc/interrupts RES, CAL, IWI (the call/call-single split: \
             raw_tp/irq_vectors:call_function*_entry, while the IPI view is open)",
        )
    } else if m.recv {
        Feature::measured("ipi_received", "raw_tp/irq_vectors:*_entry")
    } else if !x86 {
        Feature::missing("ipi_received", "needs x86's irq_vectors tracepoints")
    } else {
        Feature::missing("ipi_received", "the irq_vectors tracepoints did not attach")
    }];
    out.push(if m.sent && m.queued {
        Feature::measured(
            "ipi_sent",
            "raw_tp/ipi:ipi_send_cpu(mask), csd:csd_queue_cpu",
        )
    } else if !facts.has_tp("ipi_send_cpu") {
        Feature::missing(
            "ipi_sent",
            "this kernel has no ipi:ipi_send_cpu tracepoint (added in Linux 6.3); IPIs \
             received are counted per CPU",
        )
    } else {
        Feature::missing("ipi_sent", "the ipi and csd tracepoints did not attach")
    });
    out.push(match shoot {
        Shootdowns::Proc => Feature::measured("tlb_shootdowns", "/proc/interrupts TLB"),
        Shootdowns::Csd => Feature::measured("tlb_shootdowns", "raw_tp/csd:csd_function_entry"),
        Shootdowns::Kprobe => Feature::new(
            "tlb_shootdowns",
            Status::Fallback,
            format!("kprobe/{}", kprobe.unwrap_or("flush_tlb_func")),
            format!(
                "{v63}; a kprobe on the flush function counts what /proc/interrupts TLB counts"
            ),
        ),
        Shootdowns::TlbFlush => Feature::new(
            "tlb_shootdowns",
            Status::Fallback,
            "raw_tp/tlb:tlb_flush (remote shootdown)",
            format!(
                "{v63} and takes no kprobes: remote flushes are counted from tlb:tlb_flush, \
                 which misses a flush that finds the CPU already off the address space \
                 (the TLB line counts it)"
            ),
        ),
        Shootdowns::None => Feature::missing(
            "tlb_shootdowns",
            if x86 {
                "no csd, kprobe or tlb:tlb_flush hook attached"
            } else {
                "needs csd:csd_function_entry (Linux 6.3)"
            },
        ),
    });
    out.push(if m.caused && m.queued && tlb_known {
        Feature::measured("tlb_caused", "raw_tp/csd:csd_queue_cpu")
    } else if m.caused {
        Feature::new(
            "tlb_caused",
            Status::Fallback,
            format!("kprobe/{}", kprobe.unwrap_or("flush_tlb_func")),
            format!(
                "{v63}: each shootdown is charged to the process whose address space is \
                 flushed (mm->owner), where csd would charge the process that asked"
            ),
        )
    } else if !tlb_known && x86 {
        Feature::missing(
            "tlb_caused",
            "the kernel's flush_tlb_func address is unknown",
        )
    } else {
        Feature::missing(
            "tlb_caused",
            format!("{v63}, and kprobes cannot stand in on this kernel"),
        )
    });
    out.push(if m.reasons {
        Feature::measured("tlb_reasons", "raw_tp/tlb:tlb_flush")
    } else {
        Feature::missing("tlb_reasons", "needs x86's tlb:tlb_flush tracepoint")
    });
    out
}

impl IrqCollector {
    /// Open, set the function addresses, load and attach, choosing the hooks this
    /// kernel has (see `Hooks::choose`). Err is a one-line reason.
    pub fn load(facts: &KernelFacts) -> Result<Self, String> {
        let ncpus = libbpf_rs::num_possible_cpus().map_err(|e| e.to_string())? as u32;
        let hooks = Hooks::choose(facts);
        let mut problems = Vec::new();
        // The remote flush function, by its name on this kernel (flush_tlb_func from
        // 5.13, flush_tlb_func_remote before).
        let flush = ["flush_tlb_func", "flush_tlb_func_remote"]
            .into_iter()
            .map(kallsyms::addr_of)
            .find(|&a| a != 0)
            .unwrap_or(0);
        let smp_ipi = kallsyms::addr_of("generic_smp_call_function_single_interrupt");
        if !kallsyms::available() {
            problems.push(
                "IPI purposes unknown: kernel addresses are hidden (run as root); \
                 TLB shootdowns are not told apart from other function calls"
                    .to_string(),
            );
        }
        let owner_ok = facts.has_field("mm_struct.owner");
        let (mut skel, left_out) = load_degrading("eBPF IPI probes: load", 8, |off| {
            // The skeleton borrows its object for its whole life (see SchedCollector::load).
            let obj: &'static mut MaybeUninit<OpenObject> =
                Box::leak(Box::new(MaybeUninit::uninit()));
            let mut open = IrqSkelBuilder::default().open(obj)?;
            if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                ro.ttop_floor = u32::from(crate::collect::overrides::overrides().bpf_floor);
                ro.flush_tlb_func_addr = flush;
                ro.smp_ipi_func_addr = smp_ipi;
                ro.cpumask_words = ncpus.div_ceil(64).max(1);
                ro.mm_owner_ok = u32::from(owner_ok);
            }
            let p = &mut open.progs;
            // What /proc/interrupts counts is not counted again.
            let own = !hooks.proc_lines;
            for (prog, on) in [
                (&mut p.ttop_call_function_entry, hooks.recv),
                (&mut p.ttop_call_function_single_entry, hooks.recv),
                (&mut p.ttop_reschedule_entry, hooks.recv && own),
                (
                    &mut p.ttop_irq_work_entry,
                    facts.has_tp("irq_work_entry") && own,
                ),
                (&mut p.ttop_ipi_send_cpu, hooks.sent),
                (&mut p.ttop_ipi_send_cpumask, hooks.sent),
                (&mut p.ttop_csd_queue_cpu, hooks.csd),
                (&mut p.ttop_csd_function_entry, hooks.csd && own),
                (&mut p.ttop_tlb_flush, hooks.reasons),
                (&mut p.ttop_kp_flush_tlb_func, hooks.kprobe.is_some()),
            ] {
                prog.set_autoload(on);
            }
            autoload_off(open.open_object_mut(), off);
            open.load()
        })?;
        for l in &left_out {
            problems.push(format!(
                "probe {}: the kernel's verifier rejected it ({})",
                l.prog, l.why
            ));
        }
        let mut links = Vec::new();
        let progs = &mut skel.progs;
        let mut attached = |name: &str, what: &str, p: &libbpf_rs::ProgramMut<'static>| {
            if !p.autoload() {
                return false;
            }
            let res = match name.strip_prefix("kprobe/") {
                Some(func) => p.attach_kprobe(false, func),
                None => p.attach(),
            };
            match res {
                Ok(l) => {
                    links.push(l);
                    true
                }
                Err(e) => {
                    problems.push(format!(
                        "{} ({what})",
                        explain(&format!("probe {name}"), &e)
                    ));
                    false
                }
            }
        };
        let recv = !hooks.proc_lines
            && [
                attached(
                    "call_function_entry",
                    "function-call IPIs received",
                    &progs.ttop_call_function_entry,
                ),
                attached(
                    "call_function_single_entry",
                    "single function-call IPIs received",
                    &progs.ttop_call_function_single_entry,
                ),
                attached(
                    "reschedule_entry",
                    "reschedule IPIs received",
                    &progs.ttop_reschedule_entry,
                ),
            ]
            .iter()
            .all(|&a| a);
        attached(
            "irq_work_entry",
            "irq_work IPIs received",
            &progs.ttop_irq_work_entry,
        );
        let sent = attached(
            "ipi_send_cpu",
            "IPIs sent to one CPU",
            &progs.ttop_ipi_send_cpu,
        ) & attached(
            "ipi_send_cpumask",
            "IPIs sent to CPU sets",
            &progs.ttop_ipi_send_cpumask,
        );
        let queued = attached(
            "csd_queue_cpu",
            "what IPIs are for, TLB shootdowns caused",
            &progs.ttop_csd_queue_cpu,
        );
        let csd_recv = attached(
            "csd_function_entry",
            "TLB shootdowns received",
            &progs.ttop_csd_function_entry,
        );
        let reasons = attached("tlb_flush", "TLB flushes by reason", &progs.ttop_tlb_flush);
        let kprobe = match hooks.kprobe {
            Some(func) => attached(
                &format!("kprobe/{func}"),
                "TLB shootdowns received and caused",
                &progs.ttop_kp_flush_tlb_func,
            )
            .then_some(func),
            None => None,
        };
        if links.is_empty() && !hooks.proc_lines {
            return Err(problems
                .first()
                .cloned()
                .unwrap_or_else(|| "no IPI probe attached".into()));
        }
        let tlb_known = flush != 0 || !cfg!(target_arch = "x86_64");
        let shoot = if hooks.proc_lines {
            Shootdowns::Proc
        } else if csd_recv && tlb_known {
            Shootdowns::Csd
        } else if kprobe.is_some() {
            Shootdowns::Kprobe
        } else if reasons {
            Shootdowns::TlbFlush
        } else {
            Shootdowns::None
        };
        let measured = IrqMeasured {
            recv,
            recv_proc: hooks.proc_lines,
            split_epoch: 0,
            sent,
            queued,
            shootdowns: shoot != Shootdowns::None,
            caused: (queued && tlb_known) || (kprobe.is_some() && owner_ok),
            reasons,
        };
        let features = features(facts, &measured, shoot, kprobe, tlb_known);
        let mut c = Self {
            skel,
            _links: links,
            ncpus,
            names: HashMap::new(),
            walk: Default::default(),
            problems,
            features,
            measured,
            shoot,
            forget_later: Vec::new(),
            split_links: Vec::new(),
        };
        if crate::collect::overrides::overrides().ipi_split
            && let Err(e) = c.set_ipi_split(true)
        {
            c.problems.push(e);
        }
        Ok(c)
    }

    /// Count the call/call-single split of the IPIs received (true: the IPI view
    /// opened) or leave them to /proc/interrupts' CAL total again (false). Nothing
    /// where the receive programs count everything themselves (no such lines) or did
    /// not load.
    pub fn set_ipi_split(&mut self, on: bool) -> Result<(), String> {
        if !self.measured.recv_proc || on != self.split_links.is_empty() {
            return Ok(());
        }
        if !on {
            self.split_links.clear();
            self.measured.recv = false;
            return Ok(());
        }
        let p = &self.skel.progs;
        let mut links = Vec::new();
        for prog in [
            &p.ttop_call_function_entry,
            &p.ttop_call_function_single_entry,
        ] {
            if !prog.autoload() {
                return Err("IPI call/call-single split: not loaded on this kernel".into());
            }
            links.push(prog.attach().map_err(|e| {
                explain("IPI call/call-single split: probe call_function_entry", &e)
            })?);
        }
        self.split_links = links;
        self.measured.recv = true;
        self.measured.split_epoch += 1;
        Ok(())
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
        let mut out = IrqSample {
            measured: self.measured,
            ..IrqSample::default()
        };
        let inserts = self.skel.maps.bss_data.as_deref().map(|b| b.inserts[0]);
        // The senders' entries, then each CPU's sums not yet in them (ipi_src_acc in
        // bpf/ttop.h), in that order: a CPU that moves its sums into an entry between
        // the two reads leaves them to the next read instead of counting them twice.
        let mut raw = Vec::new();
        self.walk
            .for_each(&self.skel.maps.ipi_src, inserts, |k, v| {
                let k: types::ipi_src_key = from_bytes(k);
                let s: types::ipi_src_stats = from_bytes(v);
                raw.push((k, s));
            });
        let id = |k: &types::ipi_src_key| (k.tgid, k.kind, k.func);
        let mut index: Option<HashMap<(u32, u32, u64), usize>> = None;
        for (cpu, c) in self.read_cpus() {
            out.cpus.push(IrqCpu {
                cpu,
                recv: c.recv[..4].to_vec(),
                sent: c.sent[..4].to_vec(),
                tlb: c.tlb[..6].to_vec(),
                tlb_shootdowns: match self.shoot {
                    // tlb:tlb_flush's TLB_REMOTE_SHOOTDOWN: a remote flush that ran.
                    Shootdowns::TlbFlush => c.tlb[1],
                    _ => c.tlb_shootdowns,
                },
                tlb_requests: c.tlb_requests,
            });
            let a = c.acc;
            if a.s.ipis == 0 && a.s.queued == 0 {
                continue;
            }
            // One pass over the entries, the first time a CPU holds sums.
            let index = index.get_or_insert_with(|| {
                raw.iter()
                    .enumerate()
                    .map(|(i, (k, _))| (id(k), i))
                    .collect()
            });
            match index.get(&id(&a.key)) {
                Some(&i) => {
                    raw[i].1.ipis += a.s.ipis;
                    raw[i].1.queued += a.s.queued;
                }
                None => {
                    index.insert(id(&a.key), raw.len());
                    raw.push((a.key, a.s));
                }
            }
        }
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

    /// Each CPU's counters, each copy read whole (its sender sums not being changed).
    fn read_cpus(&self) -> Vec<(u32, types::irq_cpu_stats)> {
        let mut out = Vec::new();
        for cpu in 0..self.ncpus {
            // A CPU changes its sums for well under a microsecond: a second read nearly
            // always finds them whole.
            let mut last = None;
            for _ in 0..1000 {
                let key = cpu.to_ne_bytes();
                let Ok(Some(v)) = self.skel.maps.irq_cpu.lookup(&key, MapFlags::ANY) else {
                    break;
                };
                let c: types::irq_cpu_stats = from_bytes(&v);
                let whole = c.acc.seq_begin == c.acc.seq_end;
                last = Some(c);
                if whole {
                    break;
                }
            }
            if let Some(c) = last {
                out.push((cpu, c));
            }
        }
        out
    }

    /// Forget the sender rows of processes that are gone (after they were reported).
    /// A gone process whose sums a CPU still holds keeps its rows until that CPU has
    /// moved them into ipi_src (when it counts another sender): deleted earlier, they
    /// would come back as a new row.
    pub fn forget_procs(&mut self, tgids: &[u32]) {
        let mut gone: foldhash::HashSet<u32> = tgids.iter().copied().collect();
        gone.extend(self.forget_later.drain(..));
        if gone.is_empty() {
            return;
        }
        let held: foldhash::HashSet<u32> = self
            .read_cpus()
            .iter()
            .filter(|(_, c)| c.acc.s.ipis != 0 || c.acc.s.queued != 0)
            .map(|(_, c)| c.acc.key.tgid)
            .collect();
        self.forget_later = gone.intersection(&held).copied().collect();
        let maps = &self.skel.maps;
        let mut keys = Vec::new();
        map_read::for_each(&maps.ipi_src, |k, _| {
            let t = from_bytes::<types::ipi_src_key>(k).tgid;
            if gone.contains(&t) && !held.contains(&t) {
                keys.extend_from_slice(k);
            }
        });
        map_read::delete_all(&maps.ipi_src, &keys);
    }
}
