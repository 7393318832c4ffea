//! What this kernel offers ttop's eBPF programs, asked of its BTF before anything is
//! loaded (one parse of /sys/kernel/btf/vmlinux, ~3 ms): which tracepoints exist and with
//! how many arguments (`btf_trace_NAME`), which helpers and map types its verifier knows
//! (the values of `enum bpf_func_id` and `enum bpf_map_type`), which struct fields and
//! functions it has, and whether it can take kprobes. The collectors choose their
//! programs from these answers (libbpf autoload), so a missing hook leaves out its
//! program alone and the reason can name what is missing; the load's own retry
//! (`bpf_common::load_degrading`) catches what no check foresaw.

use std::collections::{HashMap, HashSet};

use libbpf_rs::btf::types::{Composite, Enum, Enum64, FuncProto, Ptr, Typedef};
use libbpf_rs::btf::{Btf, BtfKind, ReferencesType};

/// Everything asked of the kernel, as plain values (Send: the collectors load on threads
/// of their own).
#[derive(Debug, Clone, Default)]
pub struct KernelFacts {
    /// The kernel release (`uname -r`), for messages.
    pub release: String,
    /// The kernel has BTF (without it no tp_btf program and no CO-RE).
    pub btf: bool,
    /// Tracepoints ttop may hook, with their number of arguments (raw_tp / tp_btf view).
    tracepoints: HashMap<&'static str, usize>,
    /// Helpers (BPF_FUNC_* names without the prefix) the kernel knows.
    helpers: HashSet<String>,
    /// Map types (BPF_MAP_TYPE_* names without the prefix) the kernel knows.
    map_types: HashSet<String>,
    /// "struct.field" pairs asked about that exist.
    fields: HashSet<&'static str>,
    /// Kernel functions asked about that exist (BTF FUNC records: not inlined).
    funcs: HashSet<&'static str>,
    /// The kernel can attach kprobes (the kprobe PMU, which libbpf uses, is there).
    pub kprobes: bool,
    /// /proc/interrupts has x86's IPI lines (RES, CAL, IWI, TLB): the kernel counts
    /// IPIs received and TLB shootdowns itself ("proc_interrupts" to hide).
    pub proc_ipi_lines: bool,
}

/// The tracepoints any ttop program attaches to (raw_tp / tp_btf names).
pub const TRACEPOINTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_waking",
    "sched_migrate_task",
    "sched_process_exit",
    "task_newtask",
    "task_rename",
    "call_function_entry",
    "call_function_single_entry",
    "reschedule_entry",
    "irq_work_entry",
    "ipi_send_cpu",
    "ipi_send_cpumask",
    "csd_queue_cpu",
    "csd_function_entry",
    "tlb_flush",
    "contention_begin",
    "contention_end",
    "mmap_lock_start_locking",
    "mmap_lock_acquire_returned",
    "mmap_lock_released",
    "sys_enter",
    "sys_exit",
];

/// Struct fields asked about ("struct.field").
pub const FIELDS: &[&str] = &[
    "flush_tlb_info.initiating_cpu",
    "mm_struct.owner",
    "task_struct.__state",
];

/// Kernel functions asked about (kprobe targets).
pub const FUNCS: &[&str] = &["flush_tlb_func", "flush_tlb_func_remote"];

/// This kernel's facts, asked once per process (with TTOP_KERNEL_HIDE applied).
pub fn facts() -> &'static KernelFacts {
    static FACTS: std::sync::OnceLock<KernelFacts> = std::sync::OnceLock::new();
    FACTS.get_or_init(|| {
        let mut f = KernelFacts::probe();
        f.hide_from_env();
        f
    })
}

