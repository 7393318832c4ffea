//! The on-CPU profiler: bpf/profile.bpf.c on a cpu-clock perf event per CPU at a fixed
//! frequency. Each sample brings the thread, its kernel stack id and a copy of its user
//! registers and stack top; the user stack is unwound here (`unwind`, from .eh_frame,
//! as `perf record --call-graph dwarf`), named (`symbols`, blazesym) and counted.
//!
//! Stacks are named as they arrive (the process may be gone by the end), once per
//! distinct address: a name cache per (process, address) makes a hot loop's samples
//! cost one unwind each, not one symbolisation. With `lines` each stack is also
//! counted with its frames' source files and lines (for pprof), beside its names.

use foldhash::{HashMap, HashMapExt};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBuffer, RingBufferBuilder};

use super::offcpu::{OffCpuWaits, Stack};
use crate::collect::bpf::common::{explain, from_bytes};
use crate::collect::bpf::perf_event::{
    self, ATTR_DISABLED, ATTR_FREQ, PERF_COUNT_SW_CPU_CLOCK, PERF_TYPE_SOFTWARE, PerfEventAttr,
};
use crate::collect::stacks::kallsyms;
use crate::collect::stacks::symbols::Symbolizer;
use crate::collect::stacks::unwind::{DwarfUnwinder, StackCopy};
use crate::model::profile::{FoldedProfile, LocatedStack, Location, StackKey, named};
use crate::util::mono_ns;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/profile.skel.rs"));
}
use skel::{ProfileSkel, ProfileSkelBuilder, types};

/// A cpu-clock sampler on `cpu` at `hz`, disabled until attached.
fn open_cpu_clock(cpu: u32, hz: u64) -> std::io::Result<std::os::fd::OwnedFd> {
    let mut attr = PerfEventAttr::new(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
    attr.sample_period_or_freq = hz;
    attr.flags = ATTR_DISABLED | ATTR_FREQ;
    perf_event::open_on_cpu(&attr, cpu)
}

/// What to sample.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// Samples per second per CPU.
    pub hz: u64,
    /// Only the processes in `pids` (more may be added with `Profiler::watch`); else
    /// every process but the idle task.
    pub filter: bool,
    pub pids: Vec<u32>,
    /// Weight stacks by time off-CPU (sched_switch out to back on a CPU), by reason,
    /// instead of sampling on-CPU stacks. Needs `filter`.
    pub off_cpu: bool,
    /// Also count each stack with its source files and lines (`FoldedProfile::
    /// add_located`), for pprof.
    pub lines: bool,
}

/// The frame an off-CPU stack starts with: why the thread left the CPU.
pub fn off_cpu_reason(reason: u32) -> &'static str {
    match reason {
        0 => "[off-cpu: runnable]",
        1 => "[off-cpu: io]",
        2 => "[off-cpu: futex]",
        3 => "[off-cpu: sleep]",
        4 => "[off-cpu: blocked]",
        _ => "[off-cpu: wait]",
    }
}

pub struct Profiler {
    skel: ProfileSkel<'static>,
    _links: Vec<Link>,
    ring: RingBuffer<'static>,
    /// Samples the ring buffer callback copied out, not yet counted.
    queue: Rc<RefCell<Vec<Vec<u8>>>>,
    unwinder: DwarfUnwinder,
    syms: Symbolizer,
    /// Functions (innermost inlined call first, with their lines) per (process,
    /// address, is a return address).
    names: HashMap<(u32, u64, bool), Location>,
    /// Kernel stacks by stack id, named, outermost first: each frame a name-only
    /// location, so that keeping a stack's lines allocates nothing per kernel frame.
    kstacks: HashMap<i32, Rc<[Location]>>,
    /// Process names, read when a process is first sampled.
    comms: HashMap<u32, String>,
    profile: FoldedProfile,
    /// Off-CPU mode: the watched threads' waits (offcpu.rs).
    waits: OffCpuWaits,
    off_cpu: bool,
    lines: bool,
}

