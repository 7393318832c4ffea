//! App: everything the UI thread owns. Frames come in, Actions change it, the renderer
//! reads it. No I/O here.

use std::collections::VecDeque;

use super::keymap::Action;
use super::sort::{ProcSort, sorted_procs};
use crate::model::Frame;

/// The screens reachable with Tab. Other views are added here, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Main,
}

impl View {
    pub const ALL: &'static [View] = &[View::Main];

    pub fn title(self) -> &'static str {
        match self {
            View::Main => "Overview",
        }
    }
}

/// One point of the runnable history graph.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HistPoint {
    pub true_avg: Option<f64>,
    pub scan_running: f64,
}

/// How many intervals of history the graph keeps.
pub const HISTORY: usize = 600;
/// Rows moved by PgUp/PgDn.
pub const PAGE: usize = 10;

pub struct App {
    /// The frame on screen (None until the first sample arrives).
    pub frame: Option<Frame>,
    /// The newest frame, kept while the display is paused.
    pub latest: Option<Frame>,
    pub history: VecDeque<HistPoint>,
    pub view: View,
    pub paused: bool,
    pub show_help: bool,
    pub proc_sort: ProcSort,
    pub proc_reverse: bool,
    /// Selected row, by PID so it stays on its process while rows re-sort.
    pub selected_pid: Option<u32>,
    /// Whether to use colour (false: NO_COLOR / --color never).
    pub color: bool,
    /// What the header says the source is ("live", "replay ...").
    pub source: String,
    pub quit: bool,
}

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl App {
    pub fn new() -> Self {
        Self {
            frame: None,
            latest: None,
            history: VecDeque::with_capacity(HISTORY),
            view: View::Main,
            paused: false,
            show_help: false,
            proc_sort: ProcSort::CpuTrue,
            proc_reverse: false,
            selected_pid: None,
            color: true,
            source: "live".to_string(),
            quit: false,
        }
    }

    /// A new interval. History always advances; the display only when not paused.
    pub fn push_frame(&mut self, f: Frame) {
        if f.interval_s > 0.0 {
            if self.history.len() == HISTORY {
                self.history.pop_front();
            }
            self.history.push_back(HistPoint {
                true_avg: f.runnable.true_avg,
                scan_running: f64::from(f.runnable.scan_running),
            });
        }
        if self.frame.is_none() && f.runnable.true_avg.is_none() {
            // procfs-only: the scan's CPU% is the best sort key there is.
            self.proc_sort = ProcSort::CpuScan;
        }
        if self.paused && self.frame.is_some() {
            self.latest = Some(f);
        } else {
            self.frame = Some(f);
        }
    }

    /// PIDs of the process table in display order.
    fn rows(&self) -> Vec<u32> {
        self.frame
            .as_ref()
            .map(|f| {
                sorted_procs(f, self.proc_sort, self.proc_reverse)
                    .iter()
                    .map(|p| p.pid)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Index of the selected row in display order.
    pub fn selected_index(&self, rows: &[u32]) -> usize {
        self.selected_pid
            .and_then(|p| rows.iter().position(|&r| r == p))
            .unwrap_or(0)
    }

    fn move_selection(&mut self, to: impl Fn(usize, usize) -> usize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let i = to(self.selected_index(&rows), rows.len()).min(rows.len() - 1);
        self.selected_pid = Some(rows[i]);
    }

    pub fn handle(&mut self, a: Action) {
        if self.show_help && !matches!(a, Action::Quit) {
            // Any key closes the help screen.
            self.show_help = false;
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::TogglePause => {
                self.paused = !self.paused;
                if !self.paused
                    && let Some(f) = self.latest.take()
                {
                    self.frame = Some(f);
                }
            }
            Action::Up => self.move_selection(|i, _| i.saturating_sub(1)),
            Action::Down => self.move_selection(|i, _| i + 1),
            Action::PageUp => self.move_selection(|i, _| i.saturating_sub(PAGE)),
            Action::PageDown => self.move_selection(|i, _| i + PAGE),
            Action::Home => self.move_selection(|_, _| 0),
            Action::End => self.move_selection(|_, n| n - 1),
            Action::SortNext => self.proc_sort = self.proc_sort.next(),
            Action::SortReverse => self.proc_reverse = !self.proc_reverse,
            Action::Help => self.show_help = true,
            Action::NextView => self.view = cycle(self.view, 1),
            Action::PrevView => self.view = cycle(self.view, View::ALL.len() - 1),
            Action::Back => {}
        }
    }
}

fn cycle(v: View, step: usize) -> View {
    let i = View::ALL.iter().position(|x| *x == v).unwrap_or(0);
    View::ALL[(i + step) % View::ALL.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::frame::ProcFrame;

    fn frame(pids: &[(u32, f64)]) -> Frame {
        Frame {
            interval_s: 1.0,
            procs: pids
                .iter()
                .map(|&(pid, cpu)| ProcFrame {
                    pid,
                    cpu_pct_true: Some(cpu),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn selection_follows_the_process_when_rows_resort() {
        let mut app = App::new();
        app.push_frame(frame(&[(1, 50.0), (2, 10.0), (3, 5.0)]));
        app.handle(Action::Down);
        assert_eq!(app.selected_pid, Some(2));
        app.push_frame(frame(&[(1, 1.0), (2, 90.0), (3, 5.0)]));
        assert_eq!(app.selected_index(&app.rows()), 0);
        app.handle(Action::End);
        assert_eq!(app.selected_pid, Some(1));
        app.handle(Action::PageUp);
        assert_eq!(app.selected_pid, Some(2));
    }

    #[test]
    fn pause_freezes_the_display_but_not_history() {
        let mut app = App::new();
        app.push_frame(frame(&[(1, 1.0)]));
        app.handle(Action::TogglePause);
        app.push_frame(frame(&[(9, 1.0)]));
        assert_eq!(app.frame.as_ref().unwrap().procs[0].pid, 1);
        assert_eq!(app.history.len(), 2);
        app.handle(Action::TogglePause);
        assert_eq!(app.frame.as_ref().unwrap().procs[0].pid, 9);
    }

    #[test]
    fn help_closes_on_any_key_and_sort_cycles() {
        let mut app = App::new();
        app.handle(Action::Help);
        assert!(app.show_help);
        app.handle(Action::SortNext);
        assert!(!app.show_help);
        assert_eq!(app.proc_sort, ProcSort::CpuTrue);
        app.handle(Action::SortNext);
        assert_eq!(app.proc_sort, ProcSort::CpuScan);
    }
}
