//! Playback over a recording: a position, play/pause, speed, steps, jumps and "go to",
//! producing the Frame for the position with the same `derive` as live. The replay
//! session (`app::replay`) drives it; `ReplayBar` is what the time bar shows (plain
//! data, no I/O). The recording itself is read through `record::Series`; nothing here
//! writes or parses files.
//!
//! `speed` (how fast it plays), `bar` (the time bar's data), `goto` (parsing the "go to"
//! prompt), `marks` (where findings were active, judged in the background).

mod bar;
mod goto;
pub mod marks;
mod speed;

use std::time::Duration;

pub use bar::{MARK_BUCKETS, ReplayBar};
use marks::Marks;
pub use speed::Speed;

use crate::model::findings::{WINDOW, Window};
use crate::model::{Frame, Sample, derive};
use crate::record::Series;

pub struct Player {
    reader: Series,
    pos: usize,
    /// The Sample at `pos` and the one before it, when they decoded.
    cur: Option<(usize, Sample)>,
    /// Findings over the frames up to `judged` (the last position pushed), so stepping
    /// forward judges one frame and a jump rebuilds the window from WINDOW frames back.
    window: Window,
    judged: Option<usize>,
    marks: Marks,
    pub playing: bool,
    pub speed: Speed,
    pub note: Option<String>,
}

impl Player {
    /// Starts paused on the first frame (the first Sample only primes, as live). A
    /// Reader (one file) or a Series (a directory of rotated files) plays the same.
    pub fn new(reader: impl Into<Series>) -> Player {
        let reader = reader.into();
        let len = reader.len();
        let pos = 1.min(len.saturating_sub(1));
        Player {
            reader,
            pos,
            cur: None,
            window: Window::new(),
            judged: None,
            marks: Marks::new(len),
            playing: false,
            speed: Speed::X1,
            note: None,
        }
    }

