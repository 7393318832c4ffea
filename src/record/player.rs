//! Playback over a recording: a position, play/pause, speed, steps, jumps and "go to",
//! producing the Frame for the position with the same `derive` as live. The dashboard
//! drives it; `ReplayBar` is what the time bar shows (plain data, no I/O).

use std::time::Duration;

use super::marks::Marks;
use super::series::Series;
use crate::model::findings::{WINDOW, Window};
use crate::model::{Frame, Sample, derive};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    X1,
    X2,
    X10,
    /// As fast as frames can be derived and drawn.
    Max,
}

impl Speed {
    const ALL: [Speed; 4] = [Speed::X1, Speed::X2, Speed::X10, Speed::Max];

    pub fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1x",
            Speed::X2 => "2x",
            Speed::X10 => "10x",
            Speed::Max => "max",
        }
    }

    fn factor(self) -> Option<f64> {
        match self {
            Speed::X1 => Some(1.0),
            Speed::X2 => Some(2.0),
            Speed::X10 => Some(10.0),
            Speed::Max => None,
        }
    }

    pub fn faster(self) -> Speed {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[(i + 1).min(Self::ALL.len() - 1)]
    }

    pub fn slower(self) -> Speed {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[i.saturating_sub(1)]
    }
}

/// What the time bar shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayBar {
    pub file: String,
    /// Wall clock (ns since the epoch) of the first Sample, the one shown, and the last.
    pub start_ns: u64,
    pub at_ns: u64,
    pub end_ns: u64,
    /// Frame number shown (1-based) and how many frames there are.
    pub frame: usize,
    pub frames: usize,
    pub playing: bool,
    pub speed: &'static str,
    /// The "go to" prompt while it is open.
    pub goto: Option<String>,
    /// The last problem (a damaged frame skipped, a bad "go to").
    pub note: Option<String>,
    /// Where findings were active: [`MARK_BUCKETS`] equal stretches of the recording,
    /// each a `marks` level (0 not judged yet, 1 none, 2 info, 3 warn, 4 critical).
    pub marks: Vec<u8>,
}

/// Stretches of the recording the time bar's marks are kept in (the bar is at most 60
/// cells wide; each cell takes the most severe of its stretches).
pub const MARK_BUCKETS: usize = 240;

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
        let t = text.trim();
        let target = if let Some(at) = parse_date_time(t) {
            at
        } else if t.contains(':') {
            let secs = parse_clock(t).ok_or_else(|| {
                format!("'{t}' is not a time (hh:mm[:ss], YYYY-MM-DD hh:mm[:ss])")
            })?;
            let start = self.wall(0);
            let day = start / 86_400_000_000_000 * 86_400_000_000_000;
            let mut at = day + secs * 1_000_000_000;
            if at + 43_200_000_000_000 < start {
                at += 86_400_000_000_000; // past midnight in a recording that spans it
            }
            at
        } else {
            let (sign, rest) = match t.as_bytes().first() {
                Some(b'+') => (1.0, &t[1..]),
                Some(b'-') => (-1.0, &t[1..]),
                _ => (0.0, t),
            };
            let d = crate::cli::parse_duration(rest).or_else(|e| {
                if rest.trim() == "0" {
                    Ok(Duration::ZERO)
                } else {
                    Err(e)
                }
            })?;
            let base = if sign == 0.0 {
                self.wall(0)
            } else {
                self.wall(self.pos)
            };
            let sign = if sign == 0.0 { 1.0 } else { sign };
            (base as f64 + sign * d.as_secs_f64() * 1e9).max(0.0) as u64
        };
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

