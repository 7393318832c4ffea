//! The collector: one object that owns every probe and the /proc scanner and turns a
//! tick into a Sample (the thread that runs it is `thread`).

use std::time::Duration;

use super::config::Config;
use super::filter;
use super::irq::IrqCollector;
use crate::collect::bpf::common as bpf_common;
use crate::collect::contention::{ContentionCollector, FutexHooks};
use crate::collect::procfs::scan::{self as proc_scan, ProcScanner};
use crate::collect::profile::ProfileConfig;
use crate::collect::profile::runner::ProfileRunner;
use crate::collect::sched::SchedCollector;
use crate::model::features::{self, Feature, Status};
use crate::model::sample::{FilterSpec, Mode, Sample, SystemInfo};
use crate::util::{mono_ns, wall_ns};

pub struct Collector {
    sched: Option<SchedCollector>,
    irq: Option<IrqCollector>,
    contention: Option<ContentionCollector>,
    profiler: Option<ProfileRunner>,
    /// The processes the profiler watches whatever the filter (the profile view's
    /// process, for off-CPU stacks); None: it follows the filter.
    profile_pids: Option<Vec<u32>>,
    scanner: ProcScanner,
    /// cgroupfs (None without a cgroup2 mount).
    cgroups: Option<crate::collect::cgroup::CgroupCollector>,
    /// /proc/stat, loadavg, uptime and /proc/interrupts, kept open.
    system: proc_scan::SystemFiles,
    interrupts: crate::collect::procfs::files::SysFile,
    mode: Mode,
    seq: u64,
    /// ttop's own cost (its CPU, memory and eBPF run time).
    own: super::own::OwnMeter,
    filter: Option<FilterSpec>,
    /// PIDs currently loaded into the kernel-side filter.
    active: Option<Vec<u32>>,
    /// The sampling interval: the scan's pacing to top's may use half of it at most.
    interval: Duration,
    /// Runnable threads per CPU over the last interval (what top would wait behind),
    /// and the run-queue integral and time it was measured from.
    others_per_cpu: f64,
    last_runq: Option<(u64, u128)>,
    /// Processes that created or ended at least CHURN_MIN threads last interval, and
    /// each process's count of both at the last sample.
    churning: foldhash::HashSet<u32>,
    last_churn: foldhash::HashMap<u32, u64>,
}

/// Threads created plus ended in one interval from which a process's threads are read
/// at top's pace: below it, a thread or two may come or go unseen by the pacing.
const CHURN_MIN: u64 = 10;

fn filter_spec(cfg: &Config) -> Option<FilterSpec> {
    cfg.filtered().then(|| FilterSpec {
        pids: cfg.pids.clone().unwrap_or_default(),
        comm: cfg.comm.clone(),
        matched: Vec::new(),
        cgroup: cfg.cgroup.clone(),
    })
}

/// Host facts for the header and the recording.
pub fn system_info() -> SystemInfo {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let uptime = proc_scan::read_system().uptime_s as u64;
    SystemInfo {
        host: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        ncpus: std::thread::available_parallelism()
            .map_or(1, |n| n.get() as u32)
            .max(proc_scan::read_system().cpus.len() as u32),
        clk_tck: procfs::ticks_per_second(),
        page_size: procfs::page_size(),
        boot_time_s: uptime,
    }
}

type Loaded<T> = Result<T, String>;

/// The figure families each collector measures (see model::features::IDS).
const SCHED_IDS: &[&str] = &["runnable", "cpu_time", "thread_churn", "sched_latency"];
const IRQ_IDS: &[&str] = &[
    "ipi_received",
    "ipi_sent",
    "tlb_shootdowns",
    "tlb_caused",
    "tlb_reasons",
];
const CONTENTION_IDS: &[&str] = &[
    "futex_waits",
    "futex_calls",
    "kernel_locks",
    "mmap_lock",
    "kernel_stacks",
    "user_stacks",
];

/// The profiler loads on demand (`ttop profile`, --profile, the profile view): what it
/// will be able to do here.
fn profile_features(f: &crate::collect::bpf::kernel::KernelFacts) -> Vec<Feature> {
    let ring = f.has_map_type("RINGBUF");
    let on = if ring {
        Feature::measured(
            "profile",
            "perf_event cpu-clock, bpf_get_stackid, stack copies",
        )
    } else {
        Feature::missing("profile", "needs the BPF ring buffer (Linux 5.8)")
    };
    let off = if !ring {
        Feature::missing("off_cpu", "needs the BPF ring buffer (Linux 5.8)")
    } else if !f.btf {
        Feature::missing("off_cpu", "needs tp_btf/sched_switch (the kernel's BTF)")
    } else if f.tp_args("sched_switch") == Some(3) {
        Feature::measured("off_cpu", "tp_btf/sched_switch (3 arguments)")
    } else {
        Feature::measured("off_cpu", "tp_btf/sched_switch")
    };
    vec![on, off]
}

