//! The scheduler collector: loads bpf/sched.bpf.c, attaches each probe on its own (a
//! kernel that lacks one loses that probe, not the rest) and reads the maps once per tick.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, RawFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use crate::collect::bpf::common::{
    LeftOut, autoload_off, c_str, explain, from_bytes, key_u32, load_degrading,
};
use crate::collect::bpf::kernel::KernelFacts;
use crate::collect::bpf::map_read;
use crate::collect::futex_share::{self, SharedMaps, Take};
use crate::collect::sched::dirty::{Dirty, DirtyTids};
use crate::model::features::Feature;
use crate::model::latency::{self, LatStats, LatencySample};
use crate::model::sample::{BpfCpu, BpfProc, BpfSample, BpfThread, Drops, GhostName, OFF_CAUSES};

mod blocked;
mod features;
mod lat_exits;
mod lat_read;
mod lock_split;
mod task_iters;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/sched.skel.rs"));
}
use skel::{SchedSkel, SchedSkelBuilder, types};

/// thread_stats.lat_state (bpf/ttop.h): its one latency is in lat1_*.
const TTOP_LAT_ONE: u32 = 1;

pub struct SchedCollector {
    skel: SchedSkel<'static>,
    _links: Vec<Link>,
    /// The task iterator of Blocked now (None where this kernel did not load it).
    blocked_iter: Option<Link>,
    /// Where thread_stats live in task local storage (bpf/sched.bpf.c threads_in_task):
    /// the task iterator that lists them at each read. None: the threads hash is walked.
    threads_iter: Option<Link>,
    in_task: bool,
    /// Reads at which the thread iterator failed (added to drops.threads).
    threads_unread: u64,
    ncpus: u32,
    /// Threads the /proc scan must read again (None: every probe it needs did not
    /// attach, or the kernel cannot map the array: the scan reads every thread).
    dirty: Option<Dirty>,
    /// The attached programs (descriptors owned by the skeleton), and the runs the kernel
    /// has skipped of them so far: a skipped run may be a missing mark.
    progs: Vec<RawFd>,
    misses: u64,
    /// threads, procs, lat_threads, ghost_names (the TTOP_INS_* order).
    walks: [map_read::Tracked; 4],
    /// Exited threads' one latency (None where the ring buffer could not be set up:
    /// those are then not counted, and `problems` says so).
    lat_exits: Option<lat_exits::LatExits>,
    /// When the last read() ended (CLOCK_MONOTONIC ns): the time its figures are at.
    read_at_ns: u64,
    /// When the last begin_scan ran (CLOCK_MONOTONIC ns).
    scan_began_ns: u64,
    /// Probes that could not attach, with why.
    pub problems: Vec<String>,
    /// What they measure on this kernel, and through which hooks.
    pub features: Vec<Feature>,
}

