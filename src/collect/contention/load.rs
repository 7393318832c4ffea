//! Loading the contention probes: which programs this kernel can run (the futex waits
//! from the scheduler or from the syscalls' hooks, the kernel-lock and mmap_lock groups),
//! the load itself (leaving out what the kernel rejects), attaching each group on its
//! own, and what each figure is then measured through (`contention_features`).

use std::mem::MaybeUninit;

use foldhash::{HashMap, HashMapExt};
use libbpf_rs::OpenObject;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use super::hooks::{self, FutexHooks, FutexLinks};
use super::skel::ContentionSkelBuilder;
use super::{ContentionCollector, FutexTotals};
use crate::collect::bpf::common::{autoload_off, load_degrading};
use crate::collect::bpf::kernel::KernelFacts;
use crate::collect::bpf::tracefs;
use crate::collect::futex_share::{Offer, SharedMaps};
use crate::collect::stacks::kallsyms;
use crate::collect::stacks::symbols::Symbolizer;
use crate::collect::stacks::unwind::DwarfUnwinder;
use crate::model::features::{Feature, Status};

/// The futex syscalls with tracepoints of their own (syscalls:sys_enter_NAME and
/// sys_exit_NAME); each one this kernel has is hooked.
const FUTEX_SYSCALLS: [&str; 5] = [
    "futex",
    "futex_waitv",
    "futex_wait",
    "futex_wake",
    "futex_requeue",
];

/// The mmap_lock tracepoints the mmap_lock view needs.
const MMAP_TPS: [&str; 3] = [
    "mmap_lock_start_locking",
    "mmap_lock_acquire_returned",
    "mmap_lock_released",
];
const LOCKS_MISSING: &str =
    "this kernel has no lock:contention_begin tracepoint (added in Linux 5.19)";
const MMAP_MISSING: &str =
    "this kernel has no mmap_lock tracepoints (Linux 6.1 has them, 5.10 does not)";
/// Entries of the thread-state hash on kernels without task storage (TTOP_MAX_THREADS).
const TTOP_MAX_THREADS: u32 = 65536;

/// Why this kernel cannot count futex waits from the scheduler (None: it can).
fn sleeps_lack(f: &KernelFacts) -> Option<String> {
    if !f.btf {
        return Some("they need the kernel's BTF, CONFIG_DEBUG_INFO_BTF".into());
    }
    if !f.has_helper("task_pt_regs") {
        return Some("they need bpf_task_pt_regs, Linux 5.15".into());
    }
    if !f.has_map_type("TASK_STORAGE") {
        return Some("they need task storage, Linux 5.11".into());
    }
    if !f.has_tp("sched_waking") {
        return Some("they need the sched_waking tracepoint".into());
    }
    None
}

