//! State of the profile view (6): the stacks of the last intervals and since the start,
//! the window shown, the zoomed and the selected frame, the search and the table mode.
//! Frames arrive through `push`; keys through `handle`. No I/O but `export`, which the
//! event loops call when `E` asked for it.

use std::collections::{HashMap, VecDeque};

use super::keymap::Action;
use super::profile_lines::ProfileLines;
use super::view::View;
use crate::model::Frame;
use crate::model::profile::flame::{self, Cell, Node};

/// Intervals in the "recent" window.
pub const RECENT: usize = 30;

#[derive(Debug, Default)]
pub struct ProfileView {
    /// Each recent interval's stacks (folded, with counts).
    recent: VecDeque<Vec<(String, u64)>>,
    /// Every stack since the view began collecting.
    since_start: HashMap<String, u64>,
    /// Seconds covered by `recent` and by `since_start`.
    recent_s: VecDeque<f64>,
    total_s: f64,
    /// Show everything since the start instead of the last RECENT intervals.
    pub all_time: bool,
    /// The stacks shown while the display is paused.
    frozen: Option<Vec<(String, u64)>>,
    /// Only this process's stacks (`F` on a process).
    pub pid: Option<u32>,
    /// The zoomed frame and the selected one, as paths from the root.
    pub zoom: Vec<String>,
    pub sel: Vec<String>,
    /// The search in force, and the one being typed.
    pub search: Option<String>,
    pub typing: Option<String>,
    /// The function table instead of the graph, and its selected row.
    pub table: bool,
    pub table_sel: usize,
    /// `E` was pressed: the event loop writes the shown stacks.
    pub export: bool,
    /// The last export's outcome, for the status line.
    pub message: Option<String>,
    /// Whether any frame carried a profile (else the view says how to get one).
    pub seen: bool,
    /// The grid the graph was last laid out on (columns, rows), for the arrow keys.
    pub grid: (u16, usize),
    /// Stacks weighted by time off the CPU (µs) rather than on-CPU samples: the kind
    /// asked for with `o`, or the kind a replay's frames carry. Frames of the other
    /// kind are not mixed in.
    pub off_cpu: bool,
    /// `o` chose the kind: frames no longer decide it.
    chosen: bool,
    /// Samples per second of the stacks shown (the pprof period), from the frames.
    hz: u64,
    /// The same windows with source lines, for `E`'s pprof file.
    lines: ProfileLines,
    /// Off-CPU: each recent interval's watched switch-outs and the ones kept with a
    /// stack (None: not known), and their sums since the start.
    recent_waits: VecDeque<Option<(u64, u64)>>,
    since_start_waits: Option<(u64, u64)>,
}

impl ProfileView {
    /// A new interval (every one, paused or not: the window keeps its seconds).
    pub fn push(&mut self, f: &Frame) {
        let Some(p) = &f.profile else {
            return;
        };
        if p.off_cpu != self.off_cpu {
            if !self.seen && !self.chosen {
                // The first stacks say which kind this run (or recording) has.
                self.off_cpu = p.off_cpu;
            } else {
                return; // the other kind, still in flight after `o`
            }
        }
        self.seen = true;
        self.hz = p.hz;
        if f.interval_s <= 0.0 {
            return; // the priming sample: its stacks span no known interval
        }
        let stacks: Vec<(String, u64)> = p.all.iter().map(|c| (c.stack.clone(), c.count)).collect();
        for (s, n) in &stacks {
            *self.since_start.entry(s.clone()).or_default() += n;
        }
        self.total_s += f.interval_s;
        if self.recent.len() == RECENT {
            self.recent.pop_front();
            self.recent_s.pop_front();
        }
        if self.recent_waits.len() == RECENT {
            self.recent_waits.pop_front();
        }
        let waits = p.off_waits.zip(p.off_waits_kept);
        self.recent_waits.push_back(waits);
        if let Some((w, k)) = waits {
            let (sw, sk) = self.since_start_waits.unwrap_or((0, 0));
            self.since_start_waits = Some((sw + w, sk + k));
        }
        self.recent.push_back(stacks);
        self.recent_s.push_back(f.interval_s);
        self.lines.push(&p.located, RECENT);
    }

