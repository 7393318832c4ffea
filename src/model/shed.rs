//! The ceiling on ttop's own eBPF cost (issue 36 item 4): when its programs together
//! run for more than a budget (a share of one CPU, measured over each BPF statistics
//! window of collect/own.rs), the expensive optional parts are shed in steps, cheapest
//! loss first, and given back when the cost falls well under the budget.
//!
//! The parts, in the order they are shed:
//! 1. Kernel-lock stacks (`contention_begin`'s key scan and stack walk): kept for 1
//!    contention in 2, then 4, ... 64, then for none. Every contention is still counted
//!    with its wait; the others go to a row whose caller is [`NOT_SAMPLED`].
//! 2. Futex user stack walks (in the futex programs): off; entries keep the stack they had.
//!
//! A step is taken only when the part itself cost at least a quarter of the budget in
//! the window, as the programs clock it (shedding a part that costs little loses callers
//! for nothing): a storm of futex waits with no kernel-lock contention goes straight to
//! part 2, and a kernel-lock storm whose counting alone is over the budget keeps the
//! stacks it can afford. Given
//! back last-shed-first, one step each time RECOVER_WINDOWS windows in a row cost at
//! most half the budget: one step at most doubles what it gives back, so the cost stays
//! under the budget and the ceiling does not swing.
//!
//! The default budget (without `--bpf-budget`) is the target for all of ttop's
//! programs together: 3% of one CPU.

use serde::{Deserialize, Serialize};

use super::own::ProgRun;

pub const TARGET_BUDGET_PCT: f64 = 3.0;
/// Windows in a row at most half the budget before one step is given back.
pub const RECOVER_WINDOWS: u32 = 2;
/// Kernel-lock stacks are kept for 1 contention in 2^shift; this shift means none.
pub const KSTACKS_OFF_SHIFT: u32 = 7;
/// The value bpf/lock_stacks.h takes for "no stacks" (KSHED_OFF).
pub const BPF_KSHED_OFF: u32 = 16;
/// The caller of the contentions left without a stack.
pub const NOT_SAMPLED: &str = "(not sampled)";

/// A part that can be shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    KernelStacks,
    UserStacks,
}

/// What the sheddable parts took, ns, as the programs clock them (cumulative since
/// load, or over a window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartClocks {
    /// The kernel-lock stacks: `contention_begin`'s key scan, cache and walks, 1 call in
    /// 16 clocked and counted 16 times (bpf/lock_stacks.h `KSTACK_NS`). The rest of that
    /// program's run time is counting, which is never shed.
    pub kernel_stacks_ns: u64,
    /// The futex user stack walks and copies (bpf/futex_shared.h `ustack_stats[2]`):
    /// they run inside the scheduler's switch program, whose run time is mostly the
    /// scheduler's.
    pub user_walk_ns: u64,
}

impl PartClocks {
    /// What was taken since `earlier`.
    pub fn since(self, earlier: PartClocks) -> PartClocks {
        PartClocks {
            kernel_stacks_ns: self
                .kernel_stacks_ns
                .saturating_sub(earlier.kernel_stacks_ns),
            user_walk_ns: self.user_walk_ns.saturating_sub(earlier.user_walk_ns),
        }
    }
}

/// One statistics window's costs, as the ceiling judges them.
#[derive(Debug, Clone, Default)]
pub struct WindowCosts {
    /// Each program's run time over the window: their sum is judged against the budget.
    pub progs: Vec<ProgRun>,
    /// What the sheddable parts took over the window.
    pub parts: PartClocks,
}

impl Part {
    /// What this part's work cost over the window, ns.
    fn cost_ns(self, w: &WindowCosts) -> u64 {
        match self {
            Part::KernelStacks => w.parts.kernel_stacks_ns,
            Part::UserStacks => w.parts.user_walk_ns,
        }
    }
}

/// What is shed now: the JSON `self.shed` (in the Sample, then the Frame).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shed {
    /// The budget, % of one CPU for all of ttop's eBPF programs together.
    pub budget_pct: f64,
    /// Kernel-lock stacks are kept for 1 contention in this many (1: all); None: none.
    pub kernel_stacks_1_in: Option<u64>,
    /// Futex user stacks are no longer walked.
    pub user_stacks_off: bool,
    /// CLOCK_MONOTONIC of the first step since nothing was shed; None when nothing is.
    pub since_mono_ns: Option<u64>,
    /// The programs' cost over the window that decided last, % of one CPU.
    pub decided_at_pct: f64,
}

impl Shed {
    pub fn active(&self) -> bool {
        self.since_mono_ns.is_some()
    }

    /// The value of bpf/lock_stacks.h's `kstack_shed`.
    pub fn bpf_kstack_shed(&self) -> u32 {
        match self.kernel_stacks_1_in {
            None => BPF_KSHED_OFF,
            Some(n) => n.max(1).trailing_zeros(),
        }
    }

