//! One-line prompts: which is open (the filter, the profile view's search, an act), the
//! keys typed into them, and the filter they apply.

use crossterm::event::KeyEvent;

use super::App;
use super::table::matches_text;
use crate::app::prompt_edit::edit_prompt;
use crate::collect::Request;
use crate::model::sample::FilterSpec;

impl App {
    /// A one-line prompt is open (the filter, the profile view's search, an act).
    pub fn typing(&self) -> bool {
        self.prompt.is_some() || self.profile.typing.is_some() || self.act.is_some()
    }

    /// A key for whichever prompt is open.
    pub fn typing_key(&mut self, k: &KeyEvent) {
        if let Some(m) = &mut self.act {
            use crate::app::act::Outcome;
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

    /// Keys while the filter prompt is open: edit, Enter applies, Esc cancels.
    pub fn prompt_key(&mut self, k: &KeyEvent) {
        if let Some(text) = edit_prompt(&mut self.prompt, k) {
            self.apply_filter(text.trim());
        }
    }

    /// Apply a typed filter: a PID list, or a name matched against the rows on screen
    /// (their PIDs are watched, and so are later processes with exactly that name).
    fn apply_filter(&mut self, text: &str) {
        if text.is_empty() {
            self.filter_text = None;
            self.exited.clear();
            self.requests.push(Request::SetFilter(None));
            return;
        }
        let pids: Option<Vec<u32>> = text.split(',').map(|p| p.trim().parse().ok()).collect();
        let spec = match pids {
            Some(pids) => FilterSpec {
                pids,
                ..Default::default()
            },
            None => {
                let rows = self.frame.as_ref().map(|f| {
                    f.procs
                        .iter()
                        .filter(|p| matches_text(p, text))
                        .map(|p| p.pid)
                        .collect()
                });
                let exact = self
                    .frame
                    .as_ref()
                    .is_some_and(|f| f.procs.iter().any(|p| *p.comm == *text));
                FilterSpec {
                    pids: rows.unwrap_or_default(),
                    comm: exact.then(|| text.to_string()),
                    ..Default::default()
                }
            }
        };
        self.filter_text = Some(text.to_string());
        self.exited.clear();
        self.requests.push(Request::SetFilter(Some(spec)));
    }
}
