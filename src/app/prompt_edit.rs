//! Editing the text of a one-line prompt (the filter, the profile view's search, the
//! replay's "go to"): the keys every prompt shares.

use crossterm::event::{KeyCode, KeyEvent};

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