/// Load the three BPF objects at once, one thread each. Each libbpf object parses the
/// kernel's BTF and is verified on its own, so one after another they took ~0.3 s;
/// side by side they share the CPUs. (The kernel addresses the IPI and lock probes
/// compare against are asked of the kernel, see kallsyms.rs.) Problems
/// keep the fixed order scheduler, IPI, contention.
fn load_all(
    futex: FutexHooks,
    on_demand: bool,
) -> (
    Loaded<SchedCollector>,
    Loaded<IrqCollector>,
    Loaded<ContentionCollector>,
) {
    let panicked = |what: &str| format!("eBPF {what} probes: the loading thread panicked");
    let facts = crate::collect::bpf::kernel::facts();
    // The contention object offers its futex maps to the scheduler object, whose switch
    // program then counts the futex waits that slept too (futex_share.rs).
    let (offer, take) = crate::collect::futex_share::link();
    std::thread::scope(|scope| {
        let irq = scope.spawn(|| IrqCollector::load(facts));
        let contention =
            scope.spawn(move || ContentionCollector::load(facts, futex, on_demand, offer));
        let sched = SchedCollector::load(facts, Some(take));
        (
            sched,
            irq.join().unwrap_or_else(|_| Err(panicked("IPI"))),
            contention
                .join()
                .unwrap_or_else(|_| Err(panicked("contention"))),
        )
    })
}

impl Collector {
    pub fn new(cfg: &Config) -> Self {
        let mut mode = Mode::default();
        let mut sched = None;
        let mut irq = None;
        let mut contention = None;
        if !cfg.bpf {
            let why = "eBPF off (--no-bpf): showing the /proc view only".to_string();
            mode.features = features::all_not_measured(Status::Off, "--no-bpf");
            mode.problems.push(why);
        } else if let Some(why) = bpf_common::preflight() {
            mode.features = features::all_not_measured(Status::Missing, &why);
            mode.problems.push(why);
        } else {
            bpf_common::capture_libbpf_log();
            bpf_common::raise_memlock();
            let (s, i, c) = load_all(cfg.futex_hooks(), cfg.futex_on_demand());
            let mut found = Vec::new();
            for (r, ids) in [
                (s.as_ref().map(|s| (&s.problems, &s.features)), SCHED_IDS),
                (i.as_ref().map(|i| (&i.problems, &i.features)), IRQ_IDS),
                (
                    c.as_ref().map(|c| (&c.problems, &c.features)),
                    CONTENTION_IDS,
                ),
            ] {
                match r {
                    Ok((p, f)) => {
                        mode.problems.extend(p.iter().cloned());
                        found.extend(f.iter().cloned());
                    }
                    Err(e) => {
                        mode.problems.push(e.clone());
                        found.extend(ids.iter().map(|id| Feature::missing(id, e.clone())));
                    }
                }
            }
            found.extend(profile_features(crate::collect::bpf::kernel::facts()));
            mode.problems
                .extend(found.iter().filter_map(Feature::problem));
            mode.features = features::in_order(found);
            (sched, irq, contention) = (s.ok(), i.ok(), c.ok());
        }
        mode.bpf = sched.is_some();
        let mut c = Self {
            sched,
            irq,
            contention,
            profiler: None,
            profile_pids: None,
            scanner: ProcScanner::new(None),
            cgroups: crate::collect::cgroup::CgroupCollector::new(cfg.cgroup.as_deref()),
            system: proc_scan::SystemFiles::default(),
            interrupts: crate::collect::procfs::files::SysFile::new(c"/proc/interrupts"),
            filter: filter_spec(cfg),
            active: None,
            interval: Duration::from_secs(1),
            others_per_cpu: 0.0,
            last_runq: None,
            churning: Default::default(),
            last_churn: Default::default(),
            own: super::own::OwnMeter::new(mode.bpf, cfg.bpf_budget_pct),
            mode,
            seq: 0,
        };
        if let Some(hz) = cfg.profile_hz {
            c.start_profile_mode(hz, cfg.profile_off_cpu);
        }
        c
    }

    /// Start sampling on-CPU stacks at `hz` per CPU, if no profiler is on; what stops it
    /// is a `problems` line (the JSON's `profile` stays null).
    /// See Request::FutexCalls.
    pub fn set_futex_calls(&mut self, on: bool) {
        if let Some(c) = self.contention.as_mut()
            && let Err(e) = c.set_futex_calls(on)
        {
            self.mode.problems.push(e);
        }
    }

