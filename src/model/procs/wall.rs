//! The wall-time split: where a thread's (or a process's threads') time went in an
//! interval, every nanosecond in one place: on a CPU, runnable and waiting for one, or
//! off CPU for the reason its switch-out gave (bpf/sched_off.h): a futex wait, block
//! I/O, a page fault, another uninterruptible wait, or asleep by choice in poll/epoll,
//! a sleep call, a read, or another system call.

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::model::sample::OFF_CAUSES;

/// The split's parts, in order: on CPU, runnable, then the off-CPU causes, the ones a
/// thread did not choose first (futex, kernel lock, mmap_lock, block I/O, page fault,
/// other uninterruptible), then asleep by choice. These are the JSON keys of
/// `procs[].time` and `threads[].time` (seconds).
pub const PARTS: [&str; 2 + OFF_CAUSES] = [
    "on_cpu",
    "runnable",
    "futex",
    "lock",
    "mmap_lock",
    "io",
    "fault",
    "uninterruptible",
    "poll",
    "sleep",
    "read",
    "other",
];

/// What each part means (the view's legend and the JSON reference).
pub const PART_HELP: [&str; 2 + OFF_CAUSES] = [
    "running on a CPU",
    "runnable, waiting for a CPU",
    "asleep in a futex wait (futex, futex_waitv)",
    "blocked on a kernel mutex or rwsem (uninterruptible inside a lock wait, 5.19+)",
    "blocked on its own process's mmap_lock (a page fault or mmap/munmap behind a holder, 5.19+)",
    "blocked on block I/O (uninterruptible, in io_schedule: the task's iowait flag)",
    "blocked in a page fault (uninterruptible outside a system call: a major fault waiting for its page, reclaim)",
    "uninterruptible for another reason (the kernel function it sleeps in is in Blocked now)",
    "asleep in epoll_wait, poll or select",
    "asleep in nanosleep or clock_nanosleep",
    "asleep in read, readv, pread, recvfrom, recvmsg (a pipe, a socket)",
    "asleep in another system call (wait4, accept, pause...), stopped, or a kernel thread's idle wait",
];

/// Where off-CPU cause `c` (bpf/ttop.h's enum ttop_split, the index of `off_ns`) sits
/// in PARTS.
const POS: [usize; OFF_CAUSES] = [2, 5, 6, 7, 8, 9, 10, 11, 3, 4];

/// The part of off-CPU cause `c` (enum ttop_split), "other" for an unknown one.
pub fn part_of_cause(c: u32) -> &'static str {
    POS.get(c as usize).map_or("other", |&i| PARTS[i])
}

/// The kernel-lock parts (lock, mmap_lock): not measured before 5.19 (no
/// lock:contention_begin), when those waits count as uninterruptible or fault.
const LOCK_PARTS: [usize; 2] = [3, 4];

/// Index of the "runnable" part.
pub const RUNNABLE: usize = 1;

/// Seconds per part over one interval; NaN in every part when not measured (no eBPF,
/// or the first interval). Summed over a process's threads for its row, so a part can
/// exceed the interval (thread-seconds).
#[derive(Debug, Clone, Copy)]
pub struct TimeSplit(pub [f32; 2 + OFF_CAUSES]);

