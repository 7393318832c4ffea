//! Futex totals kept in user space. The kernel keeps one entry per (thread, futex word),
//! written only by that thread (no atomics, no cache line shared between CPUs); this
//! module adds each entry's growth since the last read into cumulative totals per word,
//! per thread and per process, which are what the Sample carries. Because the totals
//! live here, the collector can delete a kernel entry as soon as it is idle (an exited
//! thread's, say) without the per-word or per-process figures going backwards.

use foldhash::HashMap;

use crate::model::contention::{FutexProcSample, FutexSample, FutexThreadSample};

/// The counters of one kernel entry, or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub calls: u64,
    pub waits: u64,
    pub contended: u64,
    pub eagain: u64,
    pub wait_ns: u64,
    pub wakes: u64,
    pub woken: u64,
    /// Of `woken`, the waits a thread of another process woke.
    pub woken_other: u64,
}

impl Counts {
    fn minus(self, o: Counts) -> Counts {
        Counts {
            calls: self.calls.wrapping_sub(o.calls),
            waits: self.waits.wrapping_sub(o.waits),
            contended: self.contended.wrapping_sub(o.contended),
            eagain: self.eagain.wrapping_sub(o.eagain),
            wait_ns: self.wait_ns.wrapping_sub(o.wait_ns),
            wakes: self.wakes.wrapping_sub(o.wakes),
            woken: self.woken.wrapping_sub(o.woken),
            woken_other: self.woken_other.wrapping_sub(o.woken_other),
        }
    }

    fn add(&mut self, d: Counts) {
        self.calls = self.calls.wrapping_add(d.calls);
        self.waits = self.waits.wrapping_add(d.waits);
        self.contended = self.contended.wrapping_add(d.contended);
        self.eagain = self.eagain.wrapping_add(d.eagain);
        self.wait_ns = self.wait_ns.wrapping_add(d.wait_ns);
        self.wakes = self.wakes.wrapping_add(d.wakes);
        self.woken = self.woken.wrapping_add(d.woken);
        self.woken_other = self.woken_other.wrapping_add(d.woken_other);
    }
}

/// One kernel (thread, word) entry as read this tick.
#[derive(Debug, Clone, Copy, Default)]
pub struct Entry {
    pub tid: u32,
    pub tgid: u32,
    pub uaddr: u64,
    pub counts: Counts,
    /// Largest contended wait during this interval (0 if none).
    pub max_wait_ns: u64,
    pub last_ns: u64,
    /// User stack id of a recent contended wait (-1: none).
    pub ustack: i32,
    pub flags: u32,
    /// The process of the latest waker from another process (0: none yet).
    pub waker_tgid: u32,
}

#[derive(Default)]
struct Seen {
    counts: Counts,
    tick: u64,
}

#[derive(Default)]
struct Word {
    counts: Counts,
    flags: u32,
    last_ns: u64,
    max_ns: u64,
    max_tick: u64,
    /// The latest process other than its own to wake a wait on it (0: none yet).
    waker_tgid: u32,
    /// Threads whose contended waits grew during tick `waiters_tick`.
    waiters: u32,
    waiters_tick: u64,
    /// The word's user stacks: its waiters' kept stacks, each weighted by the contended
    /// waits of the (thread, word) entries that had it when fed. The most frequent is
    /// the word's stack (not the first, nor the last).
    stacks: Vec<StackWeight>,
}

/// One user stack of a futex word and how many contended waits it stands for.
#[derive(Clone, Copy, Debug, Default)]
struct StackWeight {
    id: i32,
    waits: u64,
    /// The last waiter seen with it.
    tid: u32,
}

/// Distinct stacks remembered per word; a new one replaces the lightest.
const STACKS_PER_WORD: usize = 8;

