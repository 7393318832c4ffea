//! The "top view": what a /proc scan sees, taken once per tick exactly as top does it
//! (/proc/PID/stat and /proc/PID/task/TID/stat).
//!
//! It must be cheap and harmless to the processes it looks at: it never reads
//! /proc/PID/environ, maps or smaps (they take the target's mmap_lock: seed 002),
//! it reads cmdline once per new process, and it keeps the stat files open from tick to
//! tick (see proc_files.rs): the same text as opening them again, at half the cost.

use foldhash::{HashMap, HashMapExt};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use self::paths::{numeric_entries, pid_path};
use self::stat_line::{StatFields, parse_cmdline, parse_pid_stat, parse_stat_upto};
use self::status::Status;
use crate::collect::procfs::files::{KeptFiles, open_at, read_at};
/// The system-wide files, where callers have always found them.
pub use crate::collect::procfs::system::{SystemFiles, parse_stat, procs_running, read_system};
use crate::collect::procfs::top_pace::{Pace, TopCost};
use crate::collect::sched::dirty::{Dirty, DirtyTids};
use crate::model::sample::{ProcScan, TaskScan, TopScan};

/// How to pace a scan to top's (see top_pace.rs): set by the collector before each scan.
#[derive(Debug, Clone)]
pub struct PaceSetup {
    pub ncpus: u32,
    /// Runnable threads per CPU last interval, which top would have waited behind.
    pub others_per_cpu: f64,
    /// The longest the pacing may make one scan last.
    pub cap: std::time::Duration,
    /// Processes whose threads churned last interval (eBPF): only their threads are read
    /// at top's pace. None (no eBPF): every multi-threaded process.
    pub churning: Option<foldhash::HashSet<u32>>,
}

#[derive(Default)]
pub struct ProcScanner {
    /// cmdline by (pid, starttime), read once per process lifetime.
    cmdlines: HashMap<(u32, u64), Arc<str>>,
    /// When set, only these processes are scanned (ttop -p).
    pub only_pids: Option<Vec<u32>>,
    /// Reused every tick: file contents, directory entries, ids found.
    buf: Vec<u8>,
    dents: Vec<u8>,
    pids: Vec<u32>,
    tids: Vec<u32>,
    /// The stat files of processes and threads, kept open between ticks.
    stats: KeptFiles,
    /// Each process as the last scan read it, threads included, by pid: what a thread
    /// (or a process's stat line) with no scheduler event since shows again (see
    /// dirty.rs and proc_reuse.rs).
    seen: HashMap<u32, ProcScan>,
    /// Scans so far: a thread's file is read at least every REFRESH_TICKS scans.
    ticks: u64,
    /// `Dirty::births` when /proc was last listed (None: list it).
    listed_births: Option<u64>,
    /// This scan reads every thread and lists every directory (`Dirty::read_all`).
    read_all: bool,
    /// Read every listed thread, past one that vanished (not top's rule: for tests of
    /// other parts of the scan, in a process whose other threads come and go).
    pub keep_past_vanished: bool,
    /// Pace each scan to top's (None: read as fast as ttop can, for tests and benches).
    pub pace: Option<PaceSetup>,
    /// top's costs on this machine, measured at the first paced scan.
    top_cost: Option<TopCost>,
    /// What the last scan missed, as top would have.
    pub top_scan: TopScan,
    cgroup_of: super::cgroup_of::CgroupOf,
    users: self::users::Users,
}

/// A thread with no mark is still read every this many scans, and /proc and task/ listed
/// again. Every change a thread's stat line can show comes with a marking event, and a
/// run of a marking program the kernel skipped makes the next scan read everything
/// (`Dirty::read_all`): this is the net under what neither would catch.
pub const REFRESH_TICKS: u64 = 64;

/// States a thread keeps until an event: asleep (S, D, I) or stopped (T, t). A running
/// thread's times move without any event, so R (and anything else) is always read.
fn settled(state: char) -> bool {
    matches!(state, 'S' | 'D' | 'I' | 'T' | 't')
}

impl ProcScanner {
    pub fn new(only_pids: Option<Vec<u32>>) -> Self {
        Self {
            only_pids,
            ..Self::default()
        }
    }

    /// Scan every process and thread once: /proc opened once, each process directory
    /// once, and its files and threads read relative to it into one reused buffer.
    pub fn scan(&mut self) -> Vec<ProcScan> {
        self.scan_with(None)
    }

