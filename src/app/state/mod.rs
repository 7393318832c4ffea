//! App: everything the UI thread owns. Frames come in, Actions change it, the renderer
//! reads it. No I/O here.

use std::collections::{BTreeMap, VecDeque};

use super::contention_view::ContentionView;
use super::sort::ProcSort;
pub use super::view::View;
use crate::collect::Request;
use crate::model::Frame;
use crate::model::frame::ProcFrame;

mod act_menu;
mod actions;
mod mouse;
mod prompt;
mod table;

pub use table::matches_text;

/// One point of the runnable history graph.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HistPoint {
    pub true_avg: Option<f64>,
    pub scan_running: f64,
}

/// How many intervals of history the graph keeps.
pub const HISTORY: usize = 600;

pub struct App {
    /// The frame on screen (None until the first sample arrives).
    pub frame: Option<Frame>,
    /// The newest frame, kept while the display is paused.
    pub latest: Option<Frame>,
    pub history: VecDeque<HistPoint>,
    pub view: View,
    pub paused: bool,
    pub show_help: bool,
    /// The help screen's page (when it takes more than one on this screen).
    pub help_page: usize,
    /// The findings screen (f) is open, scrolled down this many rows.
    pub show_findings: bool,
    pub findings_scroll: u16,
    /// The terminal's size (columns, rows) at the last key: what the help's pages are.
    pub screen: (u16, u16),
    /// Where the last render drew the table the mouse acts on (the process table, the
    /// futex or kernel-lock table, the cgroup tree; None: none on screen): what a click
    /// hits, and for the process table the row the next render starts from (it scrolls
    /// only as far as the selection needs). The render hands it back and the event loop
    /// keeps it.
    pub proc_table: Option<super::mouse::TableGeom>,
    pub proc_sort: ProcSort,
    pub proc_reverse: bool,
    /// Selected row, by PID so it stays on its process while rows re-sort.
    pub selected_pid: Option<u32>,
    /// Whether to use colour (false: NO_COLOR / --color never).
    pub color: bool,
    /// What the header says the source is ("live", "replay ...").
    pub source: String,
    pub quit: bool,
    /// The filter being typed (Some while the prompt is open). Rows narrow as it grows.
    pub prompt: Option<String>,
    /// The filter in force, as typed.
    pub filter_text: Option<String>,
    /// Requests for the collector thread, drained by the event loop.
    pub requests: Vec<Request>,
    /// The process whose threads are shown (Enter), None for the process table.
    pub thread_pid: Option<u32>,
    /// Sort state of the futex and kernel-lock views.
    pub contention: ContentionView,
    /// Sort state of the IPI/TLB and latency views.
    pub irq: super::irq_view::IrqView,
    pub cgroups: super::cgroup_view::CgroupView,
    /// With a filter: watched processes that exited, when (wall clock s) and their last
    /// figures, so an exit reads as an exit and not as an empty screen.
    pub exited: BTreeMap<u32, (f64, ProcFrame)>,
    /// Rows of processes that exited are left out of the process table (x).
    pub hide_exited: bool,
    /// What to know about the command line (a --comm the kernel cuts, or that no process
    /// has): shown in the banner under the frame's own problems.
    pub notes: Vec<String>,
    /// Replaying a recording: what the time bar shows (None when live).
    pub replay: Option<super::player::ReplayBar>,
    /// The record key was pressed (the live loop starts or stops the recorder).
    pub toggle_record: bool,
    /// Ctrl-Z was pressed: the event loop suspends ttop (see `screen::suspend`).
    pub suspend: bool,
    /// What the recorder writes, for the header ("● REC file 1.2 MB"); None: not recording.
    pub recording: Option<String>,
    /// The finding the evidence key opens next (an index into the frame's findings).
    pub finding_sel: usize,
    /// The profile view's stacks and state.
    pub profile: super::profile_view::ProfileView,
    /// Stack sampling was asked of the collector (once, when the profile view opens).
    pub profile_asked: bool,
    /// Every futex call is asked to be hooked (the futex view is open, live).
    pub futex_calls_asked: bool,
    /// The IPI call/call-single split is asked to be counted (the IPI view is open, live).
    pub ipi_split_asked: bool,
    /// Acting on a process (F9 signal, F7/F8 nice, a affinity): the open prompt.
    pub act: Option<super::act::ActMenu>,
    /// Confirmed acts, performed by the live loop (`act_exec::perform`).
    pub act_requests: Vec<super::act::ActRequest>,
    /// What the last act did or why not, shown in the footer until the next key.
    pub act_result: Option<String>,
    /// The process table as a tree (t, F5).
    pub tree: bool,
    /// Kernel threads are left out of the process table (K).
    pub hide_kernel: bool,
    /// The tree shows each process's threads under it (H; htop shows them unless its H
    /// hides them, ttop the other way round).
    pub show_threads: bool,
    /// Process table columns turned off in the column chooser (c), and its cursor when open.
    pub hidden_cols: Vec<crate::model::procs::fields::ProcField>,
    pub col_chooser: Option<usize>,
    /// The sort was picked for the user (SCAN% without eBPF), not by them.
    pub sort_by_default: bool,
    /// The user changed what the settings file holds (view, sort, tree, hidden rows).
    pub settings_touched: bool,
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
            help_page: 0,
            show_findings: false,
            findings_scroll: 0,
            screen: (80, 24),
            proc_table: None,
            proc_sort: ProcSort::CpuTrue,
            proc_reverse: false,
            selected_pid: None,
            color: true,
            source: "live".to_string(),
            quit: false,
            prompt: None,
            filter_text: None,
            requests: Vec::new(),
            thread_pid: None,
            contention: ContentionView::default(),
            irq: Default::default(),
            cgroups: Default::default(),
            exited: BTreeMap::new(),
            notes: Vec::new(),
            hide_exited: false,
            replay: None,
            toggle_record: false,
            suspend: false,
            recording: None,
            finding_sel: 0,
            profile: Default::default(),
            profile_asked: false,
            futex_calls_asked: false,
            ipi_split_asked: false,
            act: None,
            act_requests: Vec::new(),
            act_result: None,
            tree: false,
            hide_kernel: false,
            show_threads: false,
            hidden_cols: Vec::new(),
            col_chooser: None,
            sort_by_default: false,
            settings_touched: false,
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
        if self.frame.is_none()
            && f.runnable.true_avg.is_none()
            && self.proc_sort == ProcSort::CpuTrue
        {
            // procfs-only: the scan's CPU% is the best sort key there is (not a choice
            // of the user's: the settings file does not learn it).
            self.proc_sort = ProcSort::CpuScan;
            self.sort_by_default = true;
        }
        if f.filter.is_some() {
            self.remember_exits(&f);
        }
        self.profile.push(&f);
        if self.paused && self.frame.is_some() {
            self.latest = Some(f);
        } else {
            self.frame = Some(f);
        }
    }

    /// Watched processes that exited: remember each with its last live row (its last
    /// measured figures) and when it went. Only a frame watching what `f` watches is
    /// compared with `f`: when the filter changed, the rows it dropped were not watched
    /// any more, they did not exit.
    fn remember_exits(&mut self, f: &Frame) {
        let Some(old) = self.newest().filter(|o| o.filter == f.filter) else {
            return;
        };
        let now: foldhash::HashSet<u32> =
            f.procs.iter().filter(|p| !p.gone).map(|p| p.pid).collect();
        let mut went: Vec<(u32, ProcFrame)> = old
            .procs
            .iter()
            .filter(|p| !p.gone && !now.contains(&p.pid))
            .map(|p| (p.pid, p.clone()))
            .collect();
        // Gone during the interval: eBPF's row has only that interval's kernel figures
        // (none of the scan's); its last live row, when there was one, is what it did.
        for p in f.procs.iter().filter(|p| p.gone) {
            if !went.iter().any(|(pid, _)| *pid == p.pid) {
                went.push((p.pid, p.clone()));
            }
        }
        for (pid, row) in went {
            self.exited.entry(pid).or_insert((f.t, row));
        }
    }

    /// The newest frame received (the one on screen, or the one held while paused).
    fn newest(&self) -> Option<&Frame> {
        self.latest.as_ref().or(self.frame.as_ref())
    }
}

#[cfg(test)]
mod tests;
