//! Which futex programs of the contention object run, and switching between them while
//! ttop runs: by default the scheduler programs count the waits that slept
//! (bpf/futex_sleep.h: the scheduler object's switch program where it shares the maps,
//! futex_share.rs, else this object's own, and this object's wake-up program); the dashboard's futex view, while it is open, has every
//! futex call hooked (bpf/contention_futex.h) so that its call, EAGAIN and wake columns
//! are measured; --futex-calls, -p and --comm hook every call from the start.

use libbpf_rs::{Link, TracepointCategory};

use super::skel::{ContentionSkel, OpenContentionSkel};
use crate::collect::bpf::common::explain;

/// How futex waits are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexHooks {
    /// Not at all (--no-futex).
    Off,
    /// Waits that slept, from the scheduler's switch and wake-up (bpf/contention_sleep.h):
    /// no syscall is hooked, so calls that do not sleep cost nothing and are not counted.
    Sleeps,
    /// Every futex call, from the futex syscalls' hooks (bpf/contention_futex.h): calls,
    /// EAGAINs and wake calls too, at a cost per call (--futex-calls, -p, --comm).
    Calls,
}

/// The futex programs' links, what they measure, and what switching needs.
pub struct FutexLinks {
    /// What is attached now (Off: nothing, or the attach failed).
    pub mode: FutexHooks,
    /// The per-call programs were loaded beside the scheduler ones, so the futex view
    /// can switch to them (the dashboard).
    on_demand: bool,
    /// The futex syscalls with tracepoints, or why raw_syscalls must do.
    tps: Result<Vec<&'static str>, String>,
    links: Vec<Link>,
    /// Reads since the programs of `mode` were attached: after a switch, the first one's
    /// interval was partly measured by the others.
    calls_reads: u32,
    /// The scheduler object's switch program counts the waits that slept (one program
    /// per context switch, futex_share.rs): this object's own switch program is not
    /// attached, only its wake-up one.
    switch_in_sched: bool,
}

impl FutexLinks {
    /// Choose which futex programs `open` loads for `mode` (with `on_demand`, the
    /// per-call ones too when the scheduler ones run). `tps` is `futex_tracepoints()`'s
    /// answer, asked only when per-call programs may be loaded.
    pub fn choose(
        open: &mut OpenContentionSkel<'_>,
        mode: FutexHooks,
        on_demand: bool,
        tps: Result<Vec<&'static str>, String>,
        switch3: bool,
    ) -> Self {
        let sleeps = mode == FutexHooks::Sleeps;
        let calls = mode == FutexHooks::Calls || (sleeps && on_demand);
        let tp = calls && tps.is_ok();
        let p = &mut open.progs;
        p.ttop_futex_enter.set_autoload(tp);
        p.ttop_futex_exit.set_autoload(tp);
        p.ttop_sys_enter.set_autoload(calls && !tp);
        p.ttop_sys_exit.set_autoload(calls && !tp);
        p.ttop_futex_thread_exit.set_autoload(calls);
        // Before 5.18 sched_switch has no prev_state argument: the 3-argument copy.
        p.ttop_futex_switch.set_autoload(sleeps && !switch3);
        p.ttop_futex_switch3.set_autoload(sleeps && switch3);
        p.ttop_futex_wakeup.set_autoload(sleeps);
        FutexLinks {
            mode,
            on_demand: sleeps && on_demand,
            tps,
            links: Vec::new(),
            calls_reads: 0,
            switch_in_sched: false,
        }
    }

    /// Whether the scheduler object's switch program counts the waits that slept (before
    /// `attach`).
    pub fn set_switch_in_sched(&mut self, yes: bool) {
        self.switch_in_sched = yes;
    }

    /// Whether the scheduler object's switch program counts the waits that slept.
    pub fn switch_in_sched(&self) -> bool {
        self.switch_in_sched
    }

    /// Whether the scheduler object's switch program is to count the waits now.
    pub fn sched_counts(&self) -> bool {
        self.mode == FutexHooks::Sleeps && self.switch_in_sched
    }