/// The contention probes' feature entries.
fn contention_features(
    facts: &KernelFacts,
    futex: &FutexLinks,
    futex_ok: bool,
    futex_off: bool,
    (locks_tp, locks_ok): (bool, bool),
    (mmap_tp, mmap_ok): (bool, bool),
    ustacks_off: bool,
) -> Vec<Feature> {
    let calls_hook = match futex.tracepoints() {
        Ok(_) => "tracepoint/syscalls:sys_enter_futex, sys_exit_futex",
        Err(_) => "raw_tp/raw_syscalls:sys_enter, sys_exit",
    };
    let sleeps_hook = match (
        facts.tp_args("sched_switch") == Some(3),
        futex.switch_in_sched(),
    ) {
        (true, true) => "tp_btf/sched_switch (3 arguments, the scheduler's program), sched_waking",
        (true, false) => "tp_btf/sched_switch (3 arguments), sched_waking",
        (false, true) => "tp_btf/sched_switch (the scheduler's program), sched_waking",
        (false, false) => "tp_btf/sched_switch, sched_waking",
    };
    let mut out = Vec::new();
    let off = |id: &str, note: &str| Feature::new(id, Status::Off, "", note);
    if futex_off {
        out.push(off("futex_waits", "--no-futex"));
        out.push(off("futex_calls", "--no-futex"));
    } else if !futex_ok {
        out.push(Feature::missing(
            "futex_waits",
            "the futex probes did not attach",
        ));
        out.push(Feature::missing(
            "futex_calls",
            "the futex probes did not attach",
        ));
    } else if futex.mode == FutexHooks::Sleeps {
        out.push(Feature::measured("futex_waits", sleeps_hook));
        out.push(Feature::new(
            "futex_calls",
            Status::Off,
            "",
            "hooked with --futex-calls, -p or --comm, and while the futex view is open",
        ));
    } else {
        out.push(Feature::measured("futex_waits", calls_hook));
        out.push(Feature::measured("futex_calls", calls_hook));
    }
    out.push(if locks_ok {
        Feature::measured(
            "kernel_locks",
            "raw_tp/lock:contention_begin, contention_end",
        )
    } else if !locks_tp {
        Feature::missing("kernel_locks", LOCKS_MISSING)
    } else {
        Feature::missing("kernel_locks", "the lock tracepoints did not attach")
    });
    out.push(if mmap_ok && locks_ok {
        Feature::measured("mmap_lock", "raw_tp/mmap_lock:*")
    } else if mmap_ok {
        Feature::new(
            "mmap_lock",
            Status::Fallback,
            "raw_tp/mmap_lock:*",
            "without lock:contention_begin (Linux 5.19) a wait is an acquisition slower than 10 us",
        )
    } else if !mmap_tp {
        Feature::missing("mmap_lock", MMAP_MISSING)
    } else {
        Feature::missing("mmap_lock", "the mmap_lock tracepoints did not attach")
    });
    out.push(if locks_ok {
        Feature::measured("kernel_stacks", "bpf_get_stackid at lock:contention_begin")
    } else {
        Feature::missing(
            "kernel_stacks",
            "taken at lock:contention_begin, which did not run",
        )
    });
    let regs = facts.has_helper("task_pt_regs") || cfg!(target_arch = "x86_64");
    out.push(if futex_off || !futex_ok {
        Feature::missing("user_stacks", "taken at futex waits, which are not measured")
    } else if ustacks_off {
        Feature::new("user_stacks", Status::Off, "", "TTOP_USTACKS=off")
    } else if facts.has_helper("task_pt_regs") {
        Feature::measured("user_stacks", "bpf_get_stackid + stack copies (bpf_task_pt_regs)")
    } else if regs {
        Feature::new(
            "user_stacks",
            Status::Fallback,
            "bpf_get_stackid + stack copies",
            "no bpf_task_pt_regs before Linux 5.15: the saved user registers are found at the top of the thread's kernel stack, as the kernel's task_pt_regs does",
        )
    } else {
        Feature::new(
            "user_stacks",
            Status::Fallback,
            "bpf_get_stackid",
            "frame pointers only: the stack copies .eh_frame unwinding needs bpf_task_pt_regs (Linux 5.15)",
        )
    });
    out
}

/// The futex syscalls whose enter and exit tracepoints this kernel has (mounting
/// tracefs if needed), or why the futex probes cannot use them.
fn futex_tracepoints() -> Result<Vec<&'static str>, String> {
    // TTOP_FUTEX_RAW_SYSCALLS=1 takes the fallback on a kernel that has the tracepoints
    // (tests use it to check the fallback's counts).
    if crate::collect::overrides::overrides().futex_raw_syscalls {
        return Err("TTOP_FUTEX_RAW_SYSCALLS is set".into());
    }
    let root = tracefs::root()?;
    let has = |n: &str| {
        tracefs::has_event(&root, "syscalls", &format!("sys_enter_{n}"))
            && tracefs::has_event(&root, "syscalls", &format!("sys_exit_{n}"))
    };
    if !has("futex") {
        return Err(
            "no syscalls:sys_enter_futex tracepoint (kernel built without CONFIG_FTRACE_SYSCALLS)"
                .into(),
        );
    }
    Ok(FUTEX_SYSCALLS.into_iter().filter(|n| has(n)).collect())
}

impl ContentionCollector {
    /// Open, load and attach, measuring futex waits as `futex` asks. A kernel that
    /// cannot run the scheduler-side futex programs (before 5.15: no bpf_task_pt_regs;
    /// or they fail to load or attach) gets the syscall hooks instead, with a problem
    /// saying so. Err is a one-line, user-facing reason.
    /// `offer`: the futex maps are offered to the scheduler object through it
    /// (futex_share.rs), whose switch program then counts the waits that slept.
    pub fn load(
        facts: &KernelFacts,
        futex: FutexHooks,
        on_demand: bool,
        mut offer: Offer,
    ) -> Result<Self, String> {
        if futex != FutexHooks::Sleeps {
            offer.send(None);
            return Self::load_with(facts, futex, false, None);
        }
        // TTOP_FUTEX_NO_SLEEPS=1 takes the fallback as such a kernel would (for tests).
        let why = if crate::collect::overrides::overrides().futex_no_sleeps {
            "TTOP_FUTEX_NO_SLEEPS is set".to_string()
        } else if let Some(lack) = sleeps_lack(facts) {
            lack
        } else {
            match Self::load_with(facts, futex, on_demand, Some(&mut offer)) {
                Ok(c) if c.futex.mode == FutexHooks::Sleeps => return Ok(c),
                // Loaded, but the two scheduler programs did not attach: the problem says why.
                Ok(c) => c.problems.join("; "),
                Err(why) => why,
            }
        };
        offer.send(None);
        let mut c = Self::load_with(facts, FutexHooks::Calls, false, None)?;
        let note = format!(
            "counted from the futex syscalls' hooks, a cost on every futex call: the \
             scheduler-side futex probes did not run ({why})"
        );
        if let Some(f) = c.features.iter_mut().find(|f| f.id == "futex_waits") {
            f.status = Status::Fallback;
            f.note = note;
        }
        Ok(c)
    }

