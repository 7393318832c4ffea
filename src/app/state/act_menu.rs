//! The App's side of acting on a process (F9, F7/F8, a): which process, and the
//! prompt it opens (see `act`). The rest of App is in the other files of `state/`.

use super::App;
use crate::app::keymap::Action;

impl App {
    /// The process an act applies to: the one whose threads are shown, else the
    /// selected row (a thread row's process). With its name.
    pub(in crate::app) fn act_target(&self) -> Option<(u32, String)> {
        let pid = match self.thread_pid {
            Some(p) => p,
            None => self.selected_process()?,
        };
        let comm = self
            .frame
            .as_ref()
            .and_then(|f| f.procs.iter().find(|p| p.pid == pid))
            .map_or_else(String::new, |p| p.comm.as_ref().to_string());
        Some((pid, comm))
    }

    pub(in crate::app) fn open_act(&mut self, a: Action) {
        use crate::app::act::ActMenu;
        if self.replay.is_some() {
            self.act_result =
                Some("a replay cannot act on processes: they are the recorded machine's".into());
            return;
        }
        let Some((pid, comm)) = self.act_target() else {
            self.act_result = Some("no process selected".into());
            return;
        };
        if self.exited.contains_key(&pid)
            || self
                .frame
                .as_ref()
                .is_some_and(|f| f.procs.iter().any(|p| p.pid == pid && p.gone))
        {
            self.act_result = Some(format!("{comm}({pid}) has exited"));
            return;
        }
        self.act = Some(match a {
            Action::NiceBy(by) => ActMenu::nice_by(pid, &comm, by),
            Action::Affinity => ActMenu::affinity(pid, &comm),
            _ => ActMenu::signals(pid, &comm),
        });
    }
}