    /// What the screen says: "shed: kernel stacks 1/8, user stacks off" (None: nothing).
    pub fn text(&self) -> Option<String> {
        self.active().then_some(())?;
        let mut parts = Vec::new();
        match self.kernel_stacks_1_in {
            None => parts.push("kernel stacks off".to_string()),
            Some(n) if n > 1 => parts.push(format!("kernel stacks 1/{n}")),
            Some(_) => {}
        }
        if self.user_stacks_off {
            parts.push("user stacks off".into());
        }
        Some(format!("shed: {}", parts.join(", ")))
    }
}

/// The ceiling as the JSON `self.shed` shows it (null when the ceiling is off).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ShedFrame {
    pub budget_pct: f64,
    /// Something is shed now.
    pub active: bool,
    /// Kernel-lock stacks kept for 1 contention in this many (1: all); null: none kept.
    pub kernel_stacks_1_in: Option<u64>,
    pub user_stacks_off: bool,
    /// How long ago the first step was taken, seconds; null when nothing is shed.
    pub since_s: Option<f64>,
    /// The eBPF programs' cost over the window that decided last, % of one CPU.
    pub decided_at_pct: f64,
    /// What the header says ("shed: kernel stacks 1/8"); null when nothing is shed.
    pub text: Option<String>,
}

impl ShedFrame {
    pub fn of(s: &Shed, mono_ns: u64) -> Self {
        ShedFrame {
            budget_pct: s.budget_pct,
            active: s.active(),
            kernel_stacks_1_in: s.kernel_stacks_1_in,
            user_stacks_off: s.user_stacks_off,
            since_s: s
                .since_mono_ns
                .map(|t| mono_ns.saturating_sub(t) as f64 / 1e9),
            decided_at_pct: s.decided_at_pct,
            text: s.text(),
        }
    }
}

/// The ceiling's state: the steps taken, last one last.
#[derive(Debug, Clone)]
pub struct Ceiling {
    budget_pct: f64,
    steps: Vec<Part>,
    calm_windows: u32,
    since_mono_ns: Option<u64>,
    decided_at_pct: f64,
}

impl Ceiling {
    /// `budget_pct`: None turns the ceiling off (it never sheds).
    pub fn new(budget_pct: Option<f64>) -> Option<Self> {
        budget_pct.filter(|b| *b > 0.0).map(|budget_pct| Ceiling {
            budget_pct,
            steps: Vec::new(),
            calm_windows: 0,
            since_mono_ns: None,
            decided_at_pct: 0.0,
        })
    }

    fn count(&self, p: Part) -> u32 {
        self.steps.iter().filter(|s| **s == p).count() as u32
    }

    /// What is shed now.
    pub fn shed(&self) -> Shed {
        let k = self.count(Part::KernelStacks);
        Shed {
            budget_pct: self.budget_pct,
            kernel_stacks_1_in: (k < KSTACKS_OFF_SHIFT).then(|| 1u64 << k),
            user_stacks_off: self.count(Part::UserStacks) > 0,
            since_mono_ns: self.since_mono_ns,
            decided_at_pct: self.decided_at_pct,
        }
    }

    /// Whether one more step of `p` can be taken.
    fn can_shed(&self, p: Part) -> bool {
        match p {
            Part::KernelStacks => self.count(p) < KSTACKS_OFF_SHIFT,
            Part::UserStacks => self.count(p) == 0,
        }
    }

    /// Judge one statistics window (`progs` over `window_ns`, ended at `mono_ns`);
    /// true when what is shed changed.
    pub fn judge(&mut self, w: &WindowCosts, window_ns: u64, mono_ns: u64) -> bool {
        let pct = |ns: u64| 100.0 * ns as f64 / window_ns.max(1) as f64;
        let total = pct(w.progs.iter().map(|p| p.run_time_ns).sum());
        self.decided_at_pct = total;
        if total > self.budget_pct {
            self.calm_windows = 0;
            let part_pct = |p: Part| pct(p.cost_ns(w));
            let next = [Part::KernelStacks, Part::UserStacks]
                .into_iter()
                .find(|p| self.can_shed(*p) && part_pct(*p) >= self.budget_pct / 4.0);
            let Some(p) = next else {
                return false;
            };
            self.steps.push(p);
            self.since_mono_ns.get_or_insert(mono_ns);
            return true;
        }
        if self.steps.is_empty() || total > self.budget_pct / 2.0 {
            self.calm_windows = 0;
            return false;
        }
        self.calm_windows += 1;
        if self.calm_windows < RECOVER_WINDOWS {
            return false;
        }
        self.calm_windows = 0;
        self.steps.pop();
        if self.steps.is_empty() {
            self.since_mono_ns = None;
        }
        true
    }
}

#[cfg(test)]
#[path = "shed_tests.rs"]
mod tests;