    /// `on_demand`: with FutexHooks::Sleeps, load the per-call programs too, for
    /// `set_futex_calls` (the dashboard's futex view).
    /// `offer` (with FutexHooks::Sleeps): share the futex maps with the scheduler object.
    fn load_with(
        facts: &KernelFacts,
        futex: FutexHooks,
        on_demand: bool,
        mut offer: Option<&mut Offer>,
    ) -> Result<Self, String> {
        let no_futex = futex == FutexHooks::Off;
        let sleeps = futex == FutexHooks::Sleeps;
        let mut problems = Vec::new();
        // Kernel text and the syscall entry, for the lock-stack fingerprints (see
        // bpf/lock_stacks.h). Without them every contention takes a full stack walk,
        // as TTOP_LOCK_STACK_CACHE=off asks (for comparisons).
        let cache_off = crate::collect::overrides::overrides().lock_stack_cache_off;
        let ustacks_off = crate::collect::overrides::overrides().ustacks_off;
        let ktext = if cache_off {
            None
        } else {
            let (lo, hi) = (kallsyms::addr_of("_stext"), kallsyms::addr_of("_etext"));
            let entry = if cfg!(target_arch = "aarch64") {
                "invoke_syscall"
            } else {
                "do_syscall_64"
            };
            Some((
                (lo != 0 && hi > lo).then_some((lo, hi - lo)),
                kallsyms::span_of(entry),
            ))
        };
        // Futex hooks: the futex syscalls' own tracepoints if tracefs can be had, else
        // raw_syscalls, which every syscall on the machine pays for. Only the pair in
        // use is loaded.
        // With --no-futex none of the futex programs is loaded (nor tracefs mounted).
        let per_call = futex == FutexHooks::Calls || (sleeps && on_demand);
        let futex_tps = if per_call {
            futex_tracepoints()
        } else {
            Err("not hooked".to_string())
        };
        if no_futex {
            problems.push("futex view off (--no-futex): futex figures are not measured".into());
        } else if let (true, Err(why)) = (per_call, &futex_tps) {
            problems.push(format!(
                "futex probes hook every syscall (raw_syscalls, ~0.1 us each){}: {why}",
                if sleeps {
                    " while the futex view is open"
                } else {
                    ""
                }
            ));
        }
        // Task storage (5.11) holds each thread's state; before it, a hash by thread id.
        let by_tid = !facts.has_map_type("TASK_STORAGE");
        let locks_tp = facts.has_tp("contention_begin") && facts.has_tp("contention_end");
        let mmap_tp = MMAP_TPS.iter().all(|t| facts.has_tp(t));
        let switch3 = facts.tp_args("sched_switch") == Some(3);
        let mut futex_links = None;
        // Created by the first attempt, and the same maps in every later one: the
        // scheduler object has them.
        let mut shared: Option<SharedMaps> = None;
        let (skel, left_out) = load_degrading("eBPF contention probes: load", 8, |off| {
            // Leaked once per attempt, as in SchedCollector::load.
            let obj: &'static mut MaybeUninit<OpenObject> =
                Box::leak(Box::new(MaybeUninit::uninit()));
            let mut open = ContentionSkelBuilder::default().open(obj)?;
            if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                ro.ttop_floor = u32::from(crate::collect::overrides::overrides().bpf_floor);
                ro.ustacks_off = u32::from(ustacks_off);
                ro.state_by_tid = u32::from(by_tid);
                if let Some((text, entry)) = ktext {
                    if let Some((lo, len)) = text {
                        ro.ktext_lo = lo;
                        ro.ktext_len = len;
                    }
                    if let Some((lo, len)) = entry {
                        ro.syscall_entry_lo = lo;
                        ro.syscall_entry_len = len;
                    }
                }
            }
            // The probes' bookkeeping clock (see clock_ns in bpf/contention_futex.h), set
            // before they run and then at every read.
            if let Some(bss) = open.maps.bss_data.as_deref_mut() {
                bss.clock_ns = crate::util::mono_ns();
            }
            if let Some(n) = crate::collect::overrides::overrides().stack_maps {
                open.maps.kstacks.set_max_entries(n)?;
                open.maps.ustacks.set_max_entries(n)?;
                let mmap = open.maps.mmap_ustacks.max_entries();
                open.maps.mmap_ustacks.set_max_entries(n.min(mmap))?;
            }
            if by_tid {
                open.maps.thread_state.set_autocreate(false)?;
                open.maps.thread_state_h.set_max_entries(TTOP_MAX_THREADS)?;
            }
            let p = &mut open.progs;
            p.ttop_contention_begin.set_autoload(locks_tp);
            p.ttop_contention_end.set_autoload(locks_tp);
            for prog in [
                &mut p.ttop_mmap_start_locking,
                &mut p.ttop_mmap_acquire_returned,
                &mut p.ttop_mmap_released,
            ] {
                prog.set_autoload(mmap_tp);
            }
            futex_links = Some(FutexLinks::choose(
                &mut open,
                futex,
                on_demand,
                futex_tps.clone(),
                switch3,
            ));
            autoload_off(open.open_object_mut(), off);
            if let Some(o) = offer.as_deref_mut() {
                match &shared {
                    Some(m) => m.reuse_in(open.open_object_mut())?,
                    // A failed prepare fails the load the same way, with the reason.
                    None => {
                        if let Ok(m) = SharedMaps::prepare(open.open_object_mut()) {
                            o.send(m.try_clone().ok());
                            shared = Some(m);
                        }
                    }
                }
            }
            open.load()
        })?;
        let mut futex_links = futex_links.expect("chosen before the load");
        // The scheduler object answers once its own programs are attached.
        futex_links.set_switch_in_sched(offer.is_some_and(|o| o.sched_counts()));
        for l in &left_out {
            problems.push(format!(
                "probe {}: the kernel's verifier rejected it ({})",
                l.prog, l.why
            ));
        }
        let futex_ok = match futex_links.attach(&skel, &mut problems) {
            Ok(()) => !no_futex,
            Err(e) => {
                problems.push(e);
                false
            }
        };
        let mut links = Vec::new();
        let mut group =
            |what: &str, tries: Vec<(String, &libbpf_rs::ProgramMut<'static>)>| -> bool {
                if tries.iter().any(|(_, p)| !p.autoload()) {
                    return false;
                }
                let tries = tries.into_iter().map(|(n, p)| (n, p.attach())).collect();
                match hooks::group(what, tries) {
                    Ok(l) => {
                        links.extend(l);
                        true
                    }
                    Err(e) => {
                        problems.push(e);
                        false
                    }
                }
            };
        let p = &skel.progs;
        let locks_ok = group(
            "kernel lock view",
            vec![
                ("lock:contention_begin".into(), &p.ttop_contention_begin),
                ("lock:contention_end".into(), &p.ttop_contention_end),
            ],
        );
        let mmap_ok = group(
            "mmap_lock view",
            vec![
                (
                    "mmap_lock:mmap_lock_start_locking".into(),
                    &p.ttop_mmap_start_locking,
                ),
                (
                    "mmap_lock:mmap_lock_acquire_returned".into(),
                    &p.ttop_mmap_acquire_returned,
                ),
                ("mmap_lock:mmap_lock_released".into(), &p.ttop_mmap_released),
            ],
        );
        if !futex_ok && !locks_ok && !mmap_ok {
            return Err(problems
                .first()
                .cloned()
                .unwrap_or_else(|| "contention probes: none attached".into()));
        }
        let features = contention_features(
            facts,
            &futex_links,
            futex_ok,
            futex == FutexHooks::Off,
            (locks_tp, locks_ok),
            (mmap_tp, mmap_ok),
            ustacks_off,
        );
        let mut c = Self {
            skel,
            _links: links,
            futex: futex_links,
            problems,
            features,
            locks_ok,
            mmap_ok,
            syms: Symbolizer::default(),
            unwinder: DwarfUnwinder::new(),
            no_dwarf: crate::collect::overrides::overrides().no_dwarf,
            dwarf_words: HashMap::new(),
            last_read_ns: 0,
            prev_contended: HashMap::new(),
            prev_mmap: HashMap::new(),
            mmap_pids: Vec::new(),
            mmap_tids: Vec::new(),
            futex_totals: FutexTotals::default(),
            walks: Default::default(),
            stack_ids: Default::default(),
            reads: 0,
            unnamed_kstacks: 0,
            ncpus: libbpf_rs::num_possible_cpus().unwrap_or(usize::MAX),
        };
        let lock_tp = u32::from(locks_ok);
        let bss = c.bss();
        // SAFETY: a live &mut into the mmapped .bss that BPF programs read concurrently.
        unsafe { std::ptr::write_volatile(&mut bss.lock_tp_ok, lock_tp) };
        c.set_sched_counts(c.futex.sched_counts());
        Ok(c)
    }
}