    /// Show the other kind of stacks from now on: the windows start afresh.
    pub fn set_off_cpu(&mut self, on: bool) {
        self.off_cpu = on;
        self.chosen = true;
        self.recent.clear();
        self.recent_s.clear();
        self.since_start.clear();
        self.lines.clear();
        self.recent_waits.clear();
        self.since_start_waits = None;
        self.total_s = 0.0;
        self.zoom.clear();
        self.sel.clear();
        self.message = None;
        if self.frozen.is_some() {
            self.frozen = Some(Vec::new());
        }
    }

    /// What a count is: on-CPU samples, or microseconds off the CPU.
    pub fn amount(&self, n: u64) -> String {
        if self.off_cpu {
            if n >= 10_000_000 {
                format!("{:.0} s", n as f64 / 1e6)
            } else if n >= 1_000 {
                format!("{:.1} ms", n as f64 / 1e3)
            } else {
                format!("{n} µs")
            }
        } else {
            format!("{n} samples")
        }
    }

    /// Freeze (pause) or thaw what the view shows.
    pub fn freeze(&mut self, on: bool) {
        self.frozen = None;
        if on {
            self.frozen = Some(self.live_stacks());
        }
        self.lines.freeze(on, self.all_time);
    }

    fn live_stacks(&self) -> Vec<(String, u64)> {
        let mut m: HashMap<&str, u64> = HashMap::new();
        if self.all_time {
            for (s, n) in &self.since_start {
                *m.entry(s).or_default() += n;
            }
        } else {
            for iv in &self.recent {
                for (s, n) in iv {
                    *m.entry(s).or_default() += n;
                }
            }
        }
        let prefix = self.pid.map(|p| format!("-{p};"));
        let mut v: Vec<(String, u64)> = m
            .into_iter()
            .filter(|(s, _)| {
                prefix.as_ref().is_none_or(|p| {
                    s.split_once(';')
                        .is_some_and(|(head, _)| format!("{head};").ends_with(p.as_str()))
                })
            })
            .map(|(s, n)| (s.to_string(), n))
            .collect();
        v.sort();
        v
    }

    /// The stacks shown (window, process, pause applied), sorted.
    pub fn stacks(&self) -> Vec<(String, u64)> {
        match &self.frozen {
            Some(v) => v.clone(),
            None => self.live_stacks(),
        }
    }

    /// Off-CPU: the window's watched switch-outs and how many were kept with a stack
    /// (the others counted through the kept ones' weights); None when not known.
    pub fn waits_kept(&self) -> Option<(u64, u64)> {
        if self.all_time {
            return self.since_start_waits;
        }
        self.recent_waits
            .iter()
            .flatten()
            .fold(None, |acc, &(w, k)| {
                let (aw, ak) = acc.unwrap_or((0, 0));
                Some((aw + w, ak + k))
            })
    }

    /// Seconds the shown window covers.
    pub fn window_s(&self) -> f64 {
        if self.all_time {
            self.total_s
        } else {
            self.recent_s.iter().sum()
        }
    }

    pub fn tree(&self) -> Node {
        let st = self.stacks();
        flame::tree(st.iter().map(|(s, n)| (s.as_str(), *n)))
    }

    /// The graph's cells on the last grid.
    fn cells(&self, root: &Node) -> Vec<Cell> {
        let (w, h) = if self.grid.0 == 0 {
            (1000, 200)
        } else {
            self.grid
        };
        flame::layout(root, &self.zoom, w, h)
    }

    /// Keys of the profile view; true when the key was this view's.
    pub fn handle(&mut self, view: View, a: Action) -> bool {
        if view != View::Profile {
            return false;
        }
        match a {
            Action::ProfileTable => {
                self.table = !self.table;
                self.table_sel = 0;
            }
            Action::ProfileWindow => self.all_time = !self.all_time,
            Action::ProfileSearch => self.typing = Some(self.search.clone().unwrap_or_default()),
            Action::ProfileExport => self.export = true,
            Action::Open if !self.table => {
                if !self.sel.is_empty() {
                    self.zoom = self.sel.clone();
                }
            }
            Action::Back => {
                if self.search.is_some() {
                    self.search = None;
                } else if !self.zoom.is_empty() {
                    self.zoom.pop();
                } else {
                    self.pid = None;
                }
                // The selection stays where it was: it is inside the wider view too.
                if !self.sel.starts_with(&self.zoom) {
                    self.sel = self.zoom.clone();
                }
            }
            Action::Up | Action::Down | Action::Left | Action::Right if !self.table => self.step(a),
            Action::Up => self.table_sel = self.table_sel.saturating_sub(1),
            Action::Down => self.table_sel += 1,
            Action::PageUp => self.table_sel = self.table_sel.saturating_sub(super::keymap::PAGE),
            Action::PageDown => self.table_sel += super::keymap::PAGE,
            Action::Home => self.table_sel = 0,
            _ => return false,
        }
        true
    }