impl Profiler {
    /// Load, and attach a sampler to every online CPU. Err is a one-line reason.
    pub fn start(cfg: &ProfileConfig) -> Result<Self, String> {
        if cfg.hz == 0 {
            return Err("profile frequency must be above 0".into());
        }
        if cfg.off_cpu && !cfg.filter {
            return Err(
                "off-CPU profiling needs -p PID or --comm NAME: for the whole machine \
                 it would copy a stack at every context switch of every process"
                    .into(),
            );
        }
        let obj: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = ProfileSkelBuilder::default()
            .open(obj)
            .map_err(|e| explain("eBPF profiler: open", &e))?;
        // Only the mode's program is loaded: a kernel without tp_btf still samples
        // on-CPU stacks.
        // Before 5.18 sched_switch has no prev_state argument: the 3-argument copy.
        let switch3 = crate::collect::bpf::kernel::facts().tp_args("sched_switch") == Some(3);
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.ttop_floor = u32::from(crate::collect::overrides::overrides().bpf_floor);
        }
        open.progs.ttop_profile.set_autoload(!cfg.off_cpu);
        open.progs.ttop_offcpu.set_autoload(cfg.off_cpu && !switch3);
        open.progs.ttop_offcpu3.set_autoload(cfg.off_cpu && switch3);
        // Room for 0.4 s of samples (drained every 0.1 s), at least the 4 MB of the C side.
        let cpus = perf_event::online_cpus();
        let want =
            cpus.len() as u64 * cfg.hz * std::mem::size_of::<types::ttop_prof_sample>() as u64 * 2
                / 5;
        let mut ring = want.clamp(4 << 20, 1 << 30).next_power_of_two();
        if cfg.off_cpu {
            // A record per context switch of the watched threads: 32 MB holds 0.1 s
            // (one drain) of 40,000 switches a second; beyond that waits are lost, and
            // counted as lost.
            ring = 32 << 20;
        }
        open.maps
            .prof_samples
            .set_max_entries(ring as u32)
            .map_err(|e| format!("eBPF profiler: ring buffer of {ring} bytes: {e}"))?;
        let mut skel = open
            .load()
            .map_err(|e| explain("eBPF profiler: load", &e))?;
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            bss.filter_pids = cfg.filter as u32;
            bss.off_per_window = off_per_window(cpus.len());
        }
        for pid in &cfg.pids {
            skel.maps
                .prof_pids
                .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY)
                .map_err(|e| format!("eBPF profiler: watch pid {pid}: {e}"))?;
        }
        let mut links = Vec::new();
        if cfg.off_cpu {
            let prog = if switch3 {
                &skel.progs.ttop_offcpu3
            } else {
                &skel.progs.ttop_offcpu
            };
            links.push(prog.attach().map_err(|e| {
                explain("eBPF off-CPU profiler: attach to sched_switch (tp_btf)", &e)
            })?);
        } else {
            for cpu in cpus {
                let fd = open_cpu_clock(cpu, cfg.hz).map_err(|e| {
                    format!("perf_event_open (cpu-clock, CPU {cpu}, {} Hz): {e}", cfg.hz)
                })?;
                // The link owns the event from here (libbpf closes it on detach); on an
                // error the fd is still ours and closes when dropped.
                let link = skel
                    .progs
                    .ttop_profile
                    .attach_perf_event(fd.as_raw_fd())
                    .map_err(|e| explain(&format!("eBPF profiler: attach on CPU {cpu}"), &e))?;
                std::mem::forget(fd);
                links.push(link);
            }
        }
        if links.is_empty() {
            return Err("no online CPU to sample".into());
        }
        let queue: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
        let q = queue.clone();
        // The builder borrows the map only to read its fd; the ring buffer keeps its own.
        let mut b = RingBufferBuilder::new();
        b.add(&skel.maps.prof_samples, move |data: &[u8]| {
            q.borrow_mut().push(data.to_vec());
            0
        })
        .map_err(|e| format!("eBPF profiler: ring buffer: {e}"))?;
        let ring = b
            .build()
            .map_err(|e| format!("eBPF profiler: ring buffer: {e}"))?;
        Ok(Self {
            skel,
            _links: links,
            ring,
            queue,
            unwinder: DwarfUnwinder::new(),
            syms: Symbolizer::default(),
            names: HashMap::new(),
            kstacks: HashMap::new(),
            comms: HashMap::new(),
            profile: FoldedProfile::default(),
            waits: OffCpuWaits::default(),
            off_cpu: cfg.off_cpu,
            lines: cfg.lines,
        })
    }

    /// Sample exactly these processes from now on (None: every process), as a
    /// dashboard filter that came, changed or went says.
    pub fn set_pids(&mut self, pids: Option<&[u32]>) {
        if self.off_cpu && pids.is_none() {
            return; // off-CPU mode never samples the whole machine
        }
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            bss.filter_pids = pids.is_some() as u32;
        }
        let pids = pids.unwrap_or_default();
        let keys: Vec<Vec<u8>> = self.skel.maps.prof_pids.keys().collect();
        for k in keys {
            let pid = u32::from_ne_bytes(k[..4].try_into().unwrap_or([0; 4]));
            if !pids.contains(&pid) {
                let _ = self.skel.maps.prof_pids.delete(&k);
            }
        }
        for &pid in pids {
            self.watch(pid);
        }
    }

    /// What was counted since the last call (the dashboard's interval).
    pub fn take_profile(&mut self) -> FoldedProfile {
        self.settle();
        std::mem::take(&mut self.profile)
    }

    /// Sample this process too (a --comm filter's newcomer).
    pub fn watch(&mut self, pid: u32) {
        let _ = self
            .skel
            .maps
            .prof_pids
            .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY);
    }

    /// Wait `timeout`, then count every sample that arrived (the BPF side never wakes
    /// a reader: it would cost the sampled CPU an interrupt and a reschedule per sample).
    pub fn poll(&mut self, timeout: Duration) {
        std::thread::sleep(timeout);
        let _ = self.ring.consume();
        let batch = std::mem::take(&mut *self.queue.borrow_mut());
        let now = mono_ns();
        for raw in batch {
            self.count(&raw, now);
        }
    }

    /// Off-CPU mode: watched switch-outs the BPF side saw and the ones it sent with a
    /// stack (the others sent who, why and when only).
    pub fn waits(&self) -> (u64, u64) {
        (
            percpu_sum(&self.skel.maps.prof_waits, 0),
            percpu_sum(&self.skel.maps.prof_waits, 1),
        )
    }

    fn count(&mut self, raw: &[u8], now: u64) {
        if raw.len() == std::mem::size_of::<types::ttop_prof_oncpu>() {
            let o: types::ttop_prof_oncpu = from_bytes(raw);
            self.waits.came_back(o.tid, o.ts);
            return;
        }
        if raw.len() == std::mem::size_of::<types::ttop_prof_off>() {
            let o: types::ttop_prof_off = from_bytes(raw);
            self.waits.left_without_stack(o.tgid, o.tid, o.reason, o.ts);
            return;
        }
        let s: types::ttop_prof_sample = from_bytes(raw);
        let stack = self.stack_key(&s, now);
        if self.off_cpu {
            self.waits
                .left_with_stack(s.tid, stack, s.reason, s.ts, s.keep_one_in);
        } else {
            self.add(stack, 1);
        }
    }

    /// Off-CPU mode: count the waits that ended since the last settle.
    fn settle(&mut self) {
        let (stacks, unkept) = self.waits.settle();
        for (stack, us) in stacks {
            self.add(stack, us);
        }
        for ((pid, reason), us) in unkept {
            let stack = self.unkept_stack(pid, reason);
            self.add(stack, us);
        }
    }

    /// The stack a process's off-CPU time is counted under when none of its waits for
    /// that reason kept a stack (with its names as lines when lines are kept).
    fn unkept_stack(&mut self, pid: u32, reason: u32) -> Stack {
        let process = self.process_name(pid, "?");
        let frames = vec![
            off_cpu_reason(reason).to_string(),
            "[stack not kept]".to_string(),
        ];
        let located = self.lines.then(|| LocatedStack {
            pid,
            process: process.clone(),
            thread: process.clone(),
            locations: frames.iter().map(|f| named(f.as_str())).collect(),
        });
        let key = StackKey {
            pid,
            thread: process.clone(),
            process,
            frames,
        };
        (key, located)
    }

    /// A process's name, read when it is first met (`fallback` when it is gone).
    fn process_name(&mut self, pid: u32, fallback: &str) -> String {
        self.comms
            .entry(pid)
            .or_insert_with(|| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim_end().to_string())
                    .unwrap_or_else(|_| fallback.to_string())
            })
            .clone()
    }

    fn add(&mut self, (key, located): Stack, n: u64) {
        if n > 0 {
            self.profile.add(key, n);
            if let Some(l) = located {
                self.profile.add_located(l, n);
            }
        }
    }

    /// The named stack of a record: process and thread, the off-CPU reason, the user
    /// frames outermost first, then the kernel frames; and with `lines` the same frames
    /// as locations (an address's inlined calls are one location; the reason and the
    /// kernel frames are names only).
    fn stack_key(&mut self, s: &types::ttop_prof_sample, now: u64) -> Stack {
        let pid = s.tgid;
        let thread = comm_str(&s.comm);
        let process = self.process_name(pid, &thread);
        let mut frames: Vec<String> = Vec::new();
        let mut locs: Vec<Location> = Vec::new();
        if self.off_cpu {
            frames.push(off_cpu_reason(s.reason).to_string());
            if self.lines {
                locs.push(named(off_cpu_reason(s.reason)));
            }
        }
        if s.len > 0 || s.ip != 0 {
            let copy = StackCopy {
                ip: s.ip,
                sp: s.sp,
                bp: s.bp,
                bytes: &s.bytes[..(s.len as usize).min(s.bytes.len())],
            };
            let syms = &mut self.syms;
            let (ips, _) = self
                .unwinder
                .unwind(pid, &copy, now, |a| syms.mapping(pid, a, now));
            for (i, &ip) in ips.iter().enumerate().rev() {
                let key = (pid, ip, i > 0);
                let loc = match self.names.get(&key) {
                    Some(n) => n.clone(),
                    None => {
                        let n: Location = self.syms.functions_at(pid, ip, i > 0, now).into();
                        self.names.insert(key, n.clone());
                        n
                    }
                };
                // Innermost first from the symboliser: outermost first here.
                frames.extend(loc.iter().rev().map(|f| f.name.clone()));
                if self.lines {
                    locs.push(loc);
                }
            }
        }
        if s.kstack >= 0 {
            // Stack ids are never reused (no BPF_F_REUSE_STACKID): named once each.
            let names = match self.kstacks.get(&s.kstack) {
                Some(n) => n.clone(),
                None => {
                    let ips = self.kernel_ips(s.kstack);
                    kallsyms::prefetch(ips.iter().copied());
                    // Off-CPU stacks are taken inside sched_switch: the tracepoint's
                    // and ttop's own program's frames are not the thread's.
                    // Cut through the last of them near the top: where the kernel lists
                    // no symbol for BPF programs (5.10), the program's address is named
                    // after whatever precedes it, so the run does not start at the top.
                    let own = ips
                        .iter()
                        .take(8)
                        .rposition(|&ip| {
                            kallsyms::lookup(ip).is_some_and(|(n, _)| is_tracing_frame(n))
                        })
                        .map_or(0, |i| i + 1);
                    let n: Rc<[Location]> = ips[own..]
                        .iter()
                        .rev()
                        .map(|&ip| {
                            named(match kallsyms::lookup(ip) {
                                Some((n, _)) => format!("{n}_[k]"),
                                None => "[unknown]_[k]".to_string(),
                            })
                        })
                        .collect();
                    self.kstacks.insert(s.kstack, n.clone());
                    n
                }
            };
            if self.lines {
                locs.extend(names.iter().cloned());
            }
            frames.extend(names.iter().map(|l| l[0].name.clone()));
        }
        let located = self.lines.then(|| LocatedStack {
            pid,
            process: process.clone(),
            thread: thread.clone(),
            locations: locs,
        });
        let key = StackKey {
            pid,
            process,
            thread,
            frames,
        };
        (key, located)
    }

    /// A kernel stack from the stack map, innermost first.
    fn kernel_ips(&self, id: i32) -> Vec<u64> {
        let Ok(Some(v)) = self
            .skel
            .maps
            .prof_kstacks
            .lookup(&id.to_ne_bytes(), MapFlags::ANY)
        else {
            return Vec::new();
        };
        v.chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .take_while(|&ip| ip != 0)
            .collect()
    }

    /// Samples the kernel could not deliver: (ring buffer full, kernel stack not stored).
    pub fn lost(&self) -> (u64, u64) {
        (
            percpu_sum(&self.skel.maps.prof_lost, 0),
            percpu_sum(&self.skel.maps.prof_lost, 1),
        )
    }

    /// Off-CPU mode: count the waits still in progress up to now (a thread asleep at
    /// the end of the window spent it off the CPU; it is counted as far as it went).
    pub fn finish(&mut self) {
        self.waits.end_all(mono_ns());
        self.settle();
    }

    /// Everything counted so far.
    pub fn profile(&self) -> &FoldedProfile {
        &self.profile
    }
}