    /// Attach the programs of `self.mode`; Err is the user-facing reason the futex view
    /// is off. Problems of optional parts (the futex2 syscalls) go to `problems`.
    pub fn attach(
        &mut self,
        skel: &ContentionSkel<'_>,
        problems: &mut Vec<String>,
    ) -> Result<(), String> {
        let r = match self.mode {
            FutexHooks::Off => return Ok(()),
            FutexHooks::Sleeps => attach_sleeps(skel, self.switch_in_sched),
            FutexHooks::Calls => attach_calls(skel, &self.tps, problems),
        };
        match r {
            Ok(l) => {
                self.links = l;
                self.calls_reads = 0;
                Ok(())
            }
            Err(e) => {
                self.mode = FutexHooks::Off;
                Err(e)
            }
        }
    }

    /// Whether this read's interval had every call hooked from its start; counts the read.
    pub fn calls_measured(&mut self) -> bool {
        self.calls_reads = self.calls_reads.saturating_add(1);
        self.mode == FutexHooks::Calls && self.whole_interval()
    }

    /// Whether this read's interval (counted by `calls_measured`, called first) had the
    /// scheduler programs attached from its start: who woke the waits is measured.
    pub fn wakers_measured(&self) -> bool {
        self.mode == FutexHooks::Sleeps && self.whole_interval()
    }

    /// The programs attached now ran through the whole interval of this read: never
    /// switched (not on demand), or attached before the previous read.
    fn whole_interval(&self) -> bool {
        self.calls_reads >= 2 || !self.on_demand
    }

    /// Hook every call (`on`) or go back to the waits that slept, when the per-call
    /// programs were loaded for it (`on_demand`). The old links go first (detaching
    /// syscall tracepoints waits for the kernel's grace periods, ~0.4 s: the collector
    /// thread's next sample is that late), so no wait is counted twice. `since_ns`
    /// (CLOCK_MONOTONIC, before attaching) is written by the caller into the programs,
    /// which ignore a wait or a sleep they saw start before it. Err: the reason, with
    /// the previous programs attached again.
    pub fn switch(
        &mut self,
        skel: &ContentionSkel<'_>,
        on: bool,
        problems: &mut Vec<String>,
    ) -> Result<(), String> {
        if !self.would_switch(on) {
            return Ok(());
        }
        let want = if on {
            FutexHooks::Calls
        } else {
            FutexHooks::Sleeps
        };
        detach_all(std::mem::take(&mut self.links));
        let was = self.mode;
        self.mode = want;
        if let Err(e) = self.attach(skel, problems) {
            self.mode = was;
            let _ = self.attach(skel, problems);
            return Err(e);
        }
        Ok(())
    }

    /// Whether `switch(on)` would change the programs: loaded for it, attached, and
    /// not already so.
    pub fn would_switch(&self, on: bool) -> bool {
        let now_calls = self.mode == FutexHooks::Calls;
        self.on_demand && self.mode != FutexHooks::Off && now_calls != on
    }

    /// The futex syscalls with tracepoints, or why raw_syscalls must do.
    pub fn tracepoints(&self) -> &Result<Vec<&'static str>, String> {
        &self.tps
    }

    /// The links, for the collector's parallel detach at exit.
    pub fn take_links(&mut self) -> Vec<Link> {
        std::mem::take(&mut self.links)
    }
}

/// Drop `links` side by side: each syscall tracepoint's detach waits for grace periods.
pub fn detach_all(links: Vec<Link>) {
    std::thread::scope(|s| {
        for l in links {
            s.spawn(move || drop(l));
        }
    });
}

/// Attach a group of probes, all or nothing (a half-attached pair would only leave
/// stale entries). Err names the first probe that failed.
pub fn group(
    what: &str,
    tries: Vec<(String, libbpf_rs::Result<Link>)>,
) -> Result<Vec<Link>, String> {
    let mut got = Vec::new();
    for (name, r) in tries {
        match r {
            Ok(l) => got.push(l),
            Err(e) => return Err(explain(&format!("{what} off: probe {name}"), &e)),
        }
    }
    Ok(got)
}

/// The wake-up program, and the switch program unless the scheduler object's counts
/// (`in_sched`).
fn attach_sleeps(skel: &ContentionSkel<'_>, in_sched: bool) -> Result<Vec<Link>, String> {
    let p = &skel.progs;
    let mut tries = vec![("sched:sched_waking".into(), p.ttop_futex_wakeup.attach())];
    if !in_sched {
        let switch = if p.ttop_futex_switch3.autoload() {
            &p.ttop_futex_switch3
        } else {
            &p.ttop_futex_switch
        };
        tries.insert(0, ("sched:sched_switch".into(), switch.attach()));
    }
    group("futex view", tries)
}

