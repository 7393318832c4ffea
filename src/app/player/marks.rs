//! Where findings were active in a recording, for the replay time bar. The frames are
//! judged in order from the first, a budget at a time while the player is idle, with
//! the same window as live, so a mark is exactly where a replay (and live) showed an
//! active finding.

use crate::model::findings::{Severity, Window};
use crate::model::{Sample, derive};
use crate::record::Series;

/// A position not judged yet.
pub const UNKNOWN: u8 = 0;
/// Judged: no active finding.
pub const NONE: u8 = 1;
/// Judged: the most severe active finding (NONE + 1 + Severity as u8).
pub fn level(s: Severity) -> u8 {
    NONE + 1
        + match s {
            Severity::Info => 0,
            Severity::Warning => 1,
            Severity::Critical => 2,
        }
}

#[derive(Default)]
pub struct Marks {
    by_pos: Vec<u8>,
    next: usize,
    window: Window,
    prev: Option<Sample>,
}

impl Marks {
    pub fn new(len: usize) -> Marks {
        Marks {
            by_pos: vec![UNKNOWN; len],
            // Position 0 only primes (no frame), as live.
            next: 0,
            ..Default::default()
        }
    }

    /// Every position judged.
    pub fn done(&self) -> bool {
        self.next >= self.by_pos.len()
    }

    /// Judge up to `budget` more positions; whether any got an active finding's mark.
    pub fn more(&mut self, series: &mut Series, budget: usize) -> bool {
        let sys = series.header().system.clone();
        let mut marked = false;
        let end = (self.next + budget).min(self.by_pos.len());
        while self.next < end {
            let i = self.next;
            self.next += 1;
            let Ok(cur) = series.sample(i) else {
                // A damaged Sample: no frame here nor at the next position, as the player.
                self.by_pos[i] = NONE;
                self.prev = None;
                continue;
            };
            let Some(prev) = self.prev.replace(cur) else {
                self.by_pos[i] = NONE;
                continue;
            };
            let cur = self.prev.as_ref().expect("just set");
            let mut f = derive(&sys, Some(&prev), cur);
            self.window.push(&mut f);
            let top = f
                .findings
                .iter()
                .filter(|x| x.active)
                .map(|x| level(x.severity))
                .max();
            self.by_pos[i] = top.unwrap_or(NONE);
            marked |= top.is_some();
        }
        if self.done() {
            self.prev = None;
        }
        marked
    }

    /// The marks of `n` equal stretches of the recording: the most severe judged mark in
    /// each (UNKNOWN where none of it is judged yet).
    pub fn buckets(&self, n: usize) -> Vec<u8> {
        let len = self.by_pos.len();
        if len == 0 || n == 0 {
            return Vec::new();
        }
        (0..n)
            .map(|b| {
                let from = b * len / n;
                let to = ((b + 1) * len / n).max(from + 1).min(len);
                self.by_pos[from..to]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(UNKNOWN)
            })
            .collect()
    }

    /// The mark of one position.
    pub fn at(&self, i: usize) -> u8 {
        self.by_pos.get(i).copied().unwrap_or(UNKNOWN)
    }
}