    pub fn len(&self) -> usize {
        self.reader.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reader.is_empty()
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn series(&self) -> &Series {
        &self.reader
    }

    fn wall(&self, i: usize) -> u64 {
        self.reader.wall(i)
    }

    fn sample(&mut self, i: usize) -> Option<Sample> {
        if let Some((c, s)) = &self.cur
            && *c == i
        {
            return Some(s.clone());
        }
        match self.reader.sample(i) {
            Ok(s) => Some(s),
            Err(e) => {
                self.note = Some(format!("skipped {e}"));
                None
            }
        }
    }

    /// The Frame at the current position (None when that Sample is unreadable), with
    /// the findings of the frames up to it, the same as live and `--json` saw them.
    pub fn frame(&mut self) -> Option<Frame> {
        let pos = self.pos;
        if pos == 0 || self.judged != Some(pos - 1) {
            // A jump: judge the WINDOW - 1 frames before this one again.
            self.window.clear();
            let from = pos.saturating_sub(WINDOW - 1).max(1);
            for i in from..pos {
                if let Some(mut f) = self.derive_at(i) {
                    self.window.push(&mut f);
                }
            }
        }
        let mut f = self.derive_at(pos)?;
        self.window.push(&mut f);
        self.judged = Some(pos);
        Some(f)
    }

    /// Go to the next (`forward`) or previous position where a finding starts showing
    /// (one that was not active at the position before). Judges the frames on the way,
    /// in order, as live did; `false` (and a note) when there is none.
    pub fn seek_finding(&mut self, forward: bool) -> bool {
        let here = self.pos;
        let (from, to) = if forward {
            (here, self.len().saturating_sub(1))
        } else {
            (1.min(here), here.saturating_sub(1))
        };
        let mut prev_active: Vec<(&'static str, u64)> = Vec::new();
        let mut found = None;
        for i in from..=to {
            self.pos = i;
            let Some(f) = self.frame() else { continue };
            let active: Vec<_> = f
                .findings
                .iter()
                .filter(|f| f.active)
                .map(|f| (f.kind, f.key))
                .collect();
            let onset = active.iter().any(|k| !prev_active.contains(k));
            prev_active = active;
            if onset && i != here {
                found = Some(i);
                if forward {
                    break;
                }
            }
        }
        self.pos = here;
        match found {
            Some(i) => self.seek(i),
            None => {
                self.note = Some(format!(
                    "no finding starts {} here",
                    if forward { "after" } else { "before" }
                ));
                false
            }
        }
    }

    /// The Frame of position `i` without findings (Samples i - 1 and i).
    fn derive_at(&mut self, i: usize) -> Option<Frame> {
        let sys = self.reader.header().system.clone();
        let prev = if i > 0 { self.sample(i - 1) } else { None };
        let cur = self.sample(i)?;
        let f = derive(&sys, prev.as_ref(), &cur);
        self.cur = Some((i, cur));
        Some(f)
    }

    /// Go to position `i` (clamped). Returns whether the position changed.
    pub fn seek(&mut self, i: usize) -> bool {
        let i = i
            .min(self.len().saturating_sub(1))
            .max(1.min(self.len().saturating_sub(1)));
        let moved = i != self.pos;
        self.pos = i;
        moved
    }

    /// Step `n` frames forward (negative: back).
    pub fn step(&mut self, n: i64) -> bool {
        let to = (self.pos as i64 + n).max(0) as usize;
        self.seek(to)
    }

    /// Jump by `secs` of recorded time.
    pub fn jump(&mut self, secs: f64) -> bool {
        let at = self.wall(self.pos) as f64 + secs * 1e9;
        let i = if secs >= 0.0 {
            // The first frame at or after the target, so a jump always moves.
            self.reader.first_from(at.max(0.0) as u64)
        } else {
            self.reader.position_at(at.max(0.0) as u64)
        };
        self.seek(i)
    }

    /// "Go to": a UTC date and time (`2026-11-24 14:05`, for a directory of a week's
    /// files), clock time of day in UTC (`14:05`, `14:05:30`: on the recording's first
    /// day), an offset from the start (`90`, `5m`, `1h`), or relative to here (`+30s`,
    /// `-2m`).
    pub fn goto(&mut self, text: &str) -> Result<(), String> {
        let target = goto::target(text, self.wall(0), self.wall(self.pos))?;
        self.seek(self.nearest(target));
        Ok(())
    }

    /// The position whose Sample was taken nearest `wall_ns` (samples come a little
    /// late or early: "5 s from the start" is the one taken about then, not the last one
    /// before it, which is the one 4 s in).
    fn nearest(&self, wall_ns: u64) -> usize {
        let i = self.reader.position_at(wall_ns);
        let next = (i + 1).min(self.len().saturating_sub(1));
        let off = |j: usize| self.wall(j).abs_diff(wall_ns);
        if off(next) < off(i) { next } else { i }
    }

    /// When playing: how long the current frame stays on screen at this speed.
    pub fn frame_time(&self) -> Option<Duration> {
        if !self.playing {
            return None;
        }
        let Some(f) = self.speed.factor() else {
            return Some(Duration::ZERO);
        };
        let gap = self.wall(self.pos + 1).saturating_sub(self.wall(self.pos));
        Some(Duration::from_nanos((gap as f64 / f) as u64).min(Duration::from_secs(10)))
    }

    /// Advance one frame while playing; stops at the end.
    pub fn advance(&mut self) -> bool {
        let moved = self.step(1);
        if !moved {
            self.playing = false;
        }
        moved
    }

    /// Judge up to `budget` more frames for the time bar's marks (in order from the
    /// first); whether one got a mark. Nothing is left to do once `marks_done`.
    pub fn mark_more(&mut self, budget: usize) -> bool {
        self.marks.more(&mut self.reader, budget)
    }

    pub fn marks_done(&self) -> bool {
        self.marks.done()
    }

    /// The mark of position `i` (see [`ReplayBar::marks`]).
    pub fn mark(&self, i: usize) -> u8 {
        self.marks.at(i)
    }

    pub fn bar(&self, goto: Option<&str>) -> ReplayBar {
        ReplayBar {
            file: self.reader.path().display().to_string(),
            start_ns: self.wall(0),
            at_ns: self.wall(self.pos),
            end_ns: self.wall(self.len().saturating_sub(1)),
            frame: self.pos,
            frames: self.len().saturating_sub(1),
            playing: self.playing,
            speed: self.speed.label(),
            goto: goto.map(str::to_string),
            note: self.note.clone(),
            marks: self.marks.buckets(MARK_BUCKETS),
        }
    }
}

#[cfg(test)]
mod findings_tests;
#[cfg(test)]
mod tests;