    /// `scan`, reading again only the threads `dirty` says may have changed (and any
    /// thread running, new, or not read for REFRESH_TICKS scans); None reads them all.
    /// A process's stat line is reused the same way while none of its threads had an
    /// event; its RSS, which moves without it running (reclaim), is read every scan
    /// (see proc_reuse.rs).
    pub fn scan_with(&mut self, dirty: Option<&Dirty>) -> Vec<ProcScan> {
        self.ticks += 1;
        self.top_scan = TopScan::default();
        let churning = self.pace.as_mut().map(|p| p.churning.take());
        let mut pace = self.pace.as_ref().map(|p| {
            let cost = *self.top_cost.get_or_insert_with(TopCost::calibrate);
            self.top_scan.thread_cost_ns = cost.thread_ns.min(u64::from(u32::MAX)) as u32;
            self.top_scan.others_per_cpu = p.others_per_cpu as f32;
            Pace::new(cost, p.ncpus, p.others_per_cpu, p.cap)
        });
        let mut seen = std::mem::take(&mut self.seen);
        let mut next_seen = HashMap::with_capacity(seen.len());
        let Some(proc_fd) = open_at(libc::AT_FDCWD, c"/proc", libc::O_DIRECTORY) else {
            return Vec::new();
        };
        self.read_all = dirty.is_some_and(|d| d.read_all);
        // No process started since the last listing: the same processes (those that
        // exited fail to read below and leave the list). With 10,000 threads, listing
        // /proc walks all 10,000 pids to find the processes among them.
        let births = dirty.map(|d| d.births);
        let relist = births.is_none()
            || births != self.listed_births
            || self.read_all
            || self.ticks.is_multiple_of(REFRESH_TICKS);
        let mut pids = std::mem::take(&mut self.pids);
        match &self.only_pids {
            Some(only) => {
                pids.clear();
                pids.extend_from_slice(only);
            }
            None if relist => {
                pids.clear();
                numeric_entries(&proc_fd, &mut self.dents, &mut pids);
                self.listed_births = births;
            }
            None => {}
        }
        let mut listed = Vec::with_capacity(pids.len());
        let mut out = Vec::with_capacity(pids.len());
        let mut live = HashMap::with_capacity(pids.len());
        let mut path = [0u8; 48];
        let proc_dir = proc_fd.as_raw_fd();
        // Processes whose stat line was reused: their parent is checked after the loop.
        let mut reused = Vec::new();
        for &pid in &pids {
            // A process can vanish at any point of the scan; whatever failed is skipped.
            // Files are opened by path from /proc ("PID/stat"), not through an opened
            // PID directory: that was one open and close more per process, per tick.
            let prev = seen.remove(&pid);
            if let Some(p) = pace.as_mut() {
                p.process();
            }
            // Taken once per process and scan: a thread of it was born or exited.
            let tgid_marked = dirty.is_none_or(|d| d.tgids.take(pid));
            let same = prev
                .as_ref()
                .filter(|o| !tgid_marked && self.stat_unchanged(o, dirty));
            let (st, status) = match same {
                Some(o) => {
                    let Some(rss) = self.read_rss(proc_dir, pid) else {
                        continue;
                    };
                    listed.push(pid);
                    reused.push(out.len());
                    let status = o.uid.zip(o.ctx_voluntary.zip(o.ctx_involuntary)).map(
                        |(uid, (voluntary, involuntary))| Status {
                            uid,
                            voluntary,
                            involuntary,
                        },
                    );
                    (StatFields::again(o, rss), status)
                }
                None => {
                    if !self.stats.read(
                        (pid, 0),
                        proc_dir,
                        pid_path(&mut path, pid, None, b"stat"),
                        &mut self.buf,
                    ) {
                        continue;
                    }
                    listed.push(pid);
                    let Some(mut st) = parse_pid_stat(&self.buf) else {
                        continue;
                    };
                    // The RSS always from statm: exact where stat's is approximate
                    // (6.x), and the same source whether the line is reused or not.
                    match self.read_rss(proc_dir, pid) {
                        Some(rss) => st.rss = rss,
                        None => continue,
                    }
                    (st, self.read_status(proc_dir, pid))
                }
            };
            // The same name for the same uid until /etc/passwd changes: shared, not
            // copied per process (reused lines keep theirs).
            let user = match (status, same) {
                (Some(s), Some(o)) if o.uid == Some(s.uid) => o.user.clone(),
                (Some(s), _) => self.users.name(s.uid, self.ticks),
                (None, _) => Arc::default(),
            };
            let key = (st.pid, st.starttime);
            let cmdline = match self.cmdlines.remove(&key) {
                Some(c) => c,
                None if read_at(
                    proc_dir,
                    pid_path(&mut path, pid, None, b"cmdline"),
                    &mut self.buf,
                ) =>
                {
                    parse_cmdline(&self.buf).into()
                }
                None => Arc::default(),
            };
            live.insert(key, cmdline.clone());
            // A single-threaded process's one thread is the process itself: read its
            // task/PID/stat directly instead of listing task/ (three syscalls fewer per
            // process, most processes on most machines). If that fails (the process
            // just exec'd or exited), list task/ as for any other process.
            let old = prev
                .filter(|o| o.starttime == st.starttime)
                .map(|o| o.tasks)
                .unwrap_or_default();
            let tasks = match st.num_threads {
                1 => {
                    if let Some(p) = pace.as_mut() {
                        p.thread();
                    }
                    self.read_task(
                        proc_dir,
                        pid,
                        old.iter().find(|t| t.tid == pid),
                        dirty.map(|d| &d.tids),
                    )
                    .map(|t| vec![t])
                }
                _ => None,
            }
            // A failed read_task (the process exec'd or died meanwhile) has taken the
            // thread's mark: list it with no earlier reading to fall back on.
            .unwrap_or_else(|| {
                // Threads came or went here (every multi-threaded process, without
                // eBPF's marks): read them when top would.
                let churns = match &churning {
                    Some(Some(set)) => set.contains(&pid),
                    _ => tgid_marked,
                };
                if churns && let Some(p) = pace.as_mut() {
                    p.catch_up();
                }
                let old: &[TaskScan] = if st.num_threads == 1 { &[] } else { &old };
                self.scan_tasks(
                    proc_dir,
                    pid,
                    st.num_threads,
                    old,
                    dirty,
                    tgid_marked,
                    pace.as_mut().map(|p| (p, churns)),
                )
            });
            let p = ProcScan {
                pid: st.pid,
                ppid: st.ppid,
                comm: st.comm,
                cmdline,
                state: st.state,
                num_threads: st.num_threads,
                utime: st.utime,
                stime: st.stime,
                rss_pages: st.rss,
                starttime: st.starttime,
                tasks,
                cgroup: (self.cgroup_of).read(proc_dir, pid_path(&mut path, pid, None, b"cgroup")),
                priority: i32::try_from(st.priority).ok(),
                nice: i32::try_from(st.nice).ok(),
                majflt: Some(st.majflt),
                uid: status.map(|s| s.uid),
                user,
                ctx_voluntary: status.map(|s| s.voluntary),
                ctx_involuntary: status.map(|s| s.involuntary),
            };
            if dirty.is_some() {
                next_seen.insert(pid, p.clone());
            }
            out.push(p);
        }
        self.reparented(proc_dir, &mut out, &reused, &listed, &mut next_seen);
        if let Some(p) = pace {
            self.top_scan.scan_ns = p.elapsed_ns();
            self.top_scan.paced_ns = p.slept_ns;
            self.top_scan.top_ns = p.top_ns();
            self.top_scan.capped = p.capped;
        }
        // -p lists its processes again each tick: keep that list whole.
        self.pids = match self.only_pids {
            Some(_) => pids,
            None => listed,
        };
        self.seen = next_seen;
        self.stats.end_tick();
        // Only processes still alive keep their cached cmdline.
        self.cmdlines = live;
        out
    }

