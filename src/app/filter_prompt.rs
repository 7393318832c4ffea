//! The filter prompt (`p` or `/`): typing PIDs or part of a name, and what Enter applies
//! (a filter the collector takes down to the kernel). Kept apart from `state.rs`.

use crossterm::event::{KeyCode, KeyEvent};

use super::state::App;
use crate::collect::Request;
use crate::model::frame::ProcFrame;
use crate::model::sample::FilterSpec;

impl App {
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

/// Edit a one-line prompt (filter, replay "go to"): type, Backspace, Esc closes it;
/// Enter closes it and returns the text.
pub fn edit_prompt(prompt: &mut Option<String>, k: &KeyEvent) -> Option<String> {
    let text = prompt.as_mut()?;
    match k.code {
        KeyCode::Char(c) if !c.is_control() => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Esc => *prompt = None,
        KeyCode::Enter => return prompt.take(),
        _ => {}
    }
    None
}

/// Does a row match typed text: a PID prefix, or a substring of its name or command.
pub fn matches_text(p: &ProcFrame, text: &str) -> bool {
    let t = text.to_lowercase();
    p.pid.to_string().starts_with(&t)
        || p.comm.to_lowercase().contains(&t)
        || p.cmdline.to_lowercase().contains(&t)
}
