//! The on-CPU profiler: bpf/profile.bpf.c on a cpu-clock perf event per CPU at a fixed
//! frequency. Each sample brings the thread, its kernel stack id and a copy of its user
//! registers and stack top; the user stack is unwound here (`unwind`, from .eh_frame,
//! as `perf record --call-graph dwarf`), named (`symbols`, blazesym) and counted.
//!
//! Stacks are named as they arrive (the process may be gone by the end), once per
//! distinct address: a name cache per (process, address) makes a hot loop's samples
//! cost one unwind each, not one symbolisation.

use foldhash::{HashMap, HashMapExt};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBuffer, RingBufferBuilder};

use super::bpf_common::{explain, from_bytes};
use super::kallsyms;
use super::perf_event::{
    self, ATTR_DISABLED, ATTR_FREQ, PERF_COUNT_SW_CPU_CLOCK, PERF_TYPE_SOFTWARE, PerfEventAttr,
};
use super::symbols::Symbolizer;
use super::unwind::{DwarfUnwinder, StackCopy};
use crate::model::profile::{FoldedProfile, StackKey};
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
}

pub struct Profiler {
    skel: ProfileSkel<'static>,
    _links: Vec<Link>,
    ring: RingBuffer<'static>,
    /// Samples the ring buffer callback copied out, not yet counted.
    queue: Rc<RefCell<Vec<Vec<u8>>>>,
    unwinder: DwarfUnwinder,
    syms: Symbolizer,
    /// Function names per (process, address, is a return address).
    names: HashMap<(u32, u64, bool), Rc<[String]>>,
    /// Kernel stacks by stack id, named, outermost first.
    kstacks: HashMap<i32, Rc<[String]>>,
    /// Process names, read when a process is first sampled.
    comms: HashMap<u32, String>,
    profile: FoldedProfile,
}

impl Profiler {
    /// Load, and attach a sampler to every online CPU. Err is a one-line reason.
    pub fn start(cfg: &ProfileConfig) -> Result<Self, String> {
        if cfg.hz == 0 {
            return Err("profile frequency must be above 0".into());
        }
        let obj: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = ProfileSkelBuilder::default()
            .open(obj)
            .map_err(|e| explain("eBPF profiler: open", &e))?;
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.filter_pids = cfg.filter;
        }
        // Room for 0.4 s of samples (drained every 0.1 s), at least the 4 MB of the C side.
        let cpus = perf_event::online_cpus();
        let want =
            cpus.len() as u64 * cfg.hz * std::mem::size_of::<types::ttop_prof_sample>() as u64 * 2
                / 5;
        let ring = want.clamp(4 << 20, 1 << 30).next_power_of_two();
        open.maps
            .prof_samples
            .set_max_entries(ring as u32)
            .map_err(|e| format!("eBPF profiler: ring buffer of {ring} bytes: {e}"))?;
        let skel = open
            .load()
            .map_err(|e| explain("eBPF profiler: load", &e))?;
        for pid in &cfg.pids {
            skel.maps
                .prof_pids
                .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY)
                .map_err(|e| format!("eBPF profiler: watch pid {pid}: {e}"))?;
        }
        let mut links = Vec::new();
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
        })
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

    fn count(&mut self, raw: &[u8], now: u64) {
        let s: types::ttop_prof_sample = from_bytes(raw);
        let pid = s.tgid;
        let thread = comm_str(&s.comm);
        let process = self
            .comms
            .entry(pid)
            .or_insert_with(|| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim_end().to_string())
                    .unwrap_or_else(|_| thread.clone())
            })
            .clone();
        // User frames, outermost first.
        let mut frames: Vec<String> = Vec::new();
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
                let names = match self.names.get(&key) {
                    Some(n) => n.clone(),
                    None => {
                        let n: Rc<[String]> = self.syms.functions_at(pid, ip, i > 0, now).into();
                        self.names.insert(key, n.clone());
                        n
                    }
                };
                // Innermost first from the symboliser: outermost first here.
                frames.extend(names.iter().rev().cloned());
            }
        }
        if s.kstack >= 0 {
            // Stack ids are never reused (no BPF_F_REUSE_STACKID): named once each.
            let names = match self.kstacks.get(&s.kstack) {
                Some(n) => n.clone(),
                None => {
                    let n: Rc<[String]> = self
                        .kernel_ips(s.kstack)
                        .iter()
                        .rev()
                        .map(|&ip| match kallsyms::lookup(ip) {
                            Some((n, _)) => format!("{n}_[k]"),
                            None => "[unknown]_[k]".to_string(),
                        })
                        .collect();
                    self.kstacks.insert(s.kstack, n.clone());
                    n
                }
            };
            frames.extend(names.iter().cloned());
        }
        self.profile.add(
            StackKey {
                pid,
                process,
                thread,
                frames,
            },
            1,
        );
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
        let read = |i: u32| -> u64 {
            self.skel
                .maps
                .prof_lost
                .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
                .ok()
                .flatten()
                .map(|per_cpu| {
                    per_cpu
                        .iter()
                        .map(|b| u64::from_ne_bytes(b[..8].try_into().unwrap_or([0; 8])))
                        .sum()
                })
                .unwrap_or(0)
        };
        (read(0), read(1))
    }

    /// Everything counted so far.
    pub fn profile(&self) -> &FoldedProfile {
        &self.profile
    }
}

fn comm_str(c: &[i8; 16]) -> String {
    let b: Vec<u8> = c
        .iter()
        .take_while(|&&x| x != 0)
        .map(|&x| x as u8)
        .collect();
    String::from_utf8_lossy(&b).into_owned()
}