impl Word {
    fn weigh_stack(&mut self, id: i32, waits: u64, tid: u32) {
        if let Some(s) = self.stacks.iter_mut().find(|s| s.id == id) {
            s.waits += waits;
            s.tid = tid;
        } else if self.stacks.len() < STACKS_PER_WORD {
            self.stacks.push(StackWeight { id, waits, tid });
        } else if let Some(s) = self.stacks.iter_mut().min_by_key(|s| s.waits)
            && s.waits <= waits
        {
            *s = StackWeight { id, waits, tid };
        }
    }

    /// The most frequent stack (ties: the one seen first).
    fn top_stack(&self) -> Option<StackWeight> {
        self.stacks
            .iter()
            .copied()
            .reduce(|a, b| if b.waits > a.waits { b } else { a })
    }
}

#[derive(Default)]
struct Thread {
    tgid: u32,
    counts: Counts,
    last_ns: u64,
    max_ns: u64,
    max_tick: u64,
}

#[derive(Default)]
struct Proc {
    counts: Counts,
    last_ns: u64,
}

/// What one tick's totals give the Sample. The futex words have no caller or stack
/// yet; `stacks` names, for the words with one, (index into `futexes`, user stack id).
#[derive(Debug, Default)]
pub struct Tables {
    pub futexes: Vec<FutexSample>,
    pub stacks: Vec<(usize, i32)>,
    pub threads: Vec<FutexThreadSample>,
    pub procs: Vec<FutexProcSample>,
}

/// Cumulative futex totals, fed once per tick with every kernel entry.
#[derive(Default)]
pub struct FutexTotals {
    tick: u64,
    seen: HashMap<(u32, u32, u64), Seen>,
    words: HashMap<(u32, u64), Word>,
    threads: HashMap<u32, Thread>,
    procs: HashMap<u32, Proc>,
}

impl FutexTotals {
    /// Start a tick: entries fed until `end_tick` are this tick's.
    pub fn begin_tick(&mut self) {
        self.tick += 1;
    }

    /// Add one kernel entry's growth since it was last fed.
    pub fn feed(&mut self, e: &Entry) {
        let tick = self.tick;
        let seen = self.seen.entry((e.tid, e.tgid, e.uaddr)).or_default();
        let d = e.counts.minus(seen.counts);
        seen.counts = e.counts;
        seen.tick = tick;
        if d == Counts::default() && e.max_wait_ns == 0 {
            return;
        }
        let w = self.words.entry((e.tgid, e.uaddr)).or_default();
        w.counts.add(d);
        w.flags |= e.flags;
        w.last_ns = w.last_ns.max(e.last_ns);
        if w.max_tick != tick {
            w.max_tick = tick;
            w.max_ns = 0;
        }
        w.max_ns = w.max_ns.max(e.max_wait_ns);
        if d.woken_other > 0 && e.waker_tgid != 0 {
            w.waker_tgid = e.waker_tgid;
        }
        if d.contended > 0 {
            // Each (thread, word) entry is fed once a tick: one more thread blocked here.
            if w.waiters_tick != tick {
                w.waiters_tick = tick;
                w.waiters = 0;
            }
            w.waiters += 1;
        }
        // The entry's stack (its first contended wait's, then one in 64) stands for its
        // contended waits since it was last fed.
        if e.ustack >= 0 && (d.contended > 0 || w.stacks.is_empty()) {
            w.weigh_stack(e.ustack, d.contended, e.tid);
        }

        let t = self.threads.entry(e.tid).or_default();
        if t.tgid != e.tgid {
            // A new thread with a recycled tid.
            *t = Thread {
                tgid: e.tgid,
                ..Default::default()
            };
        }
        t.counts.add(d);
        t.last_ns = t.last_ns.max(e.last_ns);
        if t.max_tick != tick {
            t.max_tick = tick;
            t.max_ns = 0;
        }
        t.max_ns = t.max_ns.max(e.max_wait_ns);

        let p = self.procs.entry(e.tgid).or_default();
        p.counts.add(d);
        p.last_ns = p.last_ns.max(e.last_ns);
    }

    /// The kernel deleted (or will delete) this entry: a new one starts from zero.
    pub fn forget(&mut self, tid: u32, tgid: u32, uaddr: u64) {
        self.seen.remove(&(tid, tgid, uaddr));
    }