fn attach_calls(
    skel: &ContentionSkel<'_>,
    tps: &Result<Vec<&'static str>, String>,
    problems: &mut Vec<String>,
) -> Result<Vec<Link>, String> {
    let p = &skel.progs;
    // A thread's futex calls not yet in the map (see pend_add in
    // bpf/contention_futex.h) are added when it exits: without this hook they would be
    // lost, so it belongs to the futex group.
    let thread_exit = || {
        (
            "sched:sched_process_exit".to_string(),
            p.ttop_futex_thread_exit.attach(),
        )
    };
    match tps {
        Ok(names) => {
            let pair = |n: &str| {
                let (enter, exit) = (format!("sys_enter_{n}"), format!("sys_exit_{n}"));
                let sys = || TracepointCategory::Syscalls;
                vec![
                    (
                        format!("syscalls:{exit}"),
                        p.ttop_futex_exit.attach_tracepoint(sys(), &exit),
                    ),
                    (
                        format!("syscalls:{enter}"),
                        p.ttop_futex_enter.attach_tracepoint(sys(), &enter),
                    ),
                ]
            };
            let mut tries = pair("futex");
            tries.push(thread_exit());
            let mut links = group("futex view", tries)?;
            for n in names.iter().filter(|n| **n != "futex") {
                match group(&format!("{n} calls (futex2)"), pair(n)) {
                    Ok(l) => links.extend(l),
                    Err(e) => problems.push(e),
                }
            }
            Ok(links)
        }
        Err(_) => group(
            "futex view",
            vec![
                ("raw_syscalls:sys_enter".into(), p.ttop_sys_enter.attach()),
                ("raw_syscalls:sys_exit".into(), p.ttop_sys_exit.attach()),
                thread_exit(),
            ],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(mode: FutexHooks, on_demand: bool) -> FutexLinks {
        FutexLinks {
            mode,
            on_demand,
            tps: Err("test".into()),
            links: Vec::new(),
            calls_reads: 0,
            switch_in_sched: false,
        }
    }

    /// Only the dashboard's loading switches, only to the other mode, never from off
    /// (a switch writes marks that make the programs drop the waits in flight).
    #[test]
    fn switches_only_when_it_changes_something() {
        let od = links(FutexHooks::Sleeps, true);
        assert!(od.would_switch(true) && !od.would_switch(false));
        let od = links(FutexHooks::Calls, true);
        assert!(od.would_switch(false) && !od.would_switch(true));
        // --futex-calls, -p, --json: loaded without the other programs.
        assert!(!links(FutexHooks::Calls, false).would_switch(false));
        assert!(!links(FutexHooks::Sleeps, false).would_switch(true));
        assert!(!links(FutexHooks::Off, true).would_switch(true));
    }

    /// Calls count for an interval only when hooked from its start: after a switch, the
    /// first read is partial; hooked from the start, every read counts.
    #[test]
    fn calls_are_measured_from_the_first_whole_interval() {
        let mut l = links(FutexHooks::Calls, true);
        assert!(!l.calls_measured());
        assert!(l.calls_measured() && l.calls_measured());
        let mut l = links(FutexHooks::Calls, false);
        assert!(l.calls_measured());
        let mut l = links(FutexHooks::Sleeps, true);
        assert!(!l.calls_measured() && !l.calls_measured());
    }

    /// Wakers are measured by the scheduler programs only, and, after a switch back to
    /// them, from the first whole interval.
    #[test]
    fn wakers_are_measured_by_the_scheduler_programs_for_whole_intervals() {
        let mut l = links(FutexHooks::Sleeps, true);
        l.calls_measured();
        assert!(!l.wakers_measured());
        l.calls_measured();
        assert!(l.wakers_measured());
        let mut l = links(FutexHooks::Sleeps, false);
        l.calls_measured();
        assert!(l.wakers_measured());
        for on_demand in [true, false] {
            let mut l = links(FutexHooks::Calls, on_demand);
            l.calls_measured();
            l.calls_measured();
            assert!(!l.wakers_measured());
        }
        let mut l = links(FutexHooks::Off, false);
        l.calls_measured();
        assert!(!l.wakers_measured());
    }
}