impl KernelFacts {
    /// Ask this kernel. Never fails: what cannot be read is absent.
    pub fn probe() -> Self {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let kprobes = std::path::Path::new("/sys/bus/event_source/devices/kprobe/type").exists();
        let proc_ipi_lines = cfg!(target_arch = "x86_64") && proc_ipi_lines();
        let Ok(btf) = Btf::from_vmlinux() else {
            return Self {
                release,
                kprobes,
                proc_ipi_lines,
                ..Self::default()
            };
        };
        let mut f = Self {
            release,
            btf: true,
            kprobes,
            proc_ipi_lines,
            ..Self::default()
        };
        for &tp in TRACEPOINTS {
            if let Some(n) = tracepoint_args(&btf, tp) {
                f.tracepoints.insert(tp, n);
            }
        }
        f.helpers = enum_names(&btf, "bpf_func_id", "BPF_FUNC_");
        f.map_types = enum_names(&btf, "bpf_map_type", "BPF_MAP_TYPE_");
        for &sf in FIELDS {
            let (s, field) = sf.split_once('.').expect("struct.field");
            let has = btf
                .type_by_name::<Composite>(s)
                .is_some_and(|c| has_member(&btf, &c, field, 0));
            if has {
                f.fields.insert(sf);
            }
        }
        for &func in FUNCS {
            let has = btf
                .type_by_name::<libbpf_rs::btf::BtfType>(func)
                .is_some_and(|t| t.kind() == BtfKind::Func);
            if has {
                f.funcs.insert(func);
            }
        }
        f
    }

    /// Facts for a kernel that has everything ttop uses (unit tests of the choices).
    pub fn everything() -> Self {
        Self {
            release: "test".into(),
            btf: true,
            tracepoints: TRACEPOINTS
                .iter()
                .map(|&t| (t, if t == "sched_switch" { 4 } else { 2 }))
                .collect(),
            helpers: ["task_pt_regs", "get_current_task_btf", "task_storage_get"]
                .into_iter()
                .map(String::from)
                .collect(),
            map_types: ["TASK_STORAGE", "RINGBUF"]
                .into_iter()
                .map(String::from)
                .collect(),
            fields: FIELDS.iter().copied().collect(),
            funcs: FUNCS.iter().copied().collect(),
            kprobes: true,
            proc_ipi_lines: true,
        }
    }

    /// The tracepoint exists (in BTF: raw_tp and tp_btf programs can attach to it).
    pub fn has_tp(&self, name: &str) -> bool {
        self.tracepoints.contains_key(name)
    }

    /// Its number of arguments, if it exists.
    pub fn tp_args(&self, name: &str) -> Option<usize> {
        self.tracepoints.get(name).copied()
    }

    /// The helper BPF_FUNC_`name` exists.
    pub fn has_helper(&self, name: &str) -> bool {
        self.helpers.contains(name)
    }

    /// The map type BPF_MAP_TYPE_`name` exists.
    pub fn has_map_type(&self, name: &str) -> bool {
        self.map_types.contains(name)
    }

    /// "struct.field" (one of FIELDS) exists.
    pub fn has_field(&self, sf: &str) -> bool {
        self.fields.contains(sf)
    }

    /// The kernel function (one of FUNCS) exists and kprobes can attach to it.
    pub fn can_kprobe(&self, func: &str) -> bool {
        self.kprobes && self.funcs.contains(func)
    }

    /// The kernel function exists (whether or not kprobes can reach it).
    pub fn has_func(&self, func: &str) -> bool {
        self.funcs.contains(func)
    }

    /// Drop a fact, to take a fallback on a kernel that has the modern hook
    /// (TTOP_KERNEL_HIDE, for tests; see `hide_from_env`).
    pub fn hide(&mut self, what: &str) {
        self.tracepoints.remove(what);
        self.helpers.remove(what);
        self.map_types.remove(what);
        self.fields.retain(|f| *f != what);
        self.funcs.retain(|f| *f != what);
        if what == "kprobes" {
            self.kprobes = false;
        }
        if what == "proc_interrupts" {
            self.proc_ipi_lines = false;
        }
    }

    /// TTOP_KERNEL_HIDE=a,b,...: pretend this kernel lacks these tracepoints, helpers,
    /// map types, fields or functions ("kprobes" for all kprobes), so that the
    /// fallbacks older kernels take are tested on this one too.
    pub fn hide_from_env(&mut self) {
        for w in &crate::collect::overrides::overrides().kernel_hide {
            self.hide(w);
        }
    }
}

