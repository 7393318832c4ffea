//! What a key does: its Action in this view, handed to the open overlay (help,
//! findings), the view's own state, or the App; the requests to the collector that
//! follow from the view shown.

use crossterm::event::KeyEvent;

use super::{App, View};
use crate::app::keymap::Action;
use crate::app::keymap::PAGE;
use crate::collect::Request;

impl App {
    /// A key press: the open prompt's, else its action in this view. Any key closes the
    /// help screen, and one that does something also does it.
    pub fn key(&mut self, k: &KeyEvent) {
        self.act_result = None;
        if self.col_chooser.is_some() {
            self.chooser_key(k);
        } else if self.typing() {
            self.typing_key(k);
        } else if let Some(a) = crate::app::keymap::action_for(k, self.view) {
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
            self.show_threads,
        );
        self.handle_action(a);
        let after = (
            self.view,
            self.proc_sort,
            self.proc_reverse,
            self.tree,
            self.hide_kernel,
            self.hide_exited,
            self.show_threads,
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
                if let Some(pid) = self.selected_process() {
                    self.thread_pid = Some(pid);
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
                if let Some(pid) = self.selected_process() {
                    self.profile.pid = Some(pid);
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
            // Threads are shown in the tree: showing them turns it on.
            Action::ShowThreads => {
                self.show_threads = !self.show_threads;
                self.tree |= self.show_threads;
            }
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
        // The call/call-single split of IPIs received is counted while the IPI view is
        // open; elsewhere /proc/interrupts' total is.
        let ipi_split = self.view == View::Ipi && self.replay.is_none();
        if ipi_split != self.ipi_split_asked {
            self.ipi_split_asked = ipi_split;
            self.requests.push(Request::IpiSplit(ipi_split));
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
}

fn cycle(v: View, step: usize) -> View {
    let i = View::ALL.iter().position(|x| *x == v).unwrap_or(0);
    View::ALL[(i + step) % View::ALL.len()]
}
