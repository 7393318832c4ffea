//! The pace of procps top's scan, so that ttop's scan reads each thread when top would.
//!
//! top (procps-ng 4.x, `readeither()` in library/readproc.c) lists /proc, then for each
//! process opens `task/`, reads the leader's `stat` and `statm`, and then, for each
//! thread in listing order, `stat()`s `task/TID` and reads its `stat` and `statm`
//! (seven system calls a thread, paths walked from `/proc` each time). The program it
//! looks at keeps running meanwhile: a thread listed early may be gone when its turn
//! comes, and one created after the listing is never seen. Both grow with the time
//! top takes, and top at nice 0 on a saturated machine takes long: after its first
//! scheduler slice it waits for a CPU behind every other runnable thread.
//!
//! ttop's own reads are several times cheaper (one pread on a kept descriptor, none at
//! all for a thread the kernel says has not changed), so unpaced it sees almost no
//! thread vanish and shows a truer count than top (seed 000's experiment: ~120 running
//! where top showed 9-39). To show top's view, the scan waits (sleeping, no CPU) until
//! the moment top would have reached each thread:
//!
//! * top's CPU cost per thread and per process is measured once, on this machine, by
//!   doing top's own system calls on ttop's own thread ([`Pace::calibrate`]);
//! * top runs that CPU time at full speed for its first slice (it wakes from a sleep
//!   with no lag owed) and after that at its fair share of one CPU, 1 / (1 + the other
//!   runnable threads per CPU) — the run-queue length ttop measured last interval.
//!
//! Only processes whose threads came or went since the last scan are read at top's
//! pace (the scan sleeps to keep it before their threads); elsewhere threads cannot
//! vanish or appear, and reading them a few ms early reads the same threads.
//!
//! The pacing is capped ([`Pace::new`]'s `cap`) so that a scan never holds the
//! collector for more than part of the interval; `Pace::capped` says when it was.

use std::time::{Duration, Instant};

/// The kernel's default base slice before it is scaled by the CPU count
/// (`sysctl_sched_base_slice`, 0.75 ms since 6.6; `sched_min_granularity_ns` before).
const BASE_SLICE_NS: u64 = 750_000;
/// The scan sleeps only when it is at least this far ahead of top (a sleep and its
/// wake-up cost a few µs of CPU; this keeps them to a few hundred per second of pace).
const GRANULE_NS: u64 = 250_000;

/// top's time per thread over the cost of its system calls measured here on one warm
/// thread. On the 2-vCPU VM, an idle `top -H -b` spent 44 µs a thread a frame over
/// 2,100 threads against 22 µs calibrated (its parsing of each line, colder dentries
/// across many threads); the same system calls over 2,000 distinct threads took 26-36.
const TOP_OVER_SYSCALLS: f64 = 2.0;

/// top's measured cost on this machine, in CPU ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopCost {
    /// One thread: stat("task/TID"), open/read/close "stat" and "statm".
    pub thread_ns: u64,
    /// One process: open/getdents/close "task/", then its leader as a thread.
    pub proc_ns: u64,
}

/// The slice a nice-0 task runs before it is preempted on a busy CPU: the base slice
/// scaled as the kernel scales it, by 1 + log2(CPUs), CPUs counted up to 8.
pub fn slice_ns(ncpus: u32) -> u64 {
    let n = ncpus.clamp(1, 8);
    BASE_SLICE_NS * u64::from(1 + n.ilog2())
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec passed.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// open, read, close: what top does with every file it reads.
fn read_path(path: &std::ffi::CStr, buf: &mut [u8]) {
    // SAFETY: a NUL-terminated path; the descriptor is closed right after the read.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
        }
    }
}

impl TopCost {
    /// Measure top's per-thread and per-process system calls on this machine, on the
    /// calling thread's own /proc entries (so the files exist and are small, as a real
    /// thread's are). The cheapest of a few rounds (the cost without interference),
    /// times top's overhead over its system calls ([`TOP_OVER_SYSCALLS`]).
    pub fn calibrate() -> TopCost {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        let pid = std::process::id();
        let cstr = |s: String| std::ffi::CString::new(s).expect("no NUL in a /proc path");
        let dir = cstr(format!("/proc/{pid}/task/{tid}"));
        let stat = cstr(format!("/proc/{pid}/task/{tid}/stat"));
        let statm = cstr(format!("/proc/{pid}/task/{tid}/statm"));
        let task = cstr(format!("/proc/{pid}/task"));
        let mut buf = [0u8; 1024];
        let mut dents = [0u8; 4096];
        let thread = |buf: &mut [u8]| {
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: a NUL-terminated path and a stat buffer of the right type.
            unsafe { libc::stat(dir.as_ptr(), &mut st) };
            read_path(&stat, buf);
            read_path(&statm, buf);
        };
        let (mut best_thread, mut best_proc) = (u64::MAX, u64::MAX);
        for _ in 0..5 {
            const N: u64 = 8;
            let t0 = thread_cpu_ns();
            for _ in 0..N {
                thread(&mut buf);
            }
            let t1 = thread_cpu_ns();
            for _ in 0..N {
                // SAFETY: the directory descriptor is used for one getdents and closed.
                unsafe {
                    let fd = libc::open(
                        task.as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    );
                    if fd >= 0 {
                        libc::syscall(libc::SYS_getdents64, fd, dents.as_mut_ptr(), dents.len());
                        libc::close(fd);
                    }
                }
                thread(&mut buf);
            }
            let t2 = thread_cpu_ns();
            best_thread = best_thread.min((t1 - t0) / N);
            best_proc = best_proc.min((t2 - t1) / N);
        }
        TopCost {
            thread_ns: (best_thread as f64 * TOP_OVER_SYSCALLS) as u64 + 1,
            proc_ns: (best_proc as f64 * TOP_OVER_SYSCALLS) as u64 + 1,
        }
    }
}