/// Whether /proc/interrupts has the x86 IPI lines ttop reads instead of counting those
/// interrupts itself.
fn proc_ipi_lines() -> bool {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    let p = crate::model::irq::ProcInterrupts::parse(&text);
    !p.cpus.is_empty()
        && ["RES", "CAL", "IWI", "TLB"]
            .iter()
            .all(|l| p.lines.contains_key(*l))
}

/// `btf_trace_NAME` is a typedef of a pointer to a function whose first argument is the
/// tracepoint's context: the rest are the tracepoint's arguments.
fn tracepoint_args(btf: &Btf<'_>, tp: &str) -> Option<usize> {
    let td = btf.type_by_name::<Typedef>(&format!("btf_trace_{tp}"))?;
    let ptr = Ptr::try_from(td.referenced_type()).ok()?;
    let proto = FuncProto::try_from(ptr.referenced_type()).ok()?;
    Some(proto.len().saturating_sub(1))
}

/// Whether a struct or union has a member `field`, looking inside its anonymous
/// members too (mm_struct keeps its fields in one since 6.2).
fn has_member(btf: &Btf<'_>, c: &Composite<'_>, field: &str, depth: u32) -> bool {
    c.iter().any(|m| match m.name.and_then(|n| n.to_str()) {
        Some(n) if !n.is_empty() => n == field,
        _ => {
            depth < 4
                && btf
                    .type_by_id::<Composite>(m.ty)
                    .is_some_and(|inner| has_member(btf, &inner, field, depth + 1))
        }
    })
}

/// The names of an enum's values, without a prefix.
fn enum_names(btf: &Btf<'_>, name: &str, prefix: &str) -> HashSet<String> {
    let strip = |n: Option<&std::ffi::OsStr>| {
        n.and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(prefix))
            .map(String::from)
    };
    if let Some(e) = btf.type_by_name::<Enum>(name) {
        return e.iter().filter_map(|m| strip(m.name)).collect();
    }
    if let Some(e) = btf.type_by_name::<Enum64>(name) {
        return e.iter().filter_map(|m| strip(m.name)).collect();
    }
    HashSet::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiding_takes_away_only_what_is_named() {
        let mut f = KernelFacts::everything();
        f.hide("csd_queue_cpu");
        f.hide("task_pt_regs");
        f.hide("kprobes");
        assert!(!f.has_tp("csd_queue_cpu") && f.has_tp("csd_function_entry"));
        assert!(!f.has_helper("task_pt_regs") && f.has_helper("get_current_task_btf"));
        assert!(!f.can_kprobe("flush_tlb_func") && f.has_func("flush_tlb_func"));
        assert_eq!(f.tp_args("sched_switch"), Some(4));
    }

    /// On the machine running the tests, the facts match what the kernel exports
    /// elsewhere: every tracepoint tracefs lists (when it is mounted) is found in BTF,
    /// and sched_switch has 3 or 4 arguments.
    #[test]
    fn facts_agree_with_tracefs() {
        let f = KernelFacts::probe();
        if !f.btf {
            eprintln!("no BTF here: nothing to compare");
            return;
        }
        let n = f
            .tp_args("sched_switch")
            .expect("every kernel has sched_switch");
        assert!(n == 3 || n == 4, "sched_switch has {n} arguments");
        assert!(f.has_helper("map_lookup_elem"));
        assert!(f.has_map_type("HASH"));
        for (group, tp) in [
            ("sched", "sched_wakeup"),
            ("tlb", "tlb_flush"),
            ("lock", "contention_begin"),
        ] {
            let dir = std::path::Path::new("/sys/kernel/tracing/events")
                .join(group)
                .join(tp);
            if std::path::Path::new("/sys/kernel/tracing/events").is_dir() {
                assert_eq!(f.has_tp(tp), dir.is_dir(), "{tp}: BTF and tracefs disagree");
            }
        }
    }
}