    /// The last scan's reading of a thread, if it still holds: no event marked it since,
    /// it was asleep or stopped, and its periodic re-read is not due.
    fn unchanged(
        &self,
        tid: u32,
        old: Option<&TaskScan>,
        dirty: Option<&DirtyTids>,
    ) -> Option<TaskScan> {
        let dirty = dirty?;
        // Take the mark first, whatever is decided: an event from now on marks it again.
        let marked = dirty.take(tid);
        let old = old?;
        (!marked && !self.read_all && !self.due(tid) && settled(old.state)).then(|| old.clone())
    }

    /// Whether this scan re-reads `id` (a thread, or a process's listing) with no mark:
    /// every REFRESH_TICKS scans, spread over the ids.
    fn due(&self, id: u32) -> bool {
        (u64::from(id) + self.ticks).is_multiple_of(REFRESH_TICKS)
    }

    /// The one thread of a single-threaded process: /proc/PID/task/PID/stat.
    fn read_task(
        &mut self,
        proc_dir: RawFd,
        pid: u32,
        old: Option<&TaskScan>,
        dirty: Option<&DirtyTids>,
    ) -> Option<TaskScan> {
        if let Some(t) = self.unchanged(pid, old, dirty) {
            return Some(t);
        }
        let mut path = [0u8; 48];
        if !self.stats.read(
            (pid, pid),
            proc_dir,
            pid_path(&mut path, pid, Some(pid), b"stat"),
            &mut self.buf,
        ) {
            return None;
        }
        let ts = parse_stat_upto(&self.buf, 12)?;
        (ts.pid == pid).then_some(TaskScan {
            tid: ts.pid,
            comm: ts.comm,
            state: ts.state,
            utime: ts.utime,
            stime: ts.stime,
        })
    }

