//! The replay part of the keymap: consulted before the main table while replaying, and
//! listed with it in the help screen and footer.

use crossterm::event::{KeyCode, KeyEvent};

use super::keymap::{Action, Binding, Key, ReplayAction, matches};

use Action::Replay as R;
use ReplayAction as RA;

#[rustfmt::skip]
pub const REPLAY_KEYMAP: &[Binding] = &[
    Binding { keys: &[Key::Char(' ')], action: R(RA::PlayPause), label: "space", help: "play / pause the replay", footer: Some("play"), views: None },
    Binding { keys: &[Key::Code(KeyCode::Right)], action: R(RA::Step(1)), label: "→", help: "step one interval forward", footer: None, views: None },
    Binding { keys: &[Key::Code(KeyCode::Left)], action: R(RA::Step(-1)), label: "←", help: "step one interval back", footer: Some("step"), views: None },
    Binding { keys: &[Key::Char(']')], action: R(RA::Jump(10)), label: "]", help: "jump 10 s forward", footer: None, views: None },
    Binding { keys: &[Key::Char('[')], action: R(RA::Jump(-10)), label: "[", help: "jump 10 s back", footer: Some("±10s"), views: None },
    Binding { keys: &[Key::Char('}')], action: R(RA::Jump(60)), label: "}", help: "jump 1 min forward", footer: None, views: None },
    Binding { keys: &[Key::Char('{')], action: R(RA::Jump(-60)), label: "{", help: "jump 1 min back", footer: Some("±1m"), views: None },
    Binding { keys: &[Key::Char('n')], action: R(RA::Finding(true)), label: "n", help: "go to where the next finding starts", footer: None, views: None },
    Binding { keys: &[Key::Char('N')], action: R(RA::Finding(false)), label: "N", help: "go to where the previous finding starts", footer: None, views: None },
    Binding { keys: &[Key::Char('g')], action: R(RA::GoTo), label: "g", help: "go to a time: 14:05[:30] (UTC), 90 / 5m from the start, +30s / -2m from here", footer: Some("go to"), views: None },
    Binding { keys: &[Key::Char('>'), Key::Char('.')], action: R(RA::Faster), label: ">", help: "faster: 1x, 2x, 10x, as fast as possible", footer: Some("speed"), views: None },
    Binding { keys: &[Key::Char('<'), Key::Char(',')], action: R(RA::Slower), label: "<", help: "slower", footer: None, views: None },
];

/// The replay action for a key press, if it is a replay key.
pub fn replay_action_for(ev: &KeyEvent) -> Option<ReplayAction> {
    REPLAY_KEYMAP
        .iter()
        .find(|b| b.keys.iter().any(|k| matches(k, ev)))
        .and_then(|b| match b.action {
            Action::Replay(a) => Some(a),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    #[test]
    fn replay_keys() {
        let k = |c| KeyEvent::new(c, KeyModifiers::NONE);
        assert_eq!(
            replay_action_for(&k(KeyCode::Char(' '))),
            Some(RA::PlayPause)
        );
        assert_eq!(replay_action_for(&k(KeyCode::Left)), Some(RA::Step(-1)));
        assert_eq!(
            replay_action_for(&k(KeyCode::Char('}'))),
            Some(RA::Jump(60))
        );
        assert_eq!(replay_action_for(&k(KeyCode::Char('q'))), None);
    }
}
