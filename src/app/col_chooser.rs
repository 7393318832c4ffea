//! The column chooser (c): every column of the process table with an on/off mark; ↑/↓
//! move, space or Enter turns the column under the cursor on or off, Esc or c closes it.
//! PID always shows, and so does the column the table is sorted by. The choice is a
//! setting (`hidden_columns` in the settings file).

use crossterm::event::{KeyCode, KeyEvent};

use super::state::App;
use crate::model::procs::fields::{FIELDS, ProcField};

/// Whether a column can be turned off (PID names the row).
pub fn hideable(f: ProcField) -> bool {
    f != ProcField::Pid
}

impl App {
    /// A key while the chooser is open.
    pub(super) fn chooser_key(&mut self, k: &KeyEvent) {
        let Some(at) = self.col_chooser else {
            return;
        };
        let last = FIELDS.len() - 1;
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.col_chooser = Some(at.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.col_chooser = Some((at + 1).min(last)),
            KeyCode::Home => self.col_chooser = Some(0),
            KeyCode::End => self.col_chooser = Some(last),
            KeyCode::Char(' ') | KeyCode::Enter => {
                let id = FIELDS[at].id;
                if hideable(id) {
                    match self.hidden_cols.iter().position(|h| *h == id) {
                        Some(i) => {
                            self.hidden_cols.remove(i);
                        }
                        None => self.hidden_cols.push(id),
                    }
                    self.settings_touched = true;
                }
            }
            KeyCode::Esc | KeyCode::Char('c') | KeyCode::Char('q') => self.col_chooser = None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    #[test]
    fn space_turns_a_column_off_and_on_but_not_pid() {
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        let mut app = App::new();
        app.key(&key(KeyCode::Char('c')));
        assert_eq!(app.col_chooser, Some(0));
        app.key(&key(KeyCode::Char(' ')));
        assert!(app.hidden_cols.is_empty(), "PID stays");
        app.key(&key(KeyCode::Down));
        app.key(&key(KeyCode::Char(' ')));
        assert_eq!(app.hidden_cols, vec![FIELDS[1].id]);
        assert!(app.settings_touched);
        app.key(&key(KeyCode::Enter));
        assert!(app.hidden_cols.is_empty());
        app.key(&key(KeyCode::Char(' ')));
        app.key(&key(KeyCode::Esc));
        assert_eq!(app.col_chooser, None);
        assert_eq!(app.hidden_cols, vec![FIELDS[1].id]);
    }
}