    /// Every thread of one process: task/TID/stat, read relative to the task directory,
    /// in listing order and at top's pace. As top does (procps `readeither`), the first
    /// listed thread that is gone when its turn comes ends the process's list: the
    /// threads after it are read only to count what top did not show (`top_scan`).
    /// `num_threads` is what /proc/PID/stat just said: a last listing of another length
    /// is not reused. `tgid_marked`: threads of this process were born or exited.
    /// `pace`: top's clock, and whether to keep to it here (the process churns).
    #[allow(clippy::too_many_arguments)]
    fn scan_tasks(
        &mut self,
        proc_dir: RawFd,
        pid: u32,
        num_threads: u32,
        old: &[TaskScan],
        dirty: Option<&Dirty>,
        tgid_marked: bool,
        mut pace: Option<(&mut Pace, bool)>,
    ) -> Vec<TaskScan> {
        let mut path = [0u8; 48];
        // No thread born or exited since the last listing: the same threads, without
        // listing task/ (with 10,000 threads that listing was a fifth of ttop's CPU).
        let reuse = !tgid_marked
            && !old.is_empty()
            && old.len() == num_threads as usize
            && !self.read_all
            && !self.due(pid);
        let task_dir = match reuse {
            true => None,
            false => match open_at(
                proc_dir,
                pid_path(&mut path, pid, None, b"task"),
                libc::O_DIRECTORY,
            ) {
                Some(d) => Some(d),
                None => return Vec::new(),
            },
        };
        let mut tids = std::mem::take(&mut self.tids);
        tids.clear();
        match &task_dir {
            Some(d) => numeric_entries(d, &mut self.dents, &mut tids),
            None => tids.extend(old.iter().map(|t| t.tid)),
        }
        let mut tasks = Vec::with_capacity(tids.len());
        // Past the first listed thread that vanished: what top never read.
        let mut cut = false;
        // The kernel lists a process's threads in the same order from scan to scan
        // (new ones at the end): look each one up from where the last was found.
        let mut at = 0;
        for &tid in &tids {
            let prev = match old.get(at) {
                Some(t) if t.tid == tid => Some(t),
                _ => old.iter().position(|t| t.tid == tid).map(|i| {
                    at = i;
                    &old[i]
                }),
            };
            if prev.is_some() {
                at += 1;
            }
            if !cut && let Some((p, churns)) = pace.as_mut() {
                p.thread();
                if *churns {
                    p.catch_up();
                }
            }
            let t = match self.unchanged(tid, prev, dirty.map(|d| &d.tids)) {
                Some(t) => Some(t),
                None => self.read_listed(proc_dir, task_dir.as_ref(), pid, tid),
            };
            match (t, cut) {
                (Some(t), false) => tasks.push(t),
                (Some(t), true) => {
                    self.top_scan.skipped += 1;
                    self.top_scan.skipped_running += u32::from(t.state == 'R');
                }
                (None, false) => {
                    self.top_scan.vanished += 1;
                    cut = !self.keep_past_vanished;
                }
                (None, true) => {}
            }
        }
        // Threads created after the listing: top never saw them either. Looked for only
        // where threads came and went (every process, without eBPF).
        if tgid_marked && let Some(d) = &task_dir {
            let mut again = Vec::new();
            // SAFETY: rewinding a directory descriptor this function owns.
            unsafe { libc::lseek(d.as_raw_fd(), 0, libc::SEEK_SET) };
            numeric_entries(d, &mut self.dents, &mut again);
            for tid in again {
                if tids.contains(&tid) {
                    continue;
                }
                if let Some(t) = self.read_listed(proc_dir, task_dir.as_ref(), pid, tid) {
                    self.top_scan.unlisted += 1;
                    self.top_scan.unlisted_running += u32::from(t.state == 'R');
                }
            }
        }
        self.tids = tids;
        tasks
    }

    /// One listed thread's stat: "TID/stat" in the listed task/, else
    /// "PID/task/TID/stat" from /proc. None when it is gone.
    fn read_listed(
        &mut self,
        proc_dir: RawFd,
        task_dir: Option<&OwnedFd>,
        pid: u32,
        tid: u32,
    ) -> Option<TaskScan> {
        let mut tid_path = [0u8; 48];
        let (dir, name) = match task_dir {
            Some(d) => (d.as_raw_fd(), pid_path(&mut tid_path, tid, None, b"stat")),
            None => (proc_dir, pid_path(&mut tid_path, pid, Some(tid), b"stat")),
        };
        if !self.stats.read((pid, tid), dir, name, &mut self.buf) {
            return None;
        }
        let ts = parse_stat_upto(&self.buf, 12)?;
        Some(TaskScan {
            tid: ts.pid,
            comm: ts.comm,
            state: ts.state,
            utime: ts.utime,
            stime: ts.stime,
        })
    }
}

#[path = "paths.rs"]
mod paths;
#[path = "reuse.rs"]
mod reuse;
#[path = "stat_line.rs"]
mod stat_line;
#[path = "status.rs"]
mod status;
#[path = "users.rs"]
mod users;

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