    /// Move the selection on the graph: up into the widest child (the root is at the
    /// bottom), down to the parent, left/right to the neighbouring frame of that row.
    fn step(&mut self, a: Action) {
        let root = self.tree();
        let cells = self.cells(&root);
        let Some(cur) = cells
            .iter()
            .find(|c| c.path == self.sel)
            .or_else(|| cells.first())
        else {
            return;
        };
        let next = match a {
            Action::Up => cells
                .iter()
                .filter(|c| c.depth == cur.depth + 1 && c.path.starts_with(&cur.path))
                .max_by_key(|c| (c.total, std::cmp::Reverse(c.x))),
            Action::Down => cells
                .iter()
                .find(|c| c.depth + 1 == cur.depth && cur.path.starts_with(&c.path)),
            Action::Left => cells
                .iter()
                .filter(|c| c.depth == cur.depth && c.x < cur.x)
                .max_by_key(|c| c.x),
            _ => cells
                .iter()
                .filter(|c| c.depth == cur.depth && c.x > cur.x)
                .min_by_key(|c| c.x),
        };
        self.sel = next.unwrap_or(cur).path.clone();
    }

    /// Keys while the search prompt is open; Enter applies it, Esc cancels.
    pub fn search_key(&mut self, k: &crossterm::event::KeyEvent) {
        if let Some(text) = super::prompt_edit::edit_prompt(&mut self.typing, k) {
            let t = text.trim().to_string();
            self.search = (!t.is_empty()).then_some(t);
            self.table_sel = 0;
        }
    }

    /// The search being typed, else the one in force.
    pub fn needle(&self) -> Option<&str> {
        self.typing
            .as_deref()
            .or(self.search.as_deref())
            .filter(|t| !t.is_empty())
    }

    /// The stacks `E` writes: what the view shows. The graph zoomed into a frame shows
    /// the stacks through it (whole, from the root, so the file draws that subtree with
    /// its callers as the graph does); the table shows every stack.
    pub fn shown_stacks(&self) -> Vec<(String, u64)> {
        let mut v = self.stacks();
        if !self.table && !self.zoom.is_empty() {
            v.retain(|(s, _)| {
                let mut frames = s.split(';').filter(|f| !f.is_empty());
                self.zoom.iter().all(|z| frames.next() == Some(z.as_str()))
            });
        }
        v
    }

    /// Write the shown stacks, folded, to `ttop-<UTC time>.folded` in the current
    /// directory, and the same stacks as a pprof profile beside it (`.pb`, for `go tool
    /// pprof`, Pyroscope, Parca); the outcome goes to the status line.
    pub fn export_now(&mut self, wall_s: f64) {
        self.export_to(std::path::Path::new(""), wall_s);
    }

    /// `export_now` into `dir`.
    pub fn export_to(&mut self, dir: &std::path::Path, wall_s: f64) {
        self.export = false;
        let name = crate::record::rotate::free_name(dir, (wall_s * 1e9) as u64, "folded");
        let shown = self.shown_stacks();
        let mut text = String::new();
        for (s, n) in &shown {
            text.push_str(&format!("{s} {n}\n"));
        }
        let what = match self.zoom.last() {
            Some(z) if !self.table => format!(" (the stacks through {z})"),
            _ => String::new(),
        };
        // With each frame's file and line where the Samples kept them.
        let located = self.lines.located(&shown, self.all_time);
        let pb = name.with_extension("pb");
        let kind = crate::model::profile::pprof::Kind {
            off_cpu: self.off_cpu,
            hz: self.hz.max(1),
            start_unix_ns: 0,
            duration_ns: 0,
        };
        let written = std::fs::write(&name, text).and_then(|()| {
            std::fs::write(
                &pb,
                crate::model::profile::pprof::encode_stacks(&located, &kind),
            )
        });
        let shown = name.display().to_string();
        self.message = Some(match written {
            Ok(()) => format!("exported to {shown} and {} (pprof){what}", pb.display()),
            Err(e) => format!("export failed: {shown}: {e}"),
        });
    }
}
