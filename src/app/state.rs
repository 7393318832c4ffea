//! App: everything the UI thread owns. Frames come in, Actions change it, the renderer
//! reads it. No I/O here.

use std::collections::{BTreeMap, VecDeque};

use crossterm::event::KeyEvent;

use super::contention_view::ContentionView;
pub use super::filter_prompt::{edit_prompt, matches_text};
use super::keymap::Action;
use super::sort::{ProcSort, ProcWindow, proc_window, sorted_procs};
pub use super::view::View;
use crate::collect::Request;
use crate::model::Frame;
use crate::model::frame::ProcFrame;

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
    /// The help screen's page (when it takes more than one on this screen).
    pub help_page: usize,
    /// The findings screen (f) is open, scrolled down this many rows.
    pub show_findings: bool,
    pub findings_scroll: u16,
    /// The terminal's size (columns, rows) at the last key: what the help's pages are.
    pub screen: (u16, u16),
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
    /// Process table columns turned off in the column chooser (c), and its cursor when open.
    pub hidden_cols: Vec<super::proc_fields::ProcField>,
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
            act: None,
            act_requests: Vec::new(),
            act_result: None,
            tree: false,
            hide_kernel: false,
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

    /// Open the view showing the evidence of the marked finding, and mark the next.
    fn open_evidence(&mut self) {
        let Some(fr) = self.frame.as_ref() else {
            return;
        };
        let n = fr.findings.len();
        if n == 0 {
            return;
        }
        let f = &fr.findings[self.finding_sel % n];
        self.view = View::from(f.view);
        if self.view == View::Main
            && let Some(&pid) = f.pids.first()
        {
            self.thread_pid = None;
            self.selected_pid = Some(pid);
        }
        self.finding_sel = (self.finding_sel + 1) % n;
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

    /// The text rows are narrowed by (the prompt while typing, else the filter in force).
    pub fn narrow_text(&self) -> Option<&str> {
        self.prompt
            .as_deref()
            .or(self.filter_text.as_deref())
            .filter(|t| !t.is_empty())
    }

    /// Whether a row is in the process table: it matches the text narrowing it, and it
    /// is not a process that exited while those are hidden (x).
    pub fn shows(&self, p: &ProcFrame) -> bool {
        let hidden = (self.hide_exited && p.gone) || (self.hide_kernel && p.is_kernel_thread());
        !hidden && self.narrow_text().is_none_or(|t| matches_text(p, t))
    }

    /// Rows of the process table in display order, narrowed by the filter text.
    pub fn visible_procs<'a>(&self, f: &'a Frame) -> Vec<&'a ProcFrame> {
        let mut rows = sorted_procs(f, self.proc_sort, self.proc_reverse);
        rows.retain(|p| self.shows(p));
        if self.tree {
            return super::tree::tree_order(&rows)
                .into_iter()
                .map(|(p, _)| p)
                .collect();
        }
        rows
    }

    /// What a process table `height` rows tall shows of `f` (see `sort::proc_window`):
    /// the same rows as `visible_procs` around the selection, without sorting them all.
    pub fn proc_window<'a>(&self, f: &'a Frame, height: usize) -> ProcWindow<'a> {
        if self.tree {
            let mut rows = sorted_procs(f, self.proc_sort, self.proc_reverse);
            rows.retain(|p| self.shows(p));
            let order = super::tree::tree_order(&rows);
            return super::tree::tree_window(order, self.selected_pid, height);
        }
        proc_window(
            f,
            self.proc_sort,
            self.proc_reverse,
            |p| self.shows(p),
            self.selected_pid,
            height,
        )
    }

    /// PIDs of the process table in display order.
    pub(super) fn rows(&self) -> Vec<u32> {
        self.frame
            .as_ref()
            .map(|f| self.visible_procs(f).iter().map(|p| p.pid).collect())
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

    /// A key press: the open prompt's, else its action in this view. Any key closes the
    /// help screen, and one that does something also does it.
    pub fn key(&mut self, k: &KeyEvent) {
        self.act_result = None;
        if self.col_chooser.is_some() {
            self.chooser_key(k);
        } else if self.typing() {
            self.typing_key(k);
        } else if let Some(a) = super::keymap::action_for(k, self.view) {
            self.handle(a);
        } else {
            self.show_help = false;
            self.show_findings = false;
        }
    }

    pub fn handle(&mut self, a: Action) {
        let before = (
            self.view,
            self.proc_sort,
            self.proc_reverse,
            self.tree,
            self.hide_kernel,
            self.hide_exited,
        );
        self.handle_action(a);
        let after = (
            self.view,
            self.proc_sort,
            self.proc_reverse,
            self.tree,
            self.hide_kernel,
            self.hide_exited,
        );
        if after != before {
            self.settings_touched = true;
            if (after.1, after.2) != (before.1, before.2) {
                self.sort_by_default = false;
            }
        }
    }

    fn handle_action(&mut self, a: Action) {
        if self.show_help && self.turn_help_page(a) {
            return;
        }
        if self.show_findings {
            // As the help: arrows scroll it, any other key closes it (and acts).
            let s = &mut self.findings_scroll;
            match a {
                Action::Down => *s = s.saturating_add(1),
                Action::Up => *s = s.saturating_sub(1),
                Action::PageDown => *s = s.saturating_add(PAGE as u16),
                Action::PageUp => *s = s.saturating_sub(PAGE as u16),
                Action::Home => *s = 0,
                _ => {
                    self.show_findings = false;
                    if matches!(a, Action::Findings | Action::Back) {
                        return;
                    }
                    return self.handle(a);
                }
            }
            let (rows, shown) =
                crate::ui::findings::overlay_rows(self, self.screen.0, self.screen.1);
            self.findings_scroll = self.findings_scroll.min(rows.saturating_sub(shown));
            return;
        }
        if std::mem::take(&mut self.show_help) && matches!(a, Action::Help | Action::Back) {
            // The help key and Esc only close it.
            return;
        }
        if self.contention.handle(self.view, a)
            || self.irq.handle(self.view, a)
            || self.profile.handle(self.view, a)
            || self.cgroups.handle(self.view, a)
        {
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::TogglePause => {
                self.paused = !self.paused;
                self.profile.freeze(self.paused);
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
            Action::Help => {
                self.show_help = true;
                self.help_page = 0;
            }
            Action::Open => {
                let rows = self.rows();
                if !rows.is_empty() {
                    self.thread_pid = Some(rows[self.selected_index(&rows)]);
                }
            }
            Action::Filter => self.prompt = Some(self.filter_text.clone().unwrap_or_default()),
            Action::SortBy(k) => {
                if self.proc_sort == k {
                    self.proc_reverse = !self.proc_reverse;
                } else {
                    self.proc_sort = k;
                    self.proc_reverse = false;
                }
            }
            Action::NextView => self.view = cycle(self.view, 1),
            Action::PrevView => self.view = cycle(self.view, View::ALL.len() - 1),
            Action::Back => self.thread_pid = None,
            Action::GoTo(v) => self.view = v,
            Action::ProfileOf => {
                let rows = self.rows();
                if !rows.is_empty() {
                    self.profile.pid = Some(rows[self.selected_index(&rows)]);
                    self.profile.zoom.clear();
                    self.profile.sel.clear();
                    self.view = View::Profile;
                }
            }
            // Only the profile view's (handled above).
            Action::Left
            | Action::Right
            | Action::ProfileTable
            | Action::ProfileWindow
            | Action::ProfileSearch
            | Action::ProfileExport => {}
            Action::ProfileOffCpu => self.toggle_off_cpu(),
            Action::Evidence => self.open_evidence(),
            // The replay loop hands these to the player.
            Action::Replay(_) => {}
            Action::ToggleRecord => self.toggle_record = self.replay.is_none(),
            Action::Suspend => self.suspend = true,
            Action::HideExited => self.hide_exited = !self.hide_exited,
            Action::Columns => self.col_chooser = Some(0),
            Action::Findings => {
                self.show_findings = true;
                self.findings_scroll = 0;
            }
            Action::Kill | Action::NiceBy(_) | Action::Affinity => self.open_act(a),
            Action::Tree => self.tree = !self.tree,
            Action::HideKernel => self.hide_kernel = !self.hide_kernel,
        }
        // The profile view samples stacks: ask the collector once, when it first opens
        // (a replay has no collector; its recording has stacks or it has not).
        if self.view == View::Profile && !self.profile_asked && self.replay.is_none() {
            self.profile_asked = true;
            self.requests.push(Request::StartProfile);
        }
        // The futex view counts every call while it is open; elsewhere only the waits
        // that slept are (a futex storm does not feel those).
        let futex_calls = self.view == View::Futexes && self.replay.is_none();
        if futex_calls != self.futex_calls_asked {
            self.futex_calls_asked = futex_calls;
            self.requests.push(Request::FutexCalls(futex_calls));
        }
    }

    /// ↓/PgDn and ↑/PgUp turn the help's pages when it has several (staying on the
    /// first or last); true when `a` was taken for that.
    fn turn_help_page(&mut self, a: Action) -> bool {
        let step: isize = match a {
            Action::Down | Action::PageDown => 1,
            Action::Up | Action::PageUp => -1,
            _ => return false,
        };
        let n = crate::ui::help::pages(self, self.screen.0, self.screen.1);
        if n < 2 {
            return false;
        }
        self.help_page = self.help_page.saturating_add_signed(step).min(n - 1);
        true
    }

    /// `o` in the profile view: ask the collector for the other kind of stacks. Off-CPU
    /// stacks are only taken for chosen processes (the view's, else the filter's).
    fn toggle_off_cpu(&mut self) {
        if self.view != View::Profile {
            return;
        }
        let pv = &mut self.profile;
        if self.replay.is_some() {
            pv.message = Some("a replay shows the stacks that were recorded".into());
            return;
        }
        let off = !pv.off_cpu;
        let filtered = self.frame.as_ref().is_some_and(|f| f.filter.is_some());
        if off && pv.pid.is_none() && !filtered {
            pv.message = Some(
                "off-CPU stacks need processes: F on one in the process list, or a filter (p)"
                    .into(),
            );
            return;
        }
        pv.set_off_cpu(off);
        self.profile_asked = true;
        self.requests.push(Request::ProfileMode {
            off_cpu: off,
            pids: pv.pid.filter(|_| off).map(|p| vec![p]),
        });
    }

    /// A one-line prompt is open (the filter, the profile view's search, an act).
    pub fn typing(&self) -> bool {
        self.prompt.is_some() || self.profile.typing.is_some() || self.act.is_some()
    }

    /// A key for whichever prompt is open.
    pub fn typing_key(&mut self, k: &KeyEvent) {
        if let Some(m) = &mut self.act {
            use super::act::Outcome;
            match m.key(k) {
                Outcome::Stay => {}
                Outcome::Cancel => self.act = None,
                Outcome::Do(r) => {
                    self.act = None;
                    self.act_requests.push(r);
                }
            }
        } else if self.profile.typing.is_some() {
            self.profile.search_key(k);
        } else {
            self.prompt_key(k);
        }
    }
}

fn cycle(v: View, step: usize) -> View {
    let i = View::ALL.iter().position(|x| *x == v).unwrap_or(0);
    View::ALL[(i + step) % View::ALL.len()]
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