/// Off-CPU stacks one CPU may send per sampling window (`TTOP_OFF_WINDOW_NS`, 10 ms):
/// 2,000 a second over all CPUs, 16 MB/s of stack copies, which the 32 MB ring buffer
/// holds for 2 s of a reader that falls behind (`TTOP_OFF_PER_S` overrides it).
fn off_per_window(cpus: usize) -> u32 {
    let per_s = crate::collect::overrides::overrides()
        .off_per_s
        .unwrap_or(2_000);
    (per_s / 100 / cpus.max(1) as u64).clamp(1, u64::from(u32::MAX)) as u32
}

/// A per-CPU u64 counter's sum over the CPUs.
fn percpu_sum(map: &impl MapCore, i: u32) -> u64 {
    map.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
        .ok()
        .flatten()
        .map(|per_cpu| {
            per_cpu
                .iter()
                .map(|b| u64::from_ne_bytes(b[..8].try_into().unwrap_or([0; 8])))
                .sum()
        })
        .unwrap_or(0)
}

/// A kernel frame of the tracing machinery that ran ttop's program, not of the thread.
fn is_tracing_frame(name: &str) -> bool {
    name.starts_with("bpf_prog_")
        || name.starts_with("bpf_trace_run")
        || name.starts_with("__bpf_trace_")
        || name.starts_with("__traceiter_")
}

fn comm_str(c: &[i8; 16]) -> String {
    let b: Vec<u8> = c
        .iter()
        .take_while(|&&x| x != 0)
        .map(|&x| x as u8)
        .collect();
    String::from_utf8_lossy(&b).into_owned()
}