/// "YYYY-MM-DD hh:mm[:ss]" (or with a T) in UTC, as ns since the epoch.
fn parse_date_time(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (
        t[..4].parse().ok()?,
        t[5..7].parse().ok()?,
        t[8..10].parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = super::rotate::days_from_civil(y, m, d);
    let secs = u64::try_from(days).ok()? * 86_400 + parse_clock(t[11..].trim())?;
    Some(secs * 1_000_000_000)
}

/// Seconds since midnight of "hh:mm" or "hh:mm:ss".
fn parse_clock(t: &str) -> Option<u64> {
    let parts: Vec<u64> = t
        .split(':')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match parts[..] {
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return None,
    };
    (h < 24 && m < 60 && s < 60).then_some(h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{synthetic, system};
    use crate::record::writer::header_for;
    use crate::record::{Reader, Writer};

    const SEC: u64 = 1_000_000_000;

    /// 200 Samples one second apart, starting 2026-11-18 10:00:00 UTC.
    fn player(name: &str) -> (Player, std::path::PathBuf) {
        let p = std::env::temp_dir().join(format!("ttop-player-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut w =
            Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
        let t0 = 1_795_000_000 * SEC / (86_400 * SEC) * 86_400 * SEC + 10 * 3600 * SEC;
        for i in 0..200 {
            let mut s = synthetic(2, 2, 10 + i);
            s.seq = i;
            s.wall_ns = t0 + i * SEC;
            s.mono_ns = 1000 * SEC + i * SEC;
            w.append(&s).unwrap();
        }
        w.finish().unwrap();
        (Player::new(Reader::open(&p).unwrap()), p)
    }

    #[test]
    fn steps_jumps_and_goto() {
        let (mut pl, p) = player("nav");
        assert_eq!(pl.position(), 1);
        assert_eq!(pl.frame().unwrap().seq, 1);
        pl.step(-5);
        assert_eq!(pl.position(), 1, "cannot go before the first frame");
        pl.jump(10.0);
        assert_eq!(pl.position(), 11);
        pl.jump(60.0);
        assert_eq!(pl.position(), 71);
        pl.jump(-10.0);
        assert_eq!(pl.position(), 61);
        pl.step(1);
        assert_eq!(pl.frame().unwrap().seq, 62);
        pl.goto("10:02:00").unwrap();
        assert_eq!(pl.position(), 120);
        pl.goto("-30s").unwrap();
        assert_eq!(pl.position(), 90);
        pl.goto("+1m").unwrap();
        assert_eq!(pl.position(), 150);
        pl.goto("5").unwrap();
        assert_eq!(pl.position(), 5);
        pl.goto("2h").unwrap();
        assert_eq!(pl.position(), 199, "past the end: the last frame");
        assert!(pl.goto("25:00").is_err());
        assert!(pl.goto("soon").is_err());
        let bar = pl.bar(None);
        assert_eq!((bar.frame, bar.frames), (199, 199));
        let _ = std::fs::remove_file(&p);
    }

    /// Samples a little late, or early, each interval: "go to 5 s from the start" is
    /// the one taken about 5 s in, and the bar says +0:05 (issue 34, defect 13: it
    /// landed on the one before, +0:04).
    #[test]
    fn goto_lands_on_the_nearest_sample() {
        for (name, drift_ns) in [("late", 1_700_000i64), ("early", -900_000)] {
            let p = std::env::temp_dir()
                .join(format!("ttop-player-near-{name}-{}", std::process::id()));
            let _ = std::fs::remove_file(&p);
            let mut w =
                Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
            let t0 = 1_795_000_000 * SEC;
            for i in 0..20u64 {
                let mut s = synthetic(2, 2, 10 + i);
                s.seq = i;
                s.wall_ns = (t0 + i * SEC).saturating_add_signed(drift_ns * i as i64);
                w.append(&s).unwrap();
            }
            w.finish().unwrap();
            let mut pl = Player::new(Reader::open(&p).unwrap());
            pl.goto("5").unwrap();
            assert_eq!(pl.position(), 5, "{name}");
            pl.goto("+3s").unwrap();
            assert_eq!(pl.position(), 8, "{name}");
            let bar = pl.bar(None);
            assert_eq!(
                ((bar.at_ns - bar.start_ns) as f64 / 1e9).round(),
                8.0,
                "{name}"
            );
            let _ = std::fs::remove_file(&p);
        }
    }

    #[test]
    fn frames_equal_what_derive_gives_in_order() {
        let (mut pl, p) = player("frames");
        let sys = pl.series().header().system.clone();
        let mut r = Reader::open(&p).unwrap();
        pl.seek(150);
        let mut f = pl.frame().unwrap();
        let want = derive(&sys, Some(&r.sample(149).unwrap()), &r.sample(150).unwrap());
        // The findings are the window's (see findings_tests); the rest is derive's.
        assert!(!f.findings.is_empty());
        f.findings.clear();
        assert_eq!(f, want);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn playing_paces_frames_by_recorded_time() {
        let (mut pl, p) = player("pace");
        assert_eq!(pl.frame_time(), None, "starts paused");
        pl.playing = true;
        assert_eq!(pl.frame_time(), Some(Duration::from_secs(1)));
        pl.speed = pl.speed.faster();
        assert_eq!(pl.frame_time(), Some(Duration::from_millis(500)));
        pl.speed = Speed::Max;
        assert_eq!(pl.speed.faster(), Speed::Max);
        assert_eq!(pl.frame_time(), Some(Duration::ZERO));
        pl.seek(199);
        assert!(!pl.advance());
        assert!(!pl.playing, "stops at the end");
        let _ = std::fs::remove_file(&p);
    }

    /// A directory of two rotated files plays as one recording: positions, the frame
    /// at the boundary (derived from the last Sample of the first file) and `g` to a
    /// clock time in the second file.
    #[test]
    fn a_directory_plays_across_files_and_goto_reaches_the_second() {
        use crate::record::{Series, rotate};
        let dir = std::env::temp_dir().join(format!("ttop-player-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let t0 = 1_795_000_000 * SEC / (86_400 * SEC) * 86_400 * SEC + 10 * 3600 * SEC;
        let mut all = Vec::new();
        for part in 0..2u64 {
            let start = t0 + part * 100 * SEC;
            let p = dir.join(rotate::file_name(start));
            let mut w =
                Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
            for j in 0..100 {
                let i = part * 100 + j;
                let mut s = synthetic(2, 2, 10 + i);
                s.seq = i;
                s.wall_ns = t0 + i * SEC;
                s.mono_ns = 1000 * SEC + i * SEC;
                w.append(&s).unwrap();
                all.push(s);
            }
            w.finish().unwrap();
        }
        let mut pl = Player::new(Series::open(&dir).unwrap());
        assert_eq!(pl.len(), 200);
        pl.seek(100);
        let sys = pl.series().header().system.clone();
        let mut f = pl.frame().unwrap();
        f.findings.clear(); // the window's, see findings_tests
        assert_eq!(f, derive(&sys, Some(&all[99]), &all[100]));
        pl.goto("10:02:30").unwrap();
        assert_eq!(pl.position(), 150);
        assert_eq!(pl.frame().unwrap().seq, 150);
        let day = t0 / SEC / 86_400;
        let (y, m, d) = {
            let name = rotate::file_name(t0);
            (
                name[5..9].to_string(),
                name[9..11].to_string(),
                name[11..13].to_string(),
            )
        };
        assert_eq!(day * 86_400 * SEC + 10 * 3600 * SEC, t0);
        pl.goto(&format!("{y}-{m}-{d} 10:01:45")).unwrap();
        assert_eq!(pl.position(), 105);
        pl.goto(&format!("{y}-{m}-{d}T10:00:10")).unwrap();
        assert_eq!(pl.position(), 10);
        assert!(pl.goto(&format!("{y}-13-{d} 10:00")).is_err());
        pl.goto("10:02:30").unwrap();
        pl.jump(-60.0);
        assert_eq!(pl.position(), 90, "back across the boundary");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod findings_tests {
    use super::*;
    use crate::model::findings::Window;
    use crate::model::fixtures::{incident, synthetic, system};
    use crate::record::Reader;
    use crate::record::Writer;
    use crate::record::writer::header_for;

    /// A quiet stretch, an incident (saturation, churn, ...) for 12 intervals, quiet again.
    fn recording(name: &str) -> (Vec<Sample>, std::path::PathBuf) {
        let p = std::env::temp_dir().join(format!(
            "ttop-player-findings-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&p);
        let mut w =
            Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
        let mut all = Vec::new();
        for i in 0..40u64 {
            let mut s = if (10..22).contains(&i) {
                incident(i, true)
            } else {
                // Without eBPF: nothing is guessed, so nothing shows.
                let mut s = synthetic(2, 2, 10 + i);
                s.bpf = None;
                s
            };
            s.seq = i;
            w.append(&s).unwrap();
            all.push(s);
        }
        w.finish().unwrap();
        (all, p)
    }

    /// Replay shows the findings live showed, at the same frames, however it got there.
    #[test]
    fn findings_come_back_at_the_same_frames_after_seeks() {
        let (samples, p) = recording("seeks");
        let sys = system();
        let mut w = Window::new();
        let want: Vec<_> = (1..samples.len())
            .map(|i| {
                let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
                w.push(&mut f);
                f.findings
            })
            .collect();
        let first = want.iter().position(|f| !f.is_empty()).unwrap();
        assert!(
            first > 10,
            "the incident's findings hold first: {first} {:?}",
            want[first]
                .iter()
                .map(|f| (f.kind, &f.summary))
                .collect::<Vec<_>>()
        );
        assert!(want.last().unwrap().is_empty(), "and end");
        let mut pl = Player::new(Reader::open(&p).unwrap());
        for pos in [1, 2, 3, 14, 15, 16, 30, 12, 25, 26, 24, 39, 13] {
            pl.seek(pos);
            let got = pl.frame().unwrap().findings;
            assert_eq!(got, want[pos - 1], "position {pos}");
        }
        let _ = std::fs::remove_file(&p);
    }

    /// n / N land where a finding starts showing: forward from the start, back from the end.
    #[test]
    fn next_and_previous_finding() {
        let (samples, p) = recording("next");
        let sys = system();
        let mut w = Window::new();
        let mut prev: Vec<(&str, u64)> = Vec::new();
        let mut onsets = Vec::new();
        for i in 1..samples.len() {
            let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
            w.push(&mut f);
            let act: Vec<_> = f
                .findings
                .iter()
                .filter(|f| f.active)
                .map(|f| (f.kind, f.key))
                .collect();
            if act.iter().any(|k| !prev.contains(k)) {
                onsets.push(i);
            }
            prev = act;
        }
        assert!(!onsets.is_empty());
        let mut pl = Player::new(Reader::open(&p).unwrap());
        assert!(pl.seek_finding(true));
        assert_eq!(pl.position(), onsets[0]);
        assert!(!pl.seek_finding(false), "nothing starts before the first");
        assert_eq!(pl.position(), onsets[0]);
        pl.seek(39);
        assert!(pl.seek_finding(false));
        assert_eq!(pl.position(), *onsets.last().unwrap());
        pl.seek(39);
        assert!(!pl.seek_finding(true), "nothing after the end");
        assert!(pl.note.is_some());
        let _ = std::fs::remove_file(&p);
    }

    /// The time bar's marks, judged in the background a few frames at a time, are where
    /// the frames had an active finding, each with its most severe level.
    #[test]
    fn marks_are_where_findings_were_active() {
        use crate::record::marks::{NONE, UNKNOWN, level};
        let (samples, p) = recording("marks");
        let sys = system();
        let mut w = Window::new();
        let mut want = vec![NONE];
        for i in 1..samples.len() {
            let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
            w.push(&mut f);
            let top = f
                .findings
                .iter()
                .filter(|f| f.active)
                .map(|f| level(f.severity))
                .max();
            want.push(top.unwrap_or(NONE));
        }
        assert!(want.iter().any(|&m| m > NONE) && want.contains(&NONE));
        let mut pl = Player::new(Reader::open(&p).unwrap());
        assert!(pl.bar(None).marks.iter().all(|&m| m == UNKNOWN));
        // Playing and seeking meanwhile changes nothing in the marks.
        let mut rounds = 0;
        while !pl.marks_done() {
            pl.mark_more(7);
            pl.seek((rounds * 13) % samples.len());
            let _ = pl.frame();
            rounds += 1;
        }
        assert_eq!(rounds, samples.len().div_ceil(7));
        let got: Vec<u8> = (0..samples.len()).map(|i| pl.mark(i)).collect();
        assert_eq!(got, want);
        // Bucketed for the bar: 40 positions over 240 stretches, each its position's.
        let b = pl.bar(None).marks;
        assert_eq!(b.len(), MARK_BUCKETS);
        assert_eq!(b[6 * 20], want[20]);
        let _ = std::fs::remove_file(&p);
    }
}