/// Equal when every part is the same number, "not measured" (NaN) included.
impl PartialEq for TimeSplit {
    fn eq(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(other.0)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Default for TimeSplit {
    fn default() -> Self {
        TimeSplit([f32::NAN; 2 + OFF_CAUSES])
    }
}

impl TimeSplit {
    pub const NONE: TimeSplit = TimeSplit([f32::NAN; 2 + OFF_CAUSES]);

    pub fn measured(&self) -> bool {
        !self.0[0].is_nan()
    }

    /// The parts' sum, seconds (0 when not measured; a part not measured adds nothing).
    pub fn total(&self) -> f64 {
        if !self.measured() {
            return 0.0;
        }
        self.0
            .iter()
            .filter(|v| !v.is_nan())
            .map(|v| f64::from(*v))
            .sum()
    }

    /// Part `i` in seconds, 0 where not measured.
    pub fn part(&self, i: usize) -> f64 {
        self.0
            .get(i)
            .filter(|v| !v.is_nan())
            .map_or(0.0, |v| f64::from(*v))
    }

    /// The same split with the kernel-lock parts marked not measured (a kernel without
    /// lock:contention_begin, or a recording from before they were).
    pub fn without_locks(mut self) -> TimeSplit {
        for i in LOCK_PARTS {
            self.0[i] = f32::NAN;
        }
        self
    }

    /// The split between two cumulative readings (ns), None when there is no earlier
    /// reading to take it from.
    pub fn between(prev: &Cumulative, cur: &Cumulative, has_prev: bool) -> TimeSplit {
        if !has_prev {
            return TimeSplit::NONE;
        }
        let mut out = [0f32; 2 + OFF_CAUSES];
        // Differences that shrink (an open stretch's extrapolation a little ahead of
        // what the next event recorded) are no time, not a counter reset.
        out[0] = cur.oncpu_ns.saturating_sub(prev.oncpu_ns) as f32 / 1e9;
        // Run-queue wait includes a guessed wait in progress that may be withdrawn at the
        // next reading (SchedCollector::read): a shrink is no wait, not a reset.
        out[RUNNABLE] = cur.runq_wait_ns.saturating_sub(prev.runq_wait_ns) as f32 / 1e9;
        for (i, pos) in POS.iter().enumerate() {
            out[*pos] = cur.off_ns[i].saturating_sub(prev.off_ns[i]) as f32 / 1e9;
        }
        TimeSplit(out)
    }
}

/// One thread's or process's cumulative counters the split is taken from (on-CPU time
/// by the wall clock, switch-in to switch-out).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Cumulative {
    pub oncpu_ns: u64,
    pub runq_wait_ns: u64,
    pub off_ns: [u64; OFF_CAUSES],
}

impl Serialize for TimeSplit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.measured() {
            return s.serialize_none();
        }
        let mut m = s.serialize_map(Some(PARTS.len()))?;
        for (k, v) in PARTS.iter().zip(self.0) {
            // Microsecond resolution: what the eBPF side's clock reads are good for
            // and what f32 holds for an interval of thread-seconds. A part not
            // measured on this kernel is null.
            let v = (!v.is_nan()).then(|| (f64::from(v) * 1e6).round() / 1e6);
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_is_the_difference_of_two_readings_and_null_without_one() {
        let prev = Cumulative {
            oncpu_ns: 1_000_000_000,
            runq_wait_ns: 500,
            off_ns: [10, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        };
        let mut cur = prev;
        cur.oncpu_ns += 250_000_000;
        cur.runq_wait_ns += 50_000_000;
        cur.off_ns[0] += 500_000_000;
        cur.off_ns[6] += 100_000_000;
        cur.off_ns[9] += 100_000_000;
        let t = TimeSplit::between(&prev, &cur, true);
        assert_eq!(t.0[0], 0.25);
        assert_eq!(t.0[RUNNABLE], 0.05);
        assert_eq!(t.0[2], 0.5);
        assert_eq!(t.0[10], 0.1);
        assert_eq!(t.0[4], 0.1);
        assert!((t.total() - 1.0).abs() < 1e-6);
        let j = serde_json::to_value(t).unwrap();
        assert_eq!(j["on_cpu"], 0.25);
        assert_eq!(j["read"], 0.1);
        assert_eq!(j["mmap_lock"], 0.1);
        assert_eq!(j.as_object().unwrap().len(), PARTS.len());
        // Each enum ttop_split cause lands in the part of its name.
        let names = [
            "futex",
            "io",
            "fault",
            "uninterruptible",
            "poll",
            "sleep",
            "read",
            "other",
            "lock",
            "mmap_lock",
        ];
        for (c, n) in names.iter().enumerate() {
            assert_eq!(part_of_cause(c as u32), *n);
        }
        assert_eq!(part_of_cause(99), "other");
        // Before 5.19 the lock parts are not measured: null, and the rest still adds up.
        let old = t.without_locks();
        let j = serde_json::to_value(old).unwrap();
        assert!(j["lock"].is_null() && j["mmap_lock"].is_null(), "{j}");
        assert_eq!(j["read"], 0.1);
        assert!((old.total() - 0.9).abs() < 1e-6);
        // A withdrawn run-queue guess is no wait, not a huge one.
        let mut back = cur;
        back.runq_wait_ns -= 1;
        assert_eq!(TimeSplit::between(&cur, &back, true).0[RUNNABLE], 0.0);
        // No earlier reading: not measured, null in JSON, never zeros.
        let n = TimeSplit::between(&prev, &cur, false);
        assert!(!n.measured());
        assert_eq!(serde_json::to_value(n).unwrap(), serde_json::Value::Null);
    }
}