impl SchedCollector {
    /// Open, load and attach. Err is a one-line, user-facing reason.
    /// `take`: the contention object's offer of its futex maps (futex_share.rs); the
    /// answer says whether the switch program counts the futex waits that slept.
    pub fn load(facts: &KernelFacts, mut take: Option<Take>) -> Result<Self, String> {
        let ncpus = libbpf_rs::num_possible_cpus().map_err(|e| e.to_string())? as u32;
        // tp_btf programs read the kernel's structs with plain loads, raw_tp ones with a
        // helper call per field; a kernel without BTF gets the raw_tp copies of the same
        // code.
        // TTOP_SCHED_RAW_TP=1 loads the raw_tp copies here too (tests use it to check the
        // fallback on a kernel that has tp_btf).
        let btf = facts.btf && !crate::collect::overrides::overrides().sched_raw_tp;
        // The futex side needs tp_btf (task storage, the saved registers), as the
        // contention object's own switch program does.
        let shared = take.as_ref().and_then(Take::maps).filter(|_| btf);
        // Per-thread state in task local storage (5.11+), read with a task iterator.
        let in_task = btf && facts.has_map_type("TASK_STORAGE");
        let (mut skel, mut left_out) = Self::open_load(facts, btf, in_task, shared.as_ref())?;
        let switch_rejected = |l: &[LeftOut]| {
            l.iter()
                .any(|l| l.prog == "ttop_sched_switch" || l.prog == "ttop_sched_switch3")
        };
        let mut counts_futex = shared.is_some();
        if counts_futex && switch_rejected(&left_out) {
            // The verifier took the switch program without the futex side before: the
            // contention object counts the waits with its own program.
            (skel, left_out) = Self::open_load(facts, btf, in_task, None)?;
            counts_futex = false;
        }
        let mut links = Vec::new();
        let mut problems: Vec<String> = left_out
            .iter()
            .map(|l| {
                format!(
                    "probe {}: the kernel's verifier rejected it ({})",
                    l.prog, l.why
                )
            })
            .collect();
        let mut fds = Vec::new();
        let progs = &mut skel.progs;
        let mut attach = |name: &str, pair: &[&libbpf_rs::ProgramMut<'static>]| {
            // Only one of the set was loaded.
            let Some(p) = pair.iter().find(|p| p.autoload()) else {
                problems.push(format!("probe {name}: not loaded on this kernel"));
                return;
            };
            match p.attach() {
                Ok(l) => {
                    links.push(l);
                    fds.push(p.as_fd().as_raw_fd());
                }
                Err(e) => problems.push(explain(&format!("probe {name}"), &e)),
            }
        };
        attach(
            "sched_switch",
            &[
                &progs.ttop_sched_switch,
                &progs.ttop_sched_switch3,
                &progs.ttop_raw_sched_switch,
            ],
        );
        attach(
            "sched_wakeup",
            &[&progs.ttop_sched_wakeup, &progs.ttop_raw_sched_wakeup],
        );
        attach(
            "sched_wakeup_new",
            &[
                &progs.ttop_sched_wakeup_new,
                &progs.ttop_raw_sched_wakeup_new,
            ],
        );
        attach(
            "sched_migrate_task",
            &[
                &progs.ttop_sched_migrate_task,
                &progs.ttop_raw_sched_migrate_task,
            ],
        );
        attach(
            "task_newtask",
            &[&progs.ttop_task_newtask, &progs.ttop_raw_task_newtask],
        );
        attach(
            "sched_process_exit",
            &[
                &progs.ttop_sched_process_exit,
                &progs.ttop_raw_sched_process_exit,
            ],
        );
        attach(
            "task_rename",
            &[&progs.ttop_task_rename, &progs.ttop_raw_task_rename],
        );
        counts_futex &= !problems.iter().any(|p| p.starts_with("probe sched_switch"));
        if let Some(t) = take.as_mut() {
            t.answer(counts_futex);
        }
        // Skipping unchanged threads needs every event that can change one.
        let dirty = problems
            .is_empty()
            .then(|| {
                let (t, p) = (&skel.maps.dirty_tids, &skel.maps.dirty_tgids);
                Some(Dirty {
                    tids: DirtyTids::map(t.as_fd(), t.max_entries())?,
                    tgids: DirtyTids::map(p.as_fd(), p.max_entries())?,
                    births: 0,
                    read_all: false,
                })
            })
            .flatten();
        // (After `dirty`: this one does not mark threads.) Threads asleep since before now: their sleep starts now, with its cause.
        if let Err(e) = task_iters::seed_sleepers(&skel.progs.ttop_seed_sleepers) {
            problems.push(format!(
                "probe seed_sleepers: {e}: the time-split of a thread asleep since before ttop started counts from its first wakeup"
            ));
        }
        // (After `dirty`: they mark no threads, and a kernel without them loses nothing else.)
        lock_split::attach(
            &skel.progs.ttop_split_lock_begin,
            &skel.progs.ttop_split_lock_end,
            &mut links,
            &mut fds,
            &mut problems,
        );
        let threads_iter = if in_task {
            match skel.progs.ttop_dump_threads.attach() {
                Ok(l) => Some(l),
                // Without it no thread's figures can be read: the thread views would be
                // empty, not wrong, so say so rather than fail the whole object.
                Err(e) => {
                    problems.push(explain("probe dump_threads (per-thread figures)", &e));
                    None
                }
            }
        } else {
            None
        };
        let blocked_iter = blocked::iterator(&skel.progs.ttop_blocked_stacks);
        if blocked_iter.is_none() {
            problems.push(
                "probe blocked_stacks: not loaded on this kernel (task iterators need BTF): Blocked now lists threads without their kernel stacks".into(),
            );
        }
        if links.is_empty() {
            return Err(problems
                .first()
                .cloned()
                .unwrap_or_else(|| "no probe attached".into()));
        }
        let lat_exits = lat_exits::LatExits::new(&skel.maps.lat_exits)
            .map_err(|e| {
                problems.push(format!(
                    "probe lat_exits: {e}: the scheduling latency of a thread that ran once and exited is not counted"
                ))
            })
            .ok();
        if crate::collect::overrides::overrides().bpf_floor {
            problems.push(
                "TTOP_BPF_FLOOR=1: every eBPF program returns at once (the cost benchmark's \
                 floor); the eBPF figures are empty"
                    .into(),
            );
        }
        let switch = if !btf {
            "raw_tp/sched_switch"
        } else if facts.tp_args("sched_switch") == Some(3) {
            "tp_btf/sched_switch (3 arguments: state read from the task, before 5.18)"
        } else {
            "tp_btf/sched_switch"
        };
        Ok(Self {
            skel,
            _links: links,
            blocked_iter,
            threads_iter,
            in_task,
            threads_unread: 0,
            ncpus,
            dirty,
            misses: recursion_misses(&fds),
            progs: fds,
            walks: Default::default(),
            features: features::features(switch, &problems),
            lat_exits,
            read_at_ns: 0,
            scan_began_ns: u64::MAX,
            problems,
        })
    }