    /// Every stack id a word still keeps (any of them may become its top stack and be
    /// named from the stack map): in use until the word goes.
    pub fn stack_ids(&self) -> impl Iterator<Item = i32> + '_ {
        self.words
            .values()
            .flat_map(|w| w.stacks.iter().map(|s| s.id))
    }

    /// End the tick: drop entries not fed (gone from the kernel) and totals idle since
    /// before `since_ns`, and return the rest, sorted by key.
    pub fn end_tick(&mut self, since_ns: u64) -> Tables {
        let tick = self.tick;
        self.seen.retain(|_, s| s.tick == tick);
        self.words.retain(|_, w| w.last_ns >= since_ns);
        self.threads.retain(|_, t| t.last_ns >= since_ns);
        self.procs.retain(|_, p| p.last_ns >= since_ns);

        let mut keys: Vec<(u32, u64)> = self.words.keys().copied().collect();
        keys.sort_unstable();
        let mut futexes = Vec::with_capacity(keys.len());
        let mut stacks = Vec::new();
        for k in keys {
            let w = &self.words[&k];
            let top = w.top_stack();
            if let Some(t) = top {
                stacks.push((futexes.len(), t.id));
            }
            let c = w.counts;
            futexes.push(FutexSample {
                tgid: k.0,
                uaddr: k.1,
                calls: c.calls,
                waits: c.waits,
                contended: c.contended,
                eagain: c.eagain,
                wait_ns: c.wait_ns,
                max_wait_ns: if w.max_tick == tick { w.max_ns } else { 0 },
                waiters: Some(if w.waiters_tick == tick { w.waiters } else { 0 }),
                wakes: c.wakes,
                woken: c.woken,
                woken_other: c.woken_other,
                waker_tgid: w.waker_tgid,
                flags: w.flags,
                last_tid: top.map_or(0, |t| t.tid),
                caller: String::new(),
                stack: Vec::new(),
            });
        }

        let mut threads: Vec<FutexThreadSample> = self
            .threads
            .iter()
            .map(|(&tid, t)| FutexThreadSample {
                tid,
                tgid: t.tgid,
                calls: t.counts.calls,
                contended: t.counts.contended,
                eagain: t.counts.eagain,
                wait_ns: t.counts.wait_ns,
                max_wait_ns: if t.max_tick == tick { t.max_ns } else { 0 },
                wakes: t.counts.wakes,
            })
            .collect();
        threads.sort_unstable_by_key(|t| t.tid);

        let mut procs: Vec<FutexProcSample> = self
            .procs
            .iter()
            .map(|(&tgid, p)| FutexProcSample {
                tgid,
                calls: p.counts.calls,
                waits: p.counts.waits,
                contended: p.counts.contended,
                eagain: p.counts.eagain,
                wait_ns: p.counts.wait_ns,
                wakes: p.counts.wakes,
            })
            .collect();
        procs.sort_unstable_by_key(|p| p.tgid);
        Tables {
            futexes,
            stacks,
            threads,
            procs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tid: u32, tgid: u32, uaddr: u64, calls: u64, contended: u64) -> Entry {
        Entry {
            tid,
            tgid,
            uaddr,
            counts: Counts {
                calls,
                waits: contended,
                contended,
                wait_ns: contended * 1000,
                ..Default::default()
            },
            last_ns: 1_000 + calls,
            ustack: -1,
            ..Default::default()
        }
    }

    /// A word's waker is the other process an entry was woken by when its count of such
    /// wakes grew; an entry whose other-process wakes did not grow leaves it alone.
    #[test]
    fn a_word_keeps_the_latest_other_waker_of_its_entries() {
        let woken = |tid: u32, contended: u64, other: u64, waker: u32| Entry {
            counts: Counts {
                woken: contended,
                woken_other: other,
                ..entry(tid, 10, 0x40, contended, contended).counts
            },
            waker_tgid: waker,
            ..entry(tid, 10, 0x40, contended, contended)
        };
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&woken(11, 4, 4, 77));
        t.feed(&woken(12, 3, 0, 0));
        let w = t.end_tick(0).futexes;
        assert_eq!((w[0].woken, w[0].woken_other, w[0].waker_tgid), (7, 4, 77));
        t.begin_tick();
        t.feed(&woken(11, 6, 4, 77));
        t.feed(&woken(12, 5, 1, 88));
        let w = t.end_tick(0).futexes;
        assert_eq!((w[0].woken, w[0].woken_other, w[0].waker_tgid), (11, 5, 88));
        // Thread 11 woken by its own process again: 88 stays the latest other waker.
        t.begin_tick();
        t.feed(&woken(11, 9, 4, 77));
        t.feed(&woken(12, 5, 1, 88));
        let w = t.end_tick(0).futexes;
        assert_eq!((w[0].woken, w[0].woken_other, w[0].waker_tgid), (14, 5, 88));
    }

    #[test]
    fn sums_threads_per_word_thread_and_process() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 2));
        t.feed(&entry(12, 10, 0x40, 7, 3));
        t.feed(&entry(12, 10, 0x80, 1, 0));
        let Tables {
            futexes: w,
            threads: th,
            procs: p,
            ..
        } = t.end_tick(0);
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].uaddr, w[0].calls, w[0].contended), (0x40, 12, 5));
        assert_eq!((w[1].uaddr, w[1].calls), (0x80, 1));
        assert_eq!(th.len(), 2);
        assert_eq!((th[0].tid, th[0].calls), (11, 5));
        assert_eq!((th[1].tid, th[1].calls, th[1].contended), (12, 8, 3));
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].tgid, p[0].calls, p[0].wait_ns), (10, 13, 5000));
    }

    #[test]
    fn waiters_are_the_threads_that_slept_this_tick() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 2));
        t.feed(&entry(12, 10, 0x40, 7, 3));
        t.feed(&entry(13, 10, 0x40, 4, 0)); // called, never slept
        t.feed(&entry(14, 10, 0x80, 9, 9));
        let w = t.end_tick(0).futexes;
        assert_eq!((w[0].uaddr, w[0].waiters), (0x40, Some(2)));
        assert_eq!((w[1].uaddr, w[1].waiters), (0x80, Some(1)));
        // Next tick only thread 12 sleeps on 0x40 again; 0x80 is quiet.
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 2));
        t.feed(&entry(12, 10, 0x40, 9, 4));
        t.feed(&entry(14, 10, 0x80, 9, 9));
        let w = t.end_tick(0).futexes;
        assert_eq!((w[0].contended, w[0].waiters), (6, Some(1)));
        assert_eq!((w[1].contended, w[1].waiters), (9, Some(0)));
    }

    #[test]
    fn totals_survive_deleted_kernel_entries() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 2));
        t.feed(&entry(12, 10, 0x40, 7, 3));
        t.end_tick(0);
        // Thread 11 exited; the collector deleted its entry.
        t.forget(11, 10, 0x40);
        t.begin_tick();
        t.feed(&entry(12, 10, 0x40, 9, 3));
        let Tables {
            futexes: w,
            threads: th,
            procs: p,
            ..
        } = t.end_tick(0);
        assert_eq!(w[0].calls, 14, "5 + 9: thread 11's calls stay counted");
        assert_eq!(p[0].calls, 14);
        assert_eq!(th.iter().map(|x| x.calls).sum::<u64>(), 14);
        // An entry recreated at zero adds from zero.
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 1, 0));
        t.feed(&entry(12, 10, 0x40, 9, 3));
        let w = t.end_tick(0).futexes;
        assert_eq!(w[0].calls, 15);
    }

    #[test]
    fn idle_totals_expire_and_restart_at_zero() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 0));
        t.end_tick(0);
        t.forget(11, 10, 0x40);
        t.begin_tick();
        let Tables {
            futexes: w,
            threads: th,
            procs: p,
            ..
        } = t.end_tick(10_000);
        assert!(w.is_empty() && th.is_empty() && p.is_empty());
    }

    #[test]
    fn max_is_per_tick_and_stack_is_the_heavier_waiters() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        let mut a = entry(11, 10, 0x40, 5, 2);
        a.max_wait_ns = 900;
        a.ustack = 3;
        let mut b = entry(12, 10, 0x40, 9, 6);
        b.max_wait_ns = 400;
        b.ustack = 4;
        t.feed(&a);
        t.feed(&b);
        let Tables {
            futexes: w,
            stacks,
            threads: th,
            ..
        } = t.end_tick(0);
        assert_eq!(w[0].max_wait_ns, 900);
        assert_eq!(w[0].last_tid, 12);
        assert_eq!(stacks, vec![(0, 4)]);
        assert_eq!(th[0].max_wait_ns, 900);
        // Next tick, no new waits: no max.
        t.begin_tick();
        a.max_wait_ns = 0;
        b.max_wait_ns = 0;
        t.feed(&a);
        t.feed(&b);
        let Tables {
            futexes: w,
            threads: th,
            ..
        } = t.end_tick(0);
        assert_eq!(w[0].max_wait_ns, 0);
        assert_eq!(th[1].max_wait_ns, 0);
    }

    /// The word's stack is the one most of its contended waits had over its life: not
    /// the first kept, nor the one of the last tick's biggest waiter.
    #[test]
    fn stack_is_the_most_frequent_not_the_first_or_last() {
        let mut t = FutexTotals::default();
        // Tick 1: a rare call site (stack 7) is the first seen.
        t.begin_tick();
        let mut rare = entry(21, 20, 0x80, 3, 3);
        rare.ustack = 7;
        t.feed(&rare);
        assert_eq!(t.end_tick(0).stacks, vec![(0, 7)]);
        // Ticks 2-5: the hot site (stack 8) has 20 contended waits a tick.
        let mut hot = entry(22, 20, 0x80, 0, 0);
        hot.ustack = 8;
        for _ in 0..4 {
            hot.counts.calls += 20;
            hot.counts.contended += 20;
            t.begin_tick();
            t.feed(&rare);
            t.feed(&hot);
            assert_eq!(t.end_tick(0).stacks, vec![(0, 8)]);
        }
        // Tick 6: the rare site waits more than the hot one this tick, not overall.
        rare.counts.calls += 30;
        rare.counts.contended += 30;
        hot.counts.calls += 5;
        hot.counts.contended += 5;
        t.begin_tick();
        t.feed(&rare);
        t.feed(&hot);
        let tables = t.end_tick(0);
        assert_eq!(tables.stacks, vec![(0, 8)]);
        assert_eq!(tables.futexes[0].last_tid, 22, "a waiter with that stack");
    }

    /// Past STACKS_PER_WORD distinct stacks, a new one replaces the lightest only when it
    /// weighs as much; the heaviest is never lost.
    #[test]
    fn stacks_per_word_are_bounded() {
        let mut w = Word::default();
        w.weigh_stack(1, 100, 1);
        for id in 2..=20 {
            w.weigh_stack(id, id as u64, id as u32);
        }
        assert_eq!(w.stacks.len(), STACKS_PER_WORD);
        assert_eq!(w.top_stack().unwrap().id, 1);
        assert!(w.stacks.iter().any(|s| s.id == 20));
        w.weigh_stack(1, 0, 9);
        assert_eq!(w.top_stack().unwrap().tid, 9);
    }

    #[test]
    fn recycled_tid_starts_a_new_thread() {
        let mut t = FutexTotals::default();
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 0));
        t.end_tick(0);
        t.begin_tick();
        t.feed(&entry(11, 10, 0x40, 5, 0));
        t.feed(&entry(11, 20, 0x40, 2, 0));
        let Tables {
            threads: th,
            procs: p,
            ..
        } = t.end_tick(0);
        assert_eq!(th.len(), 1);
        assert_eq!((th[0].tgid, th[0].calls), (20, 2));
        assert_eq!(p.len(), 2);
    }
}
