//! Findings: the seeds' patterns named when they happen, with the figures that triggered
//! them. Pure: `findings(recent frames)` looks at each frame on its own (`observe`, in
//! `findings::rules`) and then at the window (`judge`): a candidate must hold for a few
//! intervals before it shows, and stays listed, marked past, for a few after it ends.
//! Live, `--json` and replay all run the same `Window` over the same frames, so a replay
//! shows the same findings at the same moments.
//!
//! JSON keys here are a public contract (`ttop --json` `findings[]`): add, never rename.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::model::findings::FindingView;
pub use crate::model::findings::evidence::Evidence;
pub use crate::model::findings::rules::observe;
use crate::model::frame::Frame;

/// How bad it is. Sorted most severe first on screen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warn",
            Severity::Critical => "CRIT",
        }
    }
}

/// One pattern seen in one frame, before hysteresis. `key` tells candidates of the same
/// kind apart (a process, a futex word, a lock) across frames.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Finding {
    /// Stable name: thread_churn, scan_undercount, cpu_saturation, hot_lock,
    /// idle_futex_storm, mmap_lock_stall, sched_stall, tlb_storm, lost_data,
    /// cpu_throttled, memory_pressure, io_pressure.
    pub kind: &'static str,
    pub severity: Severity,
    /// Wall clock (Unix seconds) at the end of the first interval of this run, as far
    /// back as the window reaches.
    pub since: f64,
    /// false: it ended (listed a few more intervals, marked past).
    pub active: bool,
    /// The processes involved, the main one first.
    pub pids: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tids: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    /// Futex words ("pid:0xaddr") or kernel locks ("0xaddr") involved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addrs: Vec<String>,
    /// The cgroup involved (a path below the cgroup2 mount), for the cgroup findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// What is happening and what usually fixes it, one sentence.
    pub summary: String,
    /// The figures that triggered it, per second where the name ends in `_per_s`.
    pub figures: BTreeMap<&'static str, f64>,
    /// The view that shows the evidence (JSON: main, futexes, locks, ipi, latency,
    /// cgroups).
    pub view: FindingView,
    #[serde(skip)]
    pub key: u64,
    /// What a rule found in the frame's tables beyond its trigger (a lock the threads
    /// queue on), kept apart until `judge` so it can be carried through a run.
    #[serde(skip)]
    pub evidence: Option<Evidence>,
    /// Where in `summary` the evidence clause goes.
    #[serde(skip)]
    pub evidence_at: usize,
}

/// Intervals of history a finding is judged on.
pub const WINDOW: usize = 10;
/// A condition must hold this many intervals in a row before it shows: one busy
/// interval (a build, a burst) is not a pattern.
pub const HOLD: usize = 3;
/// ...or two intervals that together last this long: on a machine so busy that ttop's
/// own ticks stretch to several seconds (CI saw 2.4 s then 6.7 s under thread churn),
/// three intervals would hide a pattern for 15 s or more. At the default 1 s interval
/// the two rules agree.
pub const HOLD_SECS: f64 = 3.0;
/// Events (a stall, a loss) are shown as soon as they happen: waiting for three in a
/// row would hide a stall that happens every few seconds.
pub const HOLD_EVENT: usize = 1;
/// A finding stays listed, marked past, this many intervals after it ends, so a person
/// can read it.
pub const LINGER: usize = 5;

/// Kinds judged as events (shown at once) rather than conditions.
fn hold_of(kind: &str) -> usize {
    match kind {
        "sched_stall" | "mmap_lock_stall" | "lost_data" => HOLD_EVENT,
        _ => HOLD,
    }
}