    /// Open and load either the tp_btf programs (`btf`) or their raw_tp copies, leaving
    /// out what this kernel lacks: sched_switch without prev_state (before 5.18) gets the
    /// 3-argument program; a program the verifier rejects anyway is left out alone.
    /// `shared`: the contention object's futex maps, for the switch program's futex side
    /// (without them the scheduler object creates none of them).
    fn open_load(
        facts: &KernelFacts,
        btf: bool,
        in_task: bool,
        shared: Option<&SharedMaps>,
    ) -> Result<(SchedSkel<'static>, Vec<LeftOut>), String> {
        let switch3 = facts.tp_args("sched_switch") == Some(3);
        // One byte per possible thread id; a kernel that cannot mmap an array gets
        // one-entry maps and no skipping.
        let can_map = crate::collect::sched::dirty::kernel_can_map();
        load_degrading("eBPF scheduler probes: load", 8, |off| {
            // The skeleton borrows its object for its whole life; the collector lives as
            // long as the program, so the object is leaked on purpose (once per attempt).
            let obj: &'static mut MaybeUninit<OpenObject> =
                Box::leak(Box::new(MaybeUninit::uninit()));
            let mut open = SchedSkelBuilder::default().open(obj)?;
            let p = &mut open.progs;
            for (tp_btf, raw) in [
                (&mut p.ttop_sched_wakeup, &mut p.ttop_raw_sched_wakeup),
                (
                    &mut p.ttop_sched_wakeup_new,
                    &mut p.ttop_raw_sched_wakeup_new,
                ),
                (
                    &mut p.ttop_sched_migrate_task,
                    &mut p.ttop_raw_sched_migrate_task,
                ),
                (&mut p.ttop_task_newtask, &mut p.ttop_raw_task_newtask),
                (
                    &mut p.ttop_sched_process_exit,
                    &mut p.ttop_raw_sched_process_exit,
                ),
                (&mut p.ttop_task_rename, &mut p.ttop_raw_task_rename),
            ] {
                tp_btf.set_autoload(btf);
                raw.set_autoload(!btf);
            }
            p.ttop_sched_switch.set_autoload(btf && !switch3);
            p.ttop_sched_switch3.set_autoload(btf && switch3);
            p.ttop_raw_sched_switch.set_autoload(!btf);
            // The split's kernel-lock parts (lock:contention_begin/end, 5.19).
            let locks = facts.has_tp("contention_begin") && facts.has_tp("contention_end");
            p.ttop_split_lock_begin.set_autoload(locks);
            p.ttop_split_lock_end.set_autoload(locks);
            // Task iterators (5.8) need BTF, as tp_btf does.
            p.ttop_seed_sleepers.set_autoload(btf);
            p.ttop_blocked_stacks.set_autoload(btf);
            p.ttop_dump_threads.set_autoload(in_task);
            // Only the thread map this kernel uses is created (the other's references
            // are in code the verifier drops: threads_in_task is a load-time constant).
            open.maps.threads.set_autocreate(!in_task)?;
            open.maps.thread_store.set_autocreate(in_task)?;
            // One key per possible CPU (each key holds a value per CPU).
            if let Ok(n) = libbpf_rs::num_possible_cpus() {
                open.maps.cpu_remote.set_max_entries(n.max(1) as u32)?;
            }
            for m in [&mut open.maps.dirty_tids, &mut open.maps.dirty_tgids] {
                match can_map {
                    true => {
                        m.set_max_entries(crate::collect::sched::dirty::entries_for_pid_max())?
                    }
                    false => {
                        m.set_map_flags(0)?;
                        m.set_max_entries(1)?;
                    }
                }
            }
            if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                ro.ttop_floor = u32::from(crate::collect::overrides::overrides().bpf_floor);
                ro.futex_sleeps_shared = u32::from(shared.is_some());
                ro.threads_in_task = u32::from(in_task);
                ro.ustacks_off = u32::from(crate::collect::overrides::overrides().ustacks_off);
            }
            match shared {
                Some(m) => m.reuse_in(open.open_object_mut())?,
                None => futex_share::not_created(open.open_object_mut())?,
            }
            autoload_off(open.open_object_mut(), off);
            open.load()
        })
    }

    /// Which threads the /proc scan must read again (None: read every thread). A
    /// sched_switch the kernel never delivered marks, when the next one shows the gap,
    /// both the thread that left unseen and the one that came in.
    pub fn dirty(&self) -> Option<&Dirty> {
        self.dirty.as_ref()
    }

    fn data(&mut self) -> &mut types::data {
        self.skel
            .maps
            .data_data
            .as_deref_mut()
            .expect(".data is mmapped")
    }

    fn bss(&mut self) -> &mut types::bss {
        self.skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect(".bss is mmapped")
    }

    /// Called just before each /proc scan: threads born from now on and dead before
    /// the next call were never seen by a scan ("ghosts").
    pub fn begin_scan(&mut self) {
        self.scan_began_ns = crate::util::mono_ns();
        let d = self.data();
        // Volatile: the BPF programs read it concurrently through the mmapped page.
        // SAFETY: the pointer comes from a live &mut into the mmapped .data section.
        unsafe { std::ptr::write_volatile(&mut d.scan_gen, d.scan_gen + 1) };
        if self.dirty.is_none() {
            return;
        }
        // Read before the scan lists /proc: a process counted after this read is listed
        // by the next scan at the latest.
        // SAFETY: a plain load from the mmapped .bss, which the BPF programs update with
        // atomic adds; volatile so it is read again every tick.
        let births = unsafe { std::ptr::read_volatile(&self.bss().procs_born) };
        // A run the kernel skipped (a probe firing while the same program was already
        // running on that CPU, as when an interrupt wakes a thread during a wakeup) may
        // have left a thread unmarked: read everything once.
        let misses = recursion_misses(&self.progs);
        let skipped = misses != self.misses;
        self.misses = misses;
        if let Some(d) = self.dirty.as_mut() {
            d.births = births;
            d.read_all = skipped;
        }
    }

    /// When the last read ended: the instant its figures are at (`read`).
    pub fn read_at_ns(&self) -> u64 {
        self.read_at_ns
    }

    /// Read every map once. The state of threads on CPU, waiting or asleep, and of run
    /// queues since their last event, is extrapolated to the end of the read (not
    /// before `mono_ns`; `read_at_ns` says when).
    /// `waiting` holds the threads the /proc scan just saw runnable: a thread of theirs
    /// that is off CPU with a pending enqueue time is waiting right now, and that wait so
    /// far is counted, so a long wait lands in the intervals it spans.
    pub fn read(&mut self, mono_ns: u64, waiting: &foldhash::HashSet<u32>) -> BpfSample {
        let mut out = BpfSample::default();
        let tick_gen = self.data().tick_gen;
        let ins = self.bss().inserts;
        let maps = &self.skel.maps;
        let mut w_lat = std::mem::take(&mut self.walks[2]);
        let [w_threads, w_procs, _, w_ghosts] = &mut self.walks;
        let mut current: Vec<u32> = vec![0; self.ncpus as usize];
        let scan_began = self.scan_began_ns;
        let mut cpu_open: Vec<(u64, u32)> = Vec::with_capacity(self.ncpus as usize);
        // Threads in a state since their last event (row, state, since), extended to the
        // end of the read once it is over.
        let mut opens: Vec<(usize, Open, u64)> = Vec::new();
        let mut blocked: Vec<blocked::Candidate> = Vec::new();
        for cpu in 0..self.ncpus {
            let Ok(Some(v)) = maps.cpu_stats.lookup(&cpu.to_ne_bytes(), MapFlags::ANY) else {
                continue;
            };
            let c: types::cpu_stats = from_bytes(&v);
            // Extrapolated to the end of the read (below).
            let area = u128::from(c.runq_area);
            cpu_open.push((c.runq_last_ts, c.runq_last_nr));
            let max = if c.runq_max_gen == tick_gen {
                c.runq_max
            } else {
                0
            };
            current[cpu as usize] = c.cur_tid;
            let (migrations, wakeups) = remote_counts(&maps.cpu_remote, cpu);
            out.cpus.push(BpfCpu {
                cpu,
                switches: c.switches,
                migrations,
                wakeups,
                runq_area_ns: area,
                runq_max: max.max(c.runq_last_nr),
                runq_now: c.runq_last_nr,
            });
        }
        // Threads whose only latency is still in their thread_stats entry.
        let mut lat1: Vec<LatStats> = Vec::new();
        let mut take = |tid: u32, t: types::thread_stats| {
            if t.lat_state == TTOP_LAT_ONE {
                let one = [t.lat1_ns, t.lat1_ts, t.lat1_gen];
                lat1.push(lat_read::one_latency(tid, t.tgid, one, tick_gen));
            }
            let row = out.threads.len();
            // Still on a CPU: the time since it switched in is added at the end (whether
            // it is, is decided there: it may have come in since cpu_stats was read).
            if t.on_cpu != 0 {
                opens.push((row, Open::OnCpu(t.cpu), t.last_in));
            } else if t.enq_ts != 0 && (waiting.contains(&tid) || t.enq_ts >= scan_began) {
                // Runnable per the scan, or woken since the scan began (after the scan
                // read it asleep): a stale enqueue time is older than both.
                opens.push((row, Open::Waiting, t.enq_ts));
            } else if t.off_ts != 0 && (t.off_cause as usize) < OFF_CAUSES {
                opens.push((row, Open::Asleep(t.off_cause as usize), t.off_ts));
                if blocked::is_block(t.off_cause) {
                    blocked.push((tid, t.tgid, t.off_cause, t.off_ts));
                }
            }
            out.threads.push(BpfThread {
                tid,
                tgid: t.tgid,
                oncpu_ns: t.sum_ns.saturating_sub(t.base_ns),
                runq_wait_ns: t.runq_wait_ns,
                switches: t.switches,
                off_ns: t.off_ns,
                oncpu_wall_ns: t.oncpu_wall_ns,
            });
        };
        match &self.threads_iter {
            Some(link) => {
                let rec = std::mem::size_of::<types::thread_rec>();
                match task_iters::run(link) {
                    Ok(bytes) => {
                        for r in bytes.chunks_exact(rec) {
                            let r: types::thread_rec = from_bytes(r);
                            take(r.tid, r.s);
                        }
                    }
                    // Counted where a full thread map is: these threads went unread.
                    Err(_) => self.threads_unread += 1,
                }
            }
            None if self.in_task => self.threads_unread += 1,
            None => w_threads.for_each(&maps.threads, Some(ins[0]), |k, v| {
                take(key_u32(k), from_bytes(v));
            }),
        }
        // The sample's time is the end of the walk: an entry read late in it (ttop
        // preempted mid-walk on a busy machine) may hold events up to then, and every
        // state still open at its read is extended to the same instant, so each thread's
        // parts add up to the time between two reads.
        let end = crate::util::mono_ns().max(mono_ns);
        self.read_at_ns = end;
        // Who is on each CPU now, too: a thread that came in during the walk is on it.
        let current_after: Vec<u32> = (0..self.ncpus)
            .map(|cpu| {
                maps.cpu_stats
                    .lookup(&cpu.to_ne_bytes(), MapFlags::ANY)
                    .ok()
                    .flatten()
                    .map_or(0, |v| from_bytes::<types::cpu_stats>(&v).cur_tid)
            })
            .collect();
        out.blocked = blocked::blocked_now(self.blocked_iter.as_ref(), blocked, end);
        for (row, open, since) in opens {
            let t = &mut out.threads[row];
            let d = end.saturating_sub(since);
            match open {
                // A thread we believe on a CPU that is not that CPU's, before or after
                // the walk, left it unseen (a sched_switch the kernel did not deliver).
                Open::OnCpu(cpu) => {
                    let on = |v: &Vec<u32>| v.get(cpu as usize) == Some(&t.tid);
                    if on(&current) || on(&current_after) {
                        t.oncpu_ns += d;
                        t.oncpu_wall_ns += d;
                    }
                }
                Open::Waiting => t.runq_wait_ns += d,
                Open::Asleep(c) => t.off_ns[c] += d,
            }
        }
        for (c, (last_ts, last_nr)) in out.cpus.iter_mut().zip(cpu_open) {
            if last_ts != 0 && end > last_ts {
                c.runq_area_ns += u128::from(last_nr) * u128::from(end - last_ts);
            }
        }
        w_procs.for_each(&maps.procs, Some(ins[1]), |k, v| {
            let p: types::proc_stats = from_bytes(v);
            out.procs.push(BpfProc {
                tgid: key_u32(k),
                created: p.created,
                exited: p.exited,
                ghosts: p.ghosts,
                dead_oncpu_ns: p.dead_oncpu_ns,
                dead_runq_wait_ns: p.dead_runq_wait_ns,
                ghost_oncpu_ns: p.ghost_oncpu_ns,
                comm: c_str(&p.comm.map(|c| c as u8)),
                dead_off_ns: p.dead_off_ns,
                dead_oncpu_wall_ns: p.dead_oncpu_wall_ns,
            });
        });
        w_ghosts.for_each(&maps.ghost_names, Some(ins[3]), |k, v| {
            let key: types::ghost_key = from_bytes(k);
            let g: types::ghost_stats = from_bytes(v);
            out.ghost_names.push(GhostName {
                tgid: key.tgid,
                comm: c_str(&key.comm.map(|c| c as u8)),
                count: g.count,
                oncpu_ns: g.oncpu_ns,
            });
        });
        // Drained now, not with the other counts above: a record written since then
        // must be read before the lat_threads entries that may have exited.
        let exits = self
            .lat_exits
            .as_ref()
            .map(|l| l.drain())
            .unwrap_or_default();
        out.latency = self.read_latency(tick_gen, lat1, &mut w_lat, Some(ins[2]), exits);
        self.walks[2] = w_lat;
        let unread = self.threads_unread;
        let bss = self.bss();
        out.drops = Drops {
            threads: bss.drops[0] + unread,
            procs: bss.drops[1],
            sched_gaps: bss.drops[2],
            ghost_names: bss.drops[7],
            lat_threads: bss.drops[3],
            lat_stale: bss.drops[4],
            ..Default::default()
        };
        let peak = if bss.runq_total_max_gen == tick_gen {
            bss.runq_total_max
        } else {
            0
        };
        out.runq_peak = peak.max(bss.runq_total).max(0) as u32;
        // Start a new interval for the max-trackers.
        let d = self.data();
        // SAFETY: as in begin_scan.
        unsafe { std::ptr::write_volatile(&mut d.tick_gen, tick_gen + 1) };
        out
    }

    /// Count only these processes in the kernel (None: everything). Cheaper than
    /// filtering in user space: unwatched tasks cost one map lookup per event.
    pub fn set_filter(&mut self, tgids: Option<&[u32]>) {
        let map = &self.skel.maps.filter_tgids;
        let old: Vec<Vec<u8>> = map.keys().collect();
        for k in old {
            let _ = map.delete(&k);
        }
        for t in tgids.unwrap_or_default() {
            let _ = map.update(&t.to_ne_bytes(), &[1u8], MapFlags::ANY);
        }
        let on = u32::from(tgids.is_some());
        let bss = self.bss();
        // SAFETY: a live &mut into the mmapped .bss section; BPF reads it concurrently.
        unsafe { std::ptr::write_volatile(&mut bss.filter_enabled, on) };
    }

    /// Forget processes that are gone from /proc after they have been reported once.
    pub fn forget_procs(&self, tgids: &[u32]) {
        if tgids.is_empty() {
            return;
        }
        // Batched: a churning machine ends hundreds of processes a tick, and a syscall
        // per key (what this was) is CPU a starved collector has least of.
        let gone: foldhash::HashSet<u32> = tgids.iter().copied().collect();
        let names = &self.skel.maps.ghost_names;
        let mut keys = Vec::new();
        map_read::for_each(names, |k, _| {
            if gone.contains(&from_bytes::<types::ghost_key>(k).tgid) {
                keys.extend_from_slice(k);
            }
        });
        map_read::delete_all(names, &keys);
        let procs: Vec<u8> = tgids.iter().flat_map(|t| t.to_ne_bytes()).collect();
        map_read::delete_all(&self.skel.maps.procs, &procs);
    }
}

