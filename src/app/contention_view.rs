//! State of the futex and kernel-lock views: their sort columns, and the sorted rows
//! (shared by the renderers and the tests so both agree on the order).

use std::cmp::Ordering;

use super::keymap::Action;
use super::view::View;
use crate::model::Frame;
use crate::model::contention::frame::{FutexFrame, LockFrame};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexSort {
    Contended,
    Waiters,
    Eagain,
    Wait,
    Max,
    Avg,
    Calls,
    Wakes,
    Pid,
}

impl FutexSort {
    pub const ALL: [FutexSort; 9] = [
        FutexSort::Contended,
        FutexSort::Wait,
        FutexSort::Waiters,
        FutexSort::Max,
        FutexSort::Avg,
        FutexSort::Eagain,
        FutexSort::Calls,
        FutexSort::Wakes,
        FutexSort::Pid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FutexSort::Contended => "CONT/s",
            FutexSort::Waiters => "THR",
            FutexSort::Eagain => "EAGAIN/s",
            FutexSort::Wait => "WAIT/s",
            FutexSort::Max => "MAX",
            FutexSort::Avg => "AVG",
            FutexSort::Calls => "CALLS/s",
            FutexSort::Wakes => "WAKE/s",
            FutexSort::Pid => "PID",
        }
    }

    fn cmp(self, a: &FutexFrame, b: &FutexFrame) -> Ordering {
        let n = |x: f64, y: f64| x.total_cmp(&y);
        match self {
            FutexSort::Contended => a.contended.cmp(&b.contended),
            FutexSort::Waiters => a.waiters.cmp(&b.waiters),
            FutexSort::Eagain => a.eagain.cmp(&b.eagain),
            FutexSort::Wait => n(a.total_wait_ms, b.total_wait_ms),
            FutexSort::Max => n(a.max_wait_us, b.max_wait_us),
            FutexSort::Avg => n(a.avg_wait_us, b.avg_wait_us),
            FutexSort::Calls => a.calls.cmp(&b.calls),
            FutexSort::Wakes => a.wakes.cmp(&b.wakes),
            // PID ascends by default: reversed here, undone by the descending default.
            FutexSort::Pid => b.pid.cmp(&a.pid),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockSort {
    Wait,
    Contended,
    Max,
    Avg,
    Type,
}

impl LockSort {
    pub const ALL: [LockSort; 5] = [
        LockSort::Wait,
        LockSort::Contended,
        LockSort::Max,
        LockSort::Avg,
        LockSort::Type,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LockSort::Wait => "WAIT/s",
            LockSort::Contended => "CONT/s",
            LockSort::Max => "MAX",
            LockSort::Avg => "AVG",
            LockSort::Type => "TYPE",
        }
    }

    fn cmp(self, a: &LockFrame, b: &LockFrame) -> Ordering {
        let n = |x: f64, y: f64| x.total_cmp(&y);
        match self {
            LockSort::Wait => n(a.total_wait_ms, b.total_wait_ms),
            LockSort::Contended => a.contended.cmp(&b.contended),
            LockSort::Max => n(a.max_wait_us, b.max_wait_us),
            LockSort::Avg => n(a.avg_wait_us, b.avg_wait_us),
            LockSort::Type => b.kind.cmp(&a.kind),
        }
    }
}

pub(crate) fn next<T: Copy + PartialEq>(all: &[T], cur: T) -> T {
    let i = all.iter().position(|s| *s == cur).unwrap_or(0);
    all[(i + 1) % all.len()]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentionView {
    pub futex_sort: FutexSort,
    pub futex_reverse: bool,
    pub lock_sort: LockSort,
    pub lock_reverse: bool,
}

impl Default for ContentionView {
    fn default() -> Self {
        Self {
            futex_sort: FutexSort::Contended,
            futex_reverse: false,
            lock_sort: LockSort::Wait,
            lock_reverse: false,
        }
    }
}

impl ContentionView {
    /// The sort keys mean these views' columns while they are on screen. True when the
    /// action was used here.
    pub fn handle(&mut self, view: View, a: Action) -> bool {
        match (view, a) {
            (View::Futexes, Action::SortNext) => {
                self.futex_sort = next(&FutexSort::ALL, self.futex_sort)
            }
            (View::Futexes, Action::SortReverse) => self.futex_reverse = !self.futex_reverse,
            (View::Locks, Action::SortNext) => {
                self.lock_sort = next(&LockSort::ALL, self.lock_sort)
            }
            (View::Locks, Action::SortReverse) => self.lock_reverse = !self.lock_reverse,
            _ => return false,
        }
        true
    }

    /// A click on a futex column's title: sort by it, or reverse the sort it already has.
    pub fn sort_futexes_by(&mut self, k: FutexSort) {
        pick(&mut self.futex_sort, &mut self.futex_reverse, k);
    }

    /// The same for the kernel-lock table.
    pub fn sort_locks_by(&mut self, k: LockSort) {
        pick(&mut self.lock_sort, &mut self.lock_reverse, k);
    }

    /// Futex words in display order (biggest first unless reversed).
    pub fn futexes<'a>(&self, f: &'a Frame) -> Vec<&'a FutexFrame> {
        let mut rows: Vec<&FutexFrame> = f.contention.futexes.iter().collect();
        rows.sort_by(|a, b| {
            let o = self.futex_sort.cmp(b, a).then(a.uaddr.cmp(&b.uaddr));
            if self.futex_reverse { o.reverse() } else { o }
        });
        rows
    }

    /// Kernel locks in display order.
    pub fn locks<'a>(&self, f: &'a Frame) -> Vec<&'a LockFrame> {
        let mut rows: Vec<&LockFrame> = f.contention.locks.iter().collect();
        rows.sort_by(|a, b| {
            let o = self.lock_sort.cmp(b, a).then(a.caller.cmp(&b.caller));
            if self.lock_reverse { o.reverse() } else { o }
        });
        rows
    }
}

/// Sort by `k`, or reverse the sort when it is `k` already.
fn pick<T: PartialEq>(cur: &mut T, rev: &mut bool, k: T) {
    *rev = *cur == k && !*rev;
    *cur = k;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::contention::frame::ContentionFrame;

    fn frame() -> Frame {
        let fx = |pid, uaddr, contended, wait| FutexFrame {
            pid,
            uaddr,
            contended,
            total_wait_ms: wait,
            ..Default::default()
        };
        Frame {
            contention: ContentionFrame {
                futexes: vec![
                    fx(1, 0x10, 5, 9.0),
                    fx(2, 0x20, 50, 1.0),
                    fx(3, 0x30, 7, 3.0),
                ],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn sort_keys_cycle_and_reverse_in_the_futex_view_only() {
        let f = frame();
        let mut v = ContentionView::default();
        let pids = |v: &ContentionView| v.futexes(&f).iter().map(|r| r.pid).collect::<Vec<_>>();
        assert_eq!(pids(&v), [2, 3, 1]);
        assert!(v.handle(View::Futexes, Action::SortNext));
        assert_eq!(v.futex_sort, FutexSort::Wait);
        assert_eq!(pids(&v), [1, 3, 2]);
        assert!(v.handle(View::Futexes, Action::SortReverse));
        assert_eq!(pids(&v), [2, 3, 1]);
        assert!(!v.handle(View::Main, Action::SortNext));
        assert_eq!(v.futex_sort, FutexSort::Wait);
    }
}
