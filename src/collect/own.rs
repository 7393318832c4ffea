//! ttop's own cost, read each tick (model/own.rs says what each figure means).
//!
//! The eBPF programs' run time is counted by the kernel only while BPF statistics are
//! enabled, and enabling them costs every program on the machine a clock read or two
//! per run, so ttop holds them on for a short window at intervals: WINDOW_NS every
//! EVERY_NS, the first one from the first tick. Between windows the last one's figures
//! stand, with their age.
//!
//! Each window is judged by the ceiling on the programs' cost (model/shed.rs); after a
//! window that changed what is shed, the next opens WINDOW_NS later instead, so the
//! steps follow each other within seconds and their effect is measured.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;

use super::bpf::stats::{self, ProgStat};
use crate::model::own::{BpfWindow, OwnSample, ProgRun};
use crate::model::shed::{Ceiling, PartClocks, WindowCosts};

/// How long a statistics window lasts (at least; it closes at the first tick after)
/// and how often one opens.
pub const WINDOW_NS: u64 = 1_000_000_000;
pub const EVERY_NS: u64 = 10_000_000_000;

struct Open {
    _stats: OwnedFd,
    /// The tick that opened it (when to close is counted in ticks' clock readings), and
    /// when the statistics really started.
    tick_mono_ns: u64,
    start_mono_ns: u64,
    ids: Vec<u32>,
    at_start: BTreeMap<u32, ProgStat>,
    /// The sheddable parts' clocks when it opened.
    parts_at_start: PartClocks,
}

/// Reads ttop's own CPU and memory each tick, and its programs' cost in windows.
pub struct OwnMeter {
    /// False without eBPF: then the BPF cost is "not measured", with the reason.
    bpf: bool,
    open: Option<Open>,
    next_mono_ns: u64,
    last: Option<BpfWindow>,
    why: Option<String>,
    names: HashMap<u32, String>,
    /// None: the ceiling is off (--bpf-budget off, or no eBPF).
    ceiling: Option<Ceiling>,
}

impl OwnMeter {
    /// `budget_pct`: the ceiling on the programs' cost, % of one CPU (None: off).
    pub fn new(bpf: bool, budget_pct: Option<f64>) -> Self {
        OwnMeter {
            ceiling: Ceiling::new(budget_pct.filter(|_| bpf)),
            bpf,
            open: None,
            next_mono_ns: 0,
            last: None,
            why: (!bpf).then(|| "no eBPF programs loaded".to_string()),
            names: HashMap::new(),
        }
    }

    /// This tick's figures; opens or closes a statistics window when it is time.
    /// `parts`: the sheddable parts' clocks so far, as the programs measured them (None
    /// without the contention probes).
    pub fn read(&mut self, mono_ns: u64, parts: Option<PartClocks>) -> OwnSample {
        if self.bpf {
            self.step_window(mono_ns, parts.unwrap_or_default());
        }
        OwnSample {
            cpu_ns: process_cpu_ns(),
            rss_bytes: rss_bytes(),
            bpf: self.last.clone(),
            bpf_why: self.why.clone(),
            shed: self.ceiling.as_ref().map(Ceiling::shed),
        }
    }

    fn step_window(&mut self, mono_ns: u64, parts: PartClocks) {
        if let Some(o) = &self.open {
            // A tick early by a few ms still closes it: else a 1 s window waits a whole tick more.
            if mono_ns.saturating_sub(o.tick_mono_ns) < WINDOW_NS * 9 / 10 {
                return;
            }
            // The window's true ends: just after the first snapshot, just before the
            // last (the tick's own clock reading is earlier by the scan's time).
            let end_ns = crate::util::mono_ns();
            let end = stats::snapshot_named(&o.ids, &mut self.names);
            let progs = stats::diff(&o.at_start, &end)
                .into_iter()
                .map(|p| ProgRun {
                    name: p.name,
                    run_time_ns: p.run_time_ns,
                    run_cnt: p.run_cnt,
                })
                .collect();
            let w = BpfWindow {
                end_mono_ns: end_ns,
                window_ns: end_ns.saturating_sub(o.start_mono_ns).max(1),
                progs,
            };
            let costs = WindowCosts {
                progs: w.progs.clone(),
                parts: parts.since(o.parts_at_start),
            };
            let stepped = self
                .ceiling
                .as_mut()
                .is_some_and(|c| c.judge(&costs, w.window_ns, end_ns));
            self.last = Some(w);
            // Dropping the fd turns the statistics off (unless another holder keeps them).
            self.open = None;
            self.next_mono_ns = mono_ns
                + if stepped {
                    WINDOW_NS
                } else {
                    EVERY_NS - WINDOW_NS
                };
            return;
        }
        if mono_ns < self.next_mono_ns {
            return;
        }
        let ids = stats::prog_ids_of(std::process::id());
        match stats::enable_stats() {
            Ok(fd) => {
                let at_start = stats::snapshot_named(&ids, &mut self.names);
                self.why = None;
                self.open = Some(Open {
                    _stats: fd,
                    tick_mono_ns: mono_ns,
                    start_mono_ns: crate::util::mono_ns(),
                    ids,
                    at_start,
                    parts_at_start: parts,
                });
            }
            Err(e) => {
                self.why = Some(e);
                self.next_mono_ns = mono_ns + EVERY_NS;
            }
        }
    }
}

/// CPU time of the whole process, all threads (dead ones included), ns.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Resident memory from /proc/self/statm (its second field, in pages), bytes.
pub fn rss_bytes() -> u64 {
    let pages: u64 = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}
