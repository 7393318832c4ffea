//! App's own behaviour: selection, pause, the help screen's keys.

use crossterm::event::KeyEvent;

use super::*;
use crate::app::keymap::Action;
use crate::model::frame::ProcFrame;

/// A frame with eBPF figures (so the default sort is the eBPF CPU%).
fn frame(pids: &[(u32, f64)]) -> Frame {
    Frame {
        interval_s: 1.0,
        runnable: crate::model::frame::Runnable {
            true_avg: Some(1.0),
            ..Default::default()
        },
        procs: pids
            .iter()
            .map(|&(pid, cpu)| ProcFrame {
                pid,
                cpu_pct_true: Some(cpu),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn selection_follows_the_process_when_rows_resort() {
    let mut app = App::new();
    app.push_frame(frame(&[(1, 50.0), (2, 10.0), (3, 5.0)]));
    app.handle(Action::Down);
    assert_eq!(app.selected_pid, Some(2));
    app.push_frame(frame(&[(1, 1.0), (2, 90.0), (3, 5.0)]));
    assert_eq!(app.selected_index(&app.rows()), 0);
    app.handle(Action::End);
    assert_eq!(app.selected_pid, Some(1));
    app.handle(Action::PageUp);
    assert_eq!(app.selected_pid, Some(2));
}

#[test]
fn pause_freezes_the_display_but_not_history() {
    let mut app = App::new();
    app.push_frame(frame(&[(1, 1.0)]));
    app.handle(Action::TogglePause);
    app.push_frame(frame(&[(9, 1.0)]));
    assert_eq!(app.frame.as_ref().unwrap().procs[0].pid, 1);
    assert_eq!(app.history.len(), 2);
    app.handle(Action::TogglePause);
    assert_eq!(app.frame.as_ref().unwrap().procs[0].pid, 9);
}

/// Any key closes the help screen (issue 34, defect 4): an unbound one, the help key
/// and Esc only close it; a bound key closes it and does what it does.
#[test]
fn help_closes_on_any_key_and_a_bound_key_acts() {
    use crossterm::event::{KeyCode, KeyModifiers};
    let k = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    let mut app = App::new();
    app.push_frame(frame(&[(1, 1.0)]));
    app.key(&k('?'));
    assert!(app.show_help);
    app.key(&k('x'));
    assert!(!app.show_help, "an unbound key closes it");
    app.key(&k('?'));
    app.key(&k('?'));
    assert!(!app.show_help, "the help key closes it");
    app.thread_pid = Some(1);
    app.key(&k('?'));
    app.key(&KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!app.show_help);
    assert_eq!(app.thread_pid, Some(1), "Esc only closed the help");
    app.key(&k('?'));
    app.key(&k('2'));
    assert!(!app.show_help);
    assert_eq!(app.view, View::Futexes, "a bound key also acts");
    app.key(&k('1'));
    app.key(&k('?'));
    app.key(&k('s'));
    // The next sortable column to the right of TRUE%.
    assert_eq!(app.proc_sort, ProcSort::Miss);
}