/// One scan's clock: where top would be, in CPU time and in wall time.
#[derive(Debug)]
pub struct Pace {
    cost: TopCost,
    slice_ns: u64,
    /// 1 + runnable threads per CPU other than top: how much longer than its CPU time
    /// top's wall time grows once its first slice is used.
    stretch: f64,
    /// The longest the pacing may make a scan last.
    cap_ns: u64,
    start: Instant,
    /// top's CPU time so far.
    cpu_ns: u64,
    /// Time spent asleep to keep to top's pace.
    pub slept_ns: u64,
    /// The cap was reached: later threads were read as fast as ttop reads.
    pub capped: bool,
}

impl Pace {
    /// A scan starting now, by a top that costs `cost`, on a machine where
    /// `others_per_cpu` threads were runnable per CPU besides it.
    pub fn new(cost: TopCost, ncpus: u32, others_per_cpu: f64, cap: Duration) -> Pace {
        Pace {
            cost,
            slice_ns: slice_ns(ncpus),
            stretch: 1.0 + others_per_cpu.max(0.0),
            cap_ns: cap.as_nanos() as u64,
            start: Instant::now(),
            cpu_ns: 0,
            slept_ns: 0,
            capped: false,
        }
    }

    /// Wall time top would have taken to use `cpu_ns` of CPU since its scan began.
    pub fn wall_for(&self, cpu_ns: u64) -> u64 {
        if cpu_ns <= self.slice_ns {
            return cpu_ns;
        }
        self.slice_ns + ((cpu_ns - self.slice_ns) as f64 * self.stretch) as u64
    }

    /// top reaches the next process (it lists its threads now).
    pub fn process(&mut self) {
        self.cpu_ns += self.cost.proc_ns;
    }

    /// top reaches the next thread (it reads it now).
    pub fn thread(&mut self) {
        self.cpu_ns += self.cost.thread_ns;
    }

    /// Wall time since the scan began.
    pub fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Wall time top's scan would have taken so far.
    pub fn top_ns(&self) -> u64 {
        self.wall_for(self.cpu_ns)
    }

    /// Wait until top would be where the scan is. Only worth it where threads come and
    /// go (elsewhere a few ms earlier or later reads the same threads): the scanner
    /// calls it there, so an idle machine's scan does not wake up to keep a pace.
    pub fn catch_up(&mut self) {
        if self.capped {
            return;
        }
        let due = self.top_ns();
        if due > self.cap_ns {
            self.capped = true;
            return;
        }
        let now = self.elapsed_ns();
        if due >= now + GRANULE_NS {
            std::thread::sleep(Duration::from_nanos(due - now));
            self.slept_ns += due - now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_scales_with_log_cpus_up_to_eight() {
        assert_eq!(slice_ns(1), 750_000);
        assert_eq!(slice_ns(2), 1_500_000);
        assert_eq!(slice_ns(4), 2_250_000);
        assert_eq!(slice_ns(8), 3_000_000);
        assert_eq!(slice_ns(64), 3_000_000);
    }

    #[test]
    fn top_runs_its_first_slice_then_its_share() {
        let cost = TopCost {
            thread_ns: 10_000,
            proc_ns: 20_000,
        };
        let p = Pace::new(cost, 2, 59.0, Duration::from_secs(1));
        assert_eq!(p.wall_for(1_000_000), 1_000_000, "within the first slice");
        // 1.5 ms slice, then 0.5 ms more at 1/60 of a CPU: 30 ms.
        assert_eq!(p.wall_for(2_000_000), 1_500_000 + 30_000_000);
        let idle = Pace::new(cost, 2, 0.0, Duration::from_secs(1));
        assert_eq!(
            idle.wall_for(5_000_000),
            5_000_000,
            "an idle machine: CPU time"
        );
    }

    #[test]
    fn pacing_sleeps_to_top_and_stops_at_the_cap() {
        let cost = TopCost {
            thread_ns: 1_000_000,
            proc_ns: 1_000_000,
        };
        let mut p = Pace::new(cost, 2, 0.0, Duration::from_millis(20));
        for _ in 0..10 {
            p.thread();
            p.catch_up();
        }
        assert!(p.elapsed_ns() >= 9_500_000, "10 ms of top is 10 ms of wall");
        assert!(!p.capped);
        for _ in 0..30 {
            p.thread();
            p.catch_up();
        }
        assert!(p.capped, "40 ms of top is past a 20 ms cap");
        assert!(p.elapsed_ns() < 30_000_000, "no sleeping past the cap");
    }

    #[test]
    fn calibration_measures_something_plausible() {
        let c = TopCost::calibrate();
        // Seven system calls a thread: more than 0.5 µs, less than 5 ms on any machine.
        assert!((500..5_000_000).contains(&c.thread_ns), "{c:?}");
        assert!(c.proc_ns > c.thread_ns / 2, "{c:?}");
    }
}
