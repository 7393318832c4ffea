//! The `TTOP_*` environment variables, read once at start into one value: each one takes a
//! path an older kernel or a comparison needs on a kernel that has the modern one, so the
//! tests and benchmarks can check it here. docs/env.md lists them in one table; the man
//! page's ENVIRONMENT section too.

use std::sync::OnceLock;

/// What the environment asks of the collectors (all off by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// TTOP_UNPACED (any value): the /proc scan reads at its own speed, not top's pace.
    pub unpaced: bool,
    /// TTOP_SCHED_RAW_TP (any value): the scheduler programs' raw_tp copies, as a kernel
    /// without BTF loads.
    pub sched_raw_tp: bool,
    /// TTOP_FUTEX_RAW_SYSCALLS (any value): raw_syscalls instead of the futex syscalls'
    /// own tracepoints when every futex call is hooked.
    pub futex_raw_syscalls: bool,
    /// TTOP_FUTEX_NO_SLEEPS (any value): every futex call hooked instead of the
    /// scheduler-side counting, as a kernel before 5.15 gets.
    pub futex_no_sleeps: bool,
    /// TTOP_LOCK_STACK_CACHE=off: walk every kernel-lock contention's stack.
    pub lock_stack_cache_off: bool,
    /// TTOP_STACK_MAPS=N: the kernel-lock, futex and mmap_lock stack maps hold N stacks
    /// each (at most 4096), so a test can make stacks share buckets and spill.
    pub stack_maps: Option<u32>,
    /// TTOP_USTACKS=off: keep no futex or mmap_lock user stacks.
    pub ustacks_off: bool,
    /// TTOP_OFF_PER_S=N: off-CPU stacks sent per second over all CPUs before waits are
    /// sampled (default 2,000), so a test can make sampling weigh light loads too.
    pub off_per_s: Option<u64>,
    /// TTOP_NO_DWARF=1: frame pointers only, no .eh_frame unwinding.
    pub no_dwarf: bool,
    /// TTOP_KALLSYMS=file: read /proc/kallsyms instead of asking the kernel.
    pub kallsyms_file: bool,
    /// TTOP_DETACH_INLINE=1: detach the probes in ttop's own process when quitting.
    pub detach_inline: bool,
    /// TTOP_KERNEL_HIDE=a,b,...: tracepoints, helpers, map types, fields or functions
    /// ("kprobes" for all kprobes) to behave as if this kernel lacked.
    pub kernel_hide: Vec<String>,
    /// TTOP_BPF_FLOOR=1: every event program returns at once (bpf/floor.h), on the same
    /// hooks: the floor the benchmark and the CI gate net ttop's BPF cost of. Shows
    /// nothing true; the header says so.
    pub bpf_floor: bool,
    /// TTOP_IPI_SPLIT=1: count the call/call-single split of IPIs received from the
    /// start, as the IPI view does while open (for --json, recordings and tests).
    pub ipi_split: bool,
}

impl Overrides {
    /// Parse them from `get` (the process environment, or a test's table).
    pub fn from(get: impl Fn(&str) -> Option<String>) -> Self {
        let set = |k: &str| get(k).is_some();
        let is = |k: &str, v: &str| get(k).as_deref() == Some(v);
        Self {
            unpaced: set("TTOP_UNPACED"),
            sched_raw_tp: set("TTOP_SCHED_RAW_TP"),
            futex_raw_syscalls: set("TTOP_FUTEX_RAW_SYSCALLS"),
            futex_no_sleeps: set("TTOP_FUTEX_NO_SLEEPS"),
            lock_stack_cache_off: is("TTOP_LOCK_STACK_CACHE", "off"),
            stack_maps: get("TTOP_STACK_MAPS")
                .and_then(|v| v.trim().parse::<u32>().ok())
                .map(|n| n.clamp(1, 4096)),
            ustacks_off: is("TTOP_USTACKS", "off"),
            off_per_s: get("TTOP_OFF_PER_S")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|n| n.max(1)),
            no_dwarf: is("TTOP_NO_DWARF", "1"),
            kallsyms_file: is("TTOP_KALLSYMS", "file"),
            detach_inline: is("TTOP_DETACH_INLINE", "1"),
            kernel_hide: get("TTOP_KERNEL_HIDE")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect(),
            bpf_floor: is("TTOP_BPF_FLOOR", "1"),
            ipi_split: is("TTOP_IPI_SPLIT", "1"),
        }
    }

    /// The names it reads, for the documentation and the man page.
    pub const NAMES: [&str; 14] = [
        "TTOP_UNPACED",
        "TTOP_SCHED_RAW_TP",
        "TTOP_FUTEX_RAW_SYSCALLS",
        "TTOP_FUTEX_NO_SLEEPS",
        "TTOP_LOCK_STACK_CACHE",
        "TTOP_STACK_MAPS",
        "TTOP_USTACKS",
        "TTOP_OFF_PER_S",
        "TTOP_NO_DWARF",
        "TTOP_KALLSYMS",
        "TTOP_DETACH_INLINE",
        "TTOP_KERNEL_HIDE",
        "TTOP_BPF_FLOOR",
        "TTOP_IPI_SPLIT",
    ];
}

/// This process's, read on first use.
pub fn overrides() -> &'static Overrides {
    static O: OnceLock<Overrides> = OnceLock::new();
    O.get_or_init(|| {
        Overrides::from(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_is_read_as_documented() {
        let env = [
            ("TTOP_UNPACED", "0"),
            ("TTOP_USTACKS", "on"),
            ("TTOP_NO_DWARF", "1"),
            ("TTOP_STACK_MAPS", "99999"),
            ("TTOP_KERNEL_HIDE", " csd_queue_cpu, kprobes ,"),
        ];
        let o = Overrides::from(|k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        });
        // "set" variables take any value, even 0 (as docs/env.md says); the others
        // only their one value.
        assert!(o.unpaced && !o.ustacks_off && o.no_dwarf && !o.sched_raw_tp);
        assert_eq!(o.kernel_hide, ["csd_queue_cpu", "kprobes"]);
        assert_eq!(o.stack_maps, Some(4096));
        assert_eq!(Overrides::from(|_| None), Overrides::default());
    }

    /// Every variable named here is documented in docs/env.md, and docs/env.md names no
    /// TTOP_ variable that is not read here (beyond the benchmarks' own).
    #[test]
    fn docs_env_lists_exactly_these() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/env.md")).unwrap();
        for n in Overrides::NAMES {
            assert!(doc.contains(&format!("`{n}`")), "{n} is not in docs/env.md");
        }
        for w in doc.split('`').filter(|w| w.starts_with("TTOP_")) {
            let name = w.split(['=', ' ']).next().unwrap();
            assert!(
                Overrides::NAMES.contains(&name) || name == "TTOP_BENCH_BEFORE",
                "docs/env.md names {name}, which nothing reads"
            );
        }
    }
}