/// The findings at the last of `obs` (one entry per interval, oldest first: each
/// frame's time and its candidates). Active ones first, most severe first.
pub fn judge(obs: &[(f64, Vec<Finding>)]) -> Vec<Finding> {
    let n = obs.len();
    if n == 0 {
        return Vec::new();
    }
    let mut ids: Vec<(&'static str, u64)> = obs
        .iter()
        .flat_map(|(_, v)| v.iter().map(|f| (f.kind, f.key)))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    for (kind, key) in ids {
        let at = |i: usize| obs[i].1.iter().find(|f| f.kind == kind && f.key == key);
        let hold = hold_of(kind);
        // The last interval that ends a run of `hold` present intervals, and the run.
        let mut run = 0usize;
        let mut shown: Option<(usize, usize)> = None; // (end index, start index)
        for i in 0..n {
            if at(i).is_some() {
                run += 1;
                // The run's wall time, from the frame before its first interval (unknown
                // for a run that starts the window).
                let lasted = (i >= run).then(|| obs[i].0 - obs[i - run].0);
                let long = hold > 1 && run >= 2 && lasted.is_some_and(|s| s >= HOLD_SECS);
                if run >= hold || long {
                    shown = Some((i, i + 1 - run));
                }
            } else {
                run = 0;
            }
        }
        let Some((end, start)) = shown else { continue };
        let active = end == n - 1;
        if !active && n - 1 - end > LINGER {
            continue;
        }
        let mut f = at(end).expect("present at the end of its run").clone();
        // Evidence seen in any interval of the run, the strongest (most threads on the
        // word, then the latest): a lock contended in bursts is named while the pattern
        // lasts, not only in the intervals it showed, and the tail of a churn winding
        // down (one thread left on the lock) does not stand for the run.
        let ev = (start..=end)
            .filter_map(at)
            .filter_map(|f| f.evidence.as_ref())
            .enumerate()
            .max_by(|(i, a), (j, b)| a.weight.total_cmp(&b.weight).then(i.cmp(j)))
            .map(|(_, e)| e.clone());
        f.add_evidence(ev);
        f.active = active;
        f.since = obs[start].0;
        // The worst severity of the run.
        f.severity = (start..=end)
            .filter_map(at)
            .map(|f| f.severity)
            .max()
            .unwrap_or(f.severity);
        out.push(f);
    }
    out.sort_by(|a, b| {
        b.active
            .cmp(&a.active)
            .then(b.severity.cmp(&a.severity))
            .then(a.since.total_cmp(&b.since))
            .then(a.kind.cmp(b.kind))
            .then(a.key.cmp(&b.key))
    });
    out
}

/// The findings at the last of `frames` (oldest first). A pure function of the frames.
pub fn findings(frames: &[&Frame]) -> Vec<Finding> {
    let obs: Vec<_> = frames.iter().map(|f| (f.t, observe(f))).collect();
    judge(&obs)
}

/// The last WINDOW frames' candidates, so each frame is observed once. Fills
/// `Frame::findings`; equal to `findings` over the same frames.
#[derive(Debug, Default, Clone)]
pub struct Window {
    obs: VecDeque<(f64, Vec<Finding>)>,
}

impl Window {
    pub fn new() -> Self {
        Self::default()
    }

    /// Observe `frame`, judge the window and set `frame.findings`.
    pub fn push(&mut self, frame: &mut Frame) {
        if self.obs.len() == WINDOW {
            self.obs.pop_front();
        }
        self.obs.push_back((frame.t, observe(frame)));
        frame.findings = judge(self.obs.make_contiguous());
    }

    pub fn clear(&mut self) {
        self.obs.clear();
    }
}

/// Kinds that need eBPF (all but the cgroup ones, `findings::cgroup`): procfs-only mode
/// says so instead of guessing.
pub const KINDS: &[&str] = &[
    "thread_churn",
    "scan_undercount",
    "cpu_saturation",
    "hot_lock",
    "idle_futex_storm",
    "mmap_lock_stall",
    "sched_stall",
    "tlb_storm",
    "lost_data",
];

pub(crate) fn fig(pairs: &[(&'static str, f64)]) -> BTreeMap<&'static str, f64> {
    pairs
        .iter()
        .map(|&(k, v)| (k, (v * 100.0).round() / 100.0))
        .collect()
}