/// The runs the kernel skipped, summed over `progs` (bpf_prog_info.recursion_misses, 5.12+;
/// 0 where the kernel does not report it).
fn recursion_misses(progs: &[RawFd]) -> u64 {
    use libbpf_rs::libbpf_sys as sys;
    progs
        .iter()
        .map(|&fd| {
            let mut info = sys::bpf_prog_info::default();
            let mut len = std::mem::size_of::<sys::bpf_prog_info>() as u32;
            // SAFETY: the kernel writes at most `len` bytes into `info`; every pointer
            // field is zero, so it copies nothing else out.
            let r = unsafe { sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
            if r == 0 { info.recursion_misses } else { 0 }
        })
        .sum()
}

/// A state a thread was in at its last event, still open when its entry was read.
enum Open {
    /// On this CPU.
    OnCpu(u32),
    Waiting,
    Asleep(usize),
}

/// The migrations to and wakeups of `cpu`, summed over the CPUs that counted them
/// (cpu_remote, a per-CPU array keyed by the target CPU).
fn remote_counts(map: &libbpf_rs::Map, cpu: u32) -> (u64, u64) {
    let Ok(Some(per_cpu)) = map.lookup_percpu(&cpu.to_ne_bytes(), MapFlags::ANY) else {
        return (0, 0);
    };
    per_cpu.iter().fold((0, 0), |(m, w), v| {
        let r: types::cpu_remote = from_bytes(v);
        (m + r.migrations, w + r.wakeups)
    })
}