    /// See Request::IpiSplit.
    pub fn set_ipi_split(&mut self, on: bool) {
        if let Some(c) = self.irq.as_mut()
            && let Err(e) = c.set_ipi_split(on)
        {
            self.mode.problems.push(e);
        }
    }

    pub fn start_profile(&mut self, hz: u64) {
        if self.profiler.is_none() {
            self.start_profile_mode(hz, false);
        }
    }

    /// Switch the profiler to on-CPU or off-CPU stacks (`o` in the profile view), of
    /// `pids` if given, else of the filter's processes. Off-CPU stacks of the whole
    /// machine are refused (a `problems` line): the view asks only with processes.
    pub fn set_profile_mode(&mut self, off_cpu: bool, pids: Option<Vec<u32>>) {
        let same = self
            .profiler
            .as_ref()
            .is_some_and(|p| p.off_cpu() == off_cpu);
        if same && self.profile_pids == pids {
            return;
        }
        // The rate asked for (--profile=HZ) stays. The old one's thread is joined here:
        // its perf events and programs go first.
        let hz = self.profiler.take().map_or(99, |p| p.hz());
        self.profile_pids = pids;
        self.start_profile_mode(hz, off_cpu);
    }

    fn start_profile_mode(&mut self, hz: u64, off_cpu: bool) {
        let filter = self.filter.as_ref();
        let pids = match &self.profile_pids {
            Some(p) => Some(p.clone()),
            None => filter.map(filter::resolve),
        };
        if off_cpu && pids.is_none() {
            self.mode.problems.push(
                "profile off: off-CPU stacks need -p or --comm (the whole machine's are too \
                 costly)"
                    .to_string(),
            );
            return;
        }
        if !self.mode.bpf {
            self.mode
                .problems
                .push("profile off: stack sampling needs eBPF".to_string());
            return;
        }
        match ProfileRunner::start(ProfileConfig {
            hz,
            filter: pids.is_some(),
            pids: pids.unwrap_or_default(),
            off_cpu,
            // Samples keep each frame's line, for the profile view's pprof export
            // (live and in recordings): the symboliser finds them with the names.
            lines: true,
        }) {
            Ok(p) => self.profiler = Some(p),
            Err(e) => self.mode.problems.push(format!("profile off: {e}")),
        }
    }

    /// The interval samples are taken at (the default is one second).
    pub fn set_interval(&mut self, interval: Duration) {
        self.interval = interval;
    }

    /// Read /proc as fast as ttop can instead of at top's pace (see top_pace.rs).
    pub fn unpaced(mut self) -> Self {
        self.interval = Duration::ZERO;
        self
    }

    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// Collect one Sample. The /proc scan comes first (it marks the ghost boundary), then
    /// /proc/stat and the BPF maps are read at one instant, which is the sample's time.
    /// Watch only these processes from the next tick on (None: everything).
    pub fn set_filter(&mut self, spec: Option<FilterSpec>) {
        self.filter = spec;
        if self.filter.is_none() {
            self.scanner.only_pids = None;
            self.active = None;
            if let Some(s) = self.sched.as_mut() {
                s.set_filter(None);
            }
            if let (Some(p), None) = (self.profiler.as_ref(), &self.profile_pids) {
                p.set_pids(None);
            }
        }
    }

    /// Resolve the filter to PIDs and push changes into the kernel and the scanner.
    fn apply_filter(&mut self) -> Option<FilterSpec> {
        let spec = self.filter.as_mut()?;
        spec.matched = filter::resolve(spec);
        if self.active.as_ref() != Some(&spec.matched) {
            if let Some(s) = self.sched.as_mut() {
                s.set_filter(Some(&spec.matched));
            }
            if let (Some(p), None) = (self.profiler.as_ref(), &self.profile_pids) {
                p.set_pids(Some(spec.matched.clone()));
            }
            self.active = Some(spec.matched.clone());
        }
        self.scanner.only_pids = Some(spec.matched.clone());
        Some(spec.clone())
    }

