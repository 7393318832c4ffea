//! What a mouse event does to the App: a header click sorts (again: reverses) the process
//! table, the futex or the kernel-lock table; a row click selects a process or a cgroup;
//! the wheel moves the selection as the arrow keys do.

use crossterm::event::MouseEvent;

use super::App;
use crate::app::keymap::Action;
use crate::app::mouse::{MouseAction, SortKey, TableKind, action};

impl App {
    /// A mouse event, mapped through the table the last render drew (see
    /// `mouse::action`). True when it did something (the screen needs a redraw).
    pub fn mouse(&mut self, ev: &MouseEvent) -> bool {
        if self.col_chooser.is_some() || self.typing() {
            return false;
        }
        // Under the help or the findings screen the table takes no clicks (the wheel
        // still turns or scrolls them, as ↑/↓).
        let covered = self.show_help || self.show_findings;
        let table = self.proc_table.as_ref().filter(|_| !covered);
        let Some(a) = action(ev, table) else {
            return false;
        };
        self.act_result = None;
        match a {
            MouseAction::SortBy(SortKey::Proc(k)) => self.handle(Action::SortBy(k)),
            MouseAction::SortBy(SortKey::Futex(k)) => self.contention.sort_futexes_by(k),
            MouseAction::SortBy(SortKey::Lock(k)) => self.contention.sort_locks_by(k),
            MouseAction::Select(i) => match table.map(|t| t.kind) {
                Some(TableKind::Cgroups) => self.cgroups.sel = i,
                _ => match self.rows().get(i) {
                    Some(&pid) => self.selected_pid = Some(pid),
                    None => return false,
                },
            },
            MouseAction::Scroll(n) => {
                let step = if n < 0 { Action::Up } else { Action::Down };
                for _ in 0..n.unsigned_abs() {
                    self.handle(step);
                }
            }
        }
        true
    }
}

#[cfg(test)]
#[path = "mouse_tests.rs"]
mod tests;
