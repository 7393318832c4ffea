//! The profile view's stacks with their source lines, kept beside its folded stacks
//! window for window, so that `E` writes pprof with files and lines (`ttop profile
//! --pprof` has them too). Frames from a Sample without lines (a recording made before
//! Samples kept them) add nothing here: those stacks are written by name.

use std::collections::{HashMap, VecDeque};

use crate::model::profile::{Location, PprofStack, named};

#[derive(Debug, Default)]
pub struct ProfileLines {
    /// Each recent interval's located stacks, in step with the view's `recent`.
    recent: VecDeque<Vec<PprofStack>>,
    since_start: HashMap<Vec<Location>, u64>,
    /// What was shown when the view was paused.
    frozen: Option<HashMap<Vec<Location>, u64>>,
}

/// A located stack's folded line (names only), as the view's stacks are keyed.
fn folded(stack: &[Location]) -> String {
    let mut line = String::new();
    for f in stack.iter().flat_map(|l| l.iter().rev()) {
        if !line.is_empty() {
            line.push(';');
        }
        line.push_str(&f.name);
    }
    line
}

impl ProfileLines {
    /// One interval's stacks; `recent` is the view's window length after its own push.
    pub fn push(&mut self, stacks: &[PprofStack], recent: usize) {
        for (s, n) in stacks {
            *self.since_start.entry(s.clone()).or_default() += n;
        }
        while self.recent.len() >= recent.max(1) {
            self.recent.pop_front();
        }
        self.recent.push_back(stacks.to_vec());
    }

    pub fn clear(&mut self) {
        self.recent.clear();
        self.since_start.clear();
        if self.frozen.is_some() {
            self.frozen = Some(HashMap::new());
        }
    }

    fn live(&self, all_time: bool) -> HashMap<Vec<Location>, u64> {
        if all_time {
            return self.since_start.clone();
        }
        let mut m: HashMap<Vec<Location>, u64> = HashMap::new();
        for (s, n) in self.recent.iter().flatten() {
            *m.entry(s.clone()).or_default() += n;
        }
        m
    }

    pub fn freeze(&mut self, on: bool, all_time: bool) {
        self.frozen = on.then(|| self.live(all_time));
    }

    /// The `shown` folded stacks with their lines: a stack's located variants when
    /// they count exactly its samples, else the stack by name (no lines known).
    pub fn located(&self, shown: &[(String, u64)], all_time: bool) -> Vec<PprofStack> {
        let window = match &self.frozen {
            Some(f) => f.clone(),
            None => self.live(all_time),
        };
        let mut by_line: HashMap<String, Vec<(Vec<Location>, u64)>> = HashMap::new();
        for (s, n) in window {
            by_line.entry(folded(&s)).or_default().push((s, n));
        }
        let mut out = Vec::new();
        for (line, n) in shown {
            match by_line.remove(line) {
                Some(mut v) if v.iter().map(|(_, c)| c).sum::<u64>() == *n => {
                    v.sort();
                    out.extend(v);
                }
                _ => out.push((line.split(';').map(named).collect(), *n)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::SrcFrame;
    use std::sync::Arc;

    fn at(name: &str, file: &str, line: u32) -> Location {
        Arc::new([SrcFrame {
            name: name.into(),
            file: file.into(),
            line,
        }])
    }

    #[test]
    fn a_stack_keeps_its_lines_only_when_they_count_all_its_samples() {
        let a = vec![
            named("p-1"),
            named("p"),
            at("main", "m.c", 3),
            at("f", "m.c", 9),
        ];
        let b = vec![
            named("p-1"),
            named("p"),
            at("main", "m.c", 3),
            at("f", "m.c", 11),
        ];
        let mut l = ProfileLines::default();
        l.push(&[(a.clone(), 2), (b.clone(), 3)], 30);
        let got = l.located(&[("p-1;p;main;f".into(), 5)], false);
        assert_eq!(got, vec![(a.clone(), 2), (b.clone(), 3)]);
        // The view counts more than the lines do (a frame without lines): by name.
        let got = l.located(&[("p-1;p;main;f".into(), 6)], false);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.len(), 4);
        assert!(got[0].0.iter().all(|l| l[0].file.is_empty()));
        // The window drops old intervals, the all-time count keeps them.
        l.push(&[], 1);
        assert_eq!(l.located(&[("p-1;p;main;f".into(), 5)], true).len(), 2);
        assert_eq!(
            l.located(&[("p-1;p;main;f".into(), 5)], false)[0].0[3][0].line,
            0
        );
        // Paused: what was shown then.
        l.freeze(true, true);
        l.push(&[(a.clone(), 100)], 1);
        assert_eq!(l.located(&[("p-1;p;main;f".into(), 5)], true).len(), 2);
    }
}