    pub fn sample(&mut self) -> Sample {
        let filter = self.apply_filter();
        if let Some(s) = self.sched.as_mut() {
            s.begin_scan();
        }
        let has_bpf = self.sched.is_some();
        let churning = has_bpf.then(|| self.churning.clone());
        let dirty = self.sched.as_mut().and_then(|s| s.dirty());
        let paced = !self.interval.is_zero() && !super::overrides::overrides().unpaced;
        self.scanner.pace = paced.then(|| proc_scan::PaceSetup {
            ncpus: online_cpus(),
            others_per_cpu: self.others_per_cpu,
            cap: self.interval / 2,
            churning,
        });
        let procs = self.scanner.scan_with(dirty);
        let cgroups = self.cgroups.as_mut().map(|c| c.read_all());
        // ttop's own cost first: its BPF statistics window opens and closes just before
        // /proc/stat is read, so a window spans one frame's interval.
        let parts = self.contention.as_mut().map(|c| c.part_clocks());
        let own = self.own.read(mono_ns(), parts);
        if let (Some(c), Some(shed)) = (self.contention.as_mut(), own.shed.as_ref()) {
            c.shed(shed);
        }
        let stat = self.system.read();
        let mut mono = mono_ns();
        let mut wall = wall_ns();
        let runnable: foldhash::HashSet<u32> = procs
            .iter()
            .flat_map(|p| p.tasks.iter().filter(|t| t.state == 'R').map(|t| t.tid))
            .collect();
        let mut bpf = self.sched.as_mut().map(|s| s.read(mono, &runnable));
        // The scheduler's figures are at the end of its read: so is the sample.
        if let Some(s) = self.sched.as_ref() {
            let at = s.read_at_ns();
            wall += at.saturating_sub(mono);
            mono = at;
        }
        // The contention counters right after the scheduler's, before the slower reads
        // below: a frame's futex and lock counts then span the frame's own interval. Read
        // after /proc/interrupts and the IRQ maps, their window moved by tens of ms from
        // frame to frame on a loaded machine (5% of a 1 kHz ticker's calls at -d 0.5).
        let contention = self.contention.as_mut().map(|c| c.read(mono));
        let interrupts = crate::model::irq::ProcInterrupts::parse(self.interrupts.read());
        let irq = self.irq.as_mut().map(|c| {
            let (s, drops) = c.read();
            if let Some(b) = bpf.as_mut() {
                b.drops.ipi_senders = drops;
            }
            s
        });
        let mut sample = Sample {
            seq: self.seq,
            wall_ns: wall,
            mono_ns: mono,
            mode: self.mode.clone(),
            stat,
            procs,
            bpf,
            irq,
            interrupts,
            filter,
            contention,
            profile: self.profiler.as_mut().map(|p| p.take()),
            top_scan: self.scanner.pace.as_ref().map(|_| self.scanner.top_scan),
            cgroups,
            own: Some(own),
        };
        self.seq += 1;
        self.others_per_cpu = self.runnable_per_cpu(&sample);
        if let Some(b) = &sample.bpf {
            let now: foldhash::HashMap<u32, u64> = b
                .procs
                .iter()
                .map(|p| (p.tgid, p.created + p.exited))
                .collect();
            self.churning = now
                .iter()
                .filter(|(t, n)| **n >= self.last_churn.get(t).copied().unwrap_or(0) + CHURN_MIN)
                .map(|(t, _)| *t)
                .collect();
            self.last_churn = now;
        }
        // Map-ordered lists in key order: deterministic, and recordings stay small.
        sample.canonical_order();
        if let (Some(s), Some(b)) = (self.sched.as_ref(), sample.bpf.as_ref()) {
            // Processes gone from /proc have now been reported once: drop their entries.
            let scanned: foldhash::HashSet<u32> = sample.procs.iter().map(|p| p.pid).collect();
            let gone: Vec<u32> = b
                .procs
                .iter()
                .map(|p| p.tgid)
                .filter(|t| {
                    !scanned.contains(t) && !std::path::Path::new(&format!("/proc/{t}")).exists()
                })
                .collect();
            s.forget_procs(&gone);
            if let Some(i) = self.irq.as_mut() {
                i.forget_procs(&gone);
            }
        }
        sample
    }
}

/// CPUs online (the slice top runs before a preemption scales with them).
fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.clamp(1, i64::from(u32::MAX) as libc::c_long) as u32
}

impl Collector {
    /// Runnable threads per CPU since the last sample: the time-weighted run-queue
    /// length from eBPF, else the kernel's instantaneous count less this reader.
    fn runnable_per_cpu(&mut self, s: &Sample) -> f64 {
        let ncpus = s.stat.cpus.len().max(1) as f64;
        if let Some(b) = &s.bpf {
            let area: u128 = b.cpus.iter().map(|c| c.runq_area_ns).sum();
            let last = self.last_runq.replace((s.mono_ns, area));
            if let Some((t, a)) = last
                && s.mono_ns > t
                && area >= a
            {
                return (area - a) as f64 / (s.mono_ns - t) as f64 / ncpus;
            }
            return f64::from(b.cpus.iter().map(|c| c.runq_now).sum::<u32>()) / ncpus;
        }
        f64::from(s.stat.procs_running.saturating_sub(1)) / ncpus
    }
}
