//! The mouse on a rendered process table: the geometry the render hands back, clicked
//! where its header titles and rows were drawn.

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::app::sort::ProcSort;
use crate::app::state::View;
use crate::model::Frame;
use crate::model::frame::ProcFrame;

/// `n` processes, pid 1000 + i, busiest first, named p<i>.
fn frame(n: u32) -> Frame {
    Frame {
        interval_s: 1.0,
        runnable: crate::model::frame::Runnable {
            true_avg: Some(1.0),
            ..Default::default()
        },
        procs: (0..n)
            .map(|i| ProcFrame {
                pid: 1000 + i,
                comm: format!("p{i:03}").into(),
                cpu_pct_true: Some(f64::from(n - i)),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Render `app` on a 100x30 screen as the event loop does, keeping the table's place;
/// the screen's text by rows.
fn draw(app: &mut App) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
    let mut table = None;
    term.draw(|f| table = crate::ui::render_mapped(f, app))
        .unwrap();
    app.proc_table = table;
    let buf = term.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

fn click(x: u16, y: u16) -> MouseEvent {
    MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    }
}

/// Where `text` is on screen (column, row): the first match.
fn find(screen: &[String], text: &str) -> (u16, u16) {
    screen
        .iter()
        .enumerate()
        .find_map(|(y, l)| {
            l.find(text)
                .map(|b| (l[..b].chars().count() as u16, y as u16))
        })
        .unwrap_or_else(|| panic!("{text:?} not on screen:\n{}", screen.join("\n")))
}

#[test]
fn clicking_a_header_sorts_and_again_reverses() {
    let mut app = App::new();
    app.push_frame(frame(5));
    let s = draw(&mut app);
    let (x, y) = find(&s, "COMM ");
    assert!(app.mouse(&click(x + 1, y)));
    assert_eq!((app.proc_sort, app.proc_reverse), (ProcSort::Comm, false));
    assert!(
        app.settings_touched,
        "a click is the user's choice, as a key"
    );
    let s = draw(&mut app);
    assert!(s[usize::from(y)].contains("COMM▼"), "{}", s[usize::from(y)]);
    assert!(app.mouse(&click(x, y)));
    assert_eq!((app.proc_sort, app.proc_reverse), (ProcSort::Comm, true));
    let s = draw(&mut app);
    assert!(s[usize::from(y)].contains("COMM▲"), "{}", s[usize::from(y)]);
    // Another column: sorted by it, in its own direction.
    let (x, y) = find(&s, "PID");
    assert!(app.mouse(&click(x, y)));
    assert_eq!((app.proc_sort, app.proc_reverse), (ProcSort::Pid, false));
}

#[test]
fn clicking_a_row_selects_its_process_when_scrolled() {
    let mut app = App::new();
    app.push_frame(frame(100));
    app.selected_pid = Some(1060); // display index 60: the table is scrolled
    let s = draw(&mut app);
    let t = app.proc_table.clone().expect("the table is on screen");
    assert!(t.first > 0, "scrolled: {t:?}");
    // The third row drawn is display index first + 2, the process named on it.
    let y = t.body_y + 2;
    let want = 1000 + t.first as u32 + 2;
    assert!(s[usize::from(y)].contains(&format!("p{:03}", want - 1000)));
    assert!(app.mouse(&click(t.x + 20, y)));
    assert_eq!(app.selected_pid, Some(want));
    // The table stays where it was: the row clicked is drawn where it was clicked.
    let s2 = draw(&mut app);
    assert_eq!(app.proc_table.as_ref().map(|t| t.first), Some(t.first));
    assert_eq!(s2[usize::from(y)], s[usize::from(y)]);
    // Up from there moves the selection over still rows, then the rows under it: from
    // display index first + 2, four rows up is two above the first row shown.
    app.handle(crate::app::keymap::Action::Up);
    draw(&mut app);
    assert_eq!(app.proc_table.as_ref().map(|t| t.first), Some(t.first));
    for _ in 0..3 {
        app.handle(crate::app::keymap::Action::Up);
        draw(&mut app);
    }
    assert_eq!(app.proc_table.as_ref().map(|t| t.first), Some(t.first - 2));
    // Below the last row of a short table: nothing.
    let mut app = App::new();
    app.push_frame(frame(3));
    draw(&mut app);
    let t = app.proc_table.clone().unwrap();
    app.handle(crate::app::keymap::Action::Down);
    assert!(!app.mouse(&click(t.x + 2, t.body_y + 5)));
    assert_eq!(app.selected_pid, Some(1001));
}

#[test]
fn the_wheel_moves_the_selection_three_rows() {
    let mut app = App::new();
    app.push_frame(frame(20));
    draw(&mut app);
    let wheel = |kind| MouseEvent {
        kind,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    };
    assert!(app.mouse(&wheel(MouseEventKind::ScrollDown)));
    assert_eq!(app.selected_pid, Some(1003));
    app.mouse(&wheel(MouseEventKind::ScrollDown));
    app.mouse(&wheel(MouseEventKind::ScrollUp));
    assert_eq!(app.selected_pid, Some(1003));
}

#[test]
fn no_table_no_click() {
    let mut app = App::new();
    app.push_frame(frame(5));
    let s = draw(&mut app);
    let (x, y) = find(&s, "COMM ");
    // Under the help screen, in the thread view, while typing a filter: nothing.
    app.show_help = true;
    draw(&mut app);
    assert!(!app.mouse(&click(x, y)));
    app.show_help = false;
    app.thread_pid = Some(1000);
    draw(&mut app);
    assert!(!app.mouse(&click(x, y)));
    app.thread_pid = None;
    draw(&mut app);
    app.prompt = Some(String::new());
    assert!(!app.mouse(&click(x, y)));
    assert_eq!(app.proc_sort, ProcSort::CpuTrue);
    // Above the table (the panels over it).
    app.prompt = None;
    assert!(!app.mouse(&click(x, 2)));
}

#[test]
fn the_futex_and_lock_tables_sort_by_a_title_click() {
    use crate::app::contention_view::{FutexSort, LockSort};
    let mut app = App::new();
    app.push_frame(frame(5));
    app.view = View::Futexes;
    let s = draw(&mut app);
    let (x, y) = find(&s, "WAIT/s");
    assert!(app.mouse(&click(x + 1, y)));
    let v = app.contention;
    assert_eq!((v.futex_sort, v.futex_reverse), (FutexSort::Wait, false));
    let s = draw(&mut app);
    assert!(
        s[usize::from(y)].contains("WAIT/s▼"),
        "{}",
        s[usize::from(y)]
    );
    assert!(app.mouse(&click(x, y)));
    assert!(app.contention.futex_reverse);
    // A title that does not sort (CALLER), and the rows (none selectable): nothing.
    let (x, y) = find(&s, "CALLER");
    assert!(!app.mouse(&click(x, y)));
    assert!(!app.mouse(&click(x, y + 1)));
    // The process table's sort is its own.
    assert_eq!(app.proc_sort, ProcSort::CpuTrue);

    app.view = View::Locks;
    let s = draw(&mut app);
    let (x, y) = find(&s, "MAX");
    assert!(app.mouse(&click(x, y)));
    let v = app.contention;
    assert_eq!((v.lock_sort, v.lock_reverse), (LockSort::Max, false));
    assert_eq!(v.futex_sort, FutexSort::Wait);
}

#[test]
fn a_click_selects_a_cgroup_and_the_wheel_moves_it() {
    use crate::model::cgroup::CgroupFrame;
    let mut f = frame(5);
    f.cgroups = (0..30)
        .map(|i| CgroupFrame {
            path: format!("/svc{i:02}.service"),
            name: format!("svc{i:02}"),
            ..Default::default()
        })
        .collect();
    let mut app = App::new();
    app.push_frame(f);
    app.view = View::Cgroups;
    let s = draw(&mut app);
    let (x, y) = find(&s, "svc03");
    assert!(app.mouse(&click(x, y)));
    assert_eq!(app.cgroups.sel, 3);
    let s = draw(&mut app);
    assert!(s.iter().any(|l| l.contains("svc03")));
    let wheel = MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    };
    assert!(app.mouse(&wheel));
    assert_eq!(app.cgroups.sel, 6);
    // Scrolled down to the last: a click picks the row drawn there, not from the top.
    app.cgroups.sel = 29;
    let s = draw(&mut app);
    let t = app.proc_table.clone().unwrap();
    assert!(t.first > 0, "scrolled: {t:?}");
    let (x, y) = find(&s, &format!("svc{:02}", t.first + 1));
    assert!(app.mouse(&click(x, y)));
    assert_eq!(app.cgroups.sel, t.first + 1);
    // Below the last row: nothing.
    assert!(!app.mouse(&click(x, t.body_y + t.rows)));
}
