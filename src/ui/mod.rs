//! Rendering: pure functions of (&App, &Frame) into ratatui widgets. No I/O, no BPF,
//! no /proc. Panels drop in a fixed order as the terminal shrinks (see `layout`).

pub mod blocked;
pub mod cgroups;
pub mod col_chooser;
pub mod cores;
pub mod findings;
pub mod fmt;
pub mod footer;
pub mod futexes;
pub mod header;
pub mod help;
pub mod ipi;
pub mod latency;
pub mod locks;
pub mod procs;
pub mod profile;
pub mod runnable;
pub mod sorted_table;
pub mod theme;
pub mod threads;
pub mod time_split;
pub mod timebar;

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Paragraph;

use crate::app::mouse::TableGeom;
use crate::app::{App, View};
use theme::Theme;

/// Draw the whole screen.
pub fn render(f: &mut TermFrame, app: &App) {
    render_mapped(f, app);
}

/// What a renderer of a table the mouse acts on hands back: where it drew it (None:
/// not drawn).
pub type Mapped = Option<TableGeom>;

/// Draw the whole screen, and say where the table the mouse acts on went (the process
/// table, the futex or kernel-lock table, the cgroup tree; None: none on screen, or an
/// overlay covers it): the event loops keep it in `App::proc_table`, for the mouse and
/// for the process table's next scroll position.
pub fn render_mapped(f: &mut TermFrame, app: &App) -> Option<TableGeom> {
    let area = f.area();
    let th = Theme::new(app.color);
    let Some(frame) = app.frame.as_ref() else {
        f.render_widget(
            Paragraph::new("ttop: collecting the first sample…").style(th.dim),
            area,
        );
        return None;
    };
    let banner = header::banner_lines(frame, app);
    let bar_h = u16::from(app.replay.is_some());
    let [top, ban, body, bar, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(banner.min(area.height.saturating_sub(4) / 2)),
        Constraint::Min(0),
        Constraint::Length(bar_h),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(f, top, app, frame, &th);
    if let Some(rb) = &app.replay {
        timebar::render(f, bar, rb, &th);
    }
    header::render_banner(f, ban, app, frame, &th);
    let mut table = None;
    match app.view {
        View::Main => table = render_main(f, body, app, frame, &th),
        View::Futexes => table = futexes::render(f, body, app, frame, &th),
        View::Locks => table = locks::render(f, body, app, frame, &th),
        View::Ipi => ipi::render(f, body, app, frame, &th),
        View::Latency => latency::render(f, body, app, frame, &th),
        View::Profile => profile::render(f, body, app, frame, &th),
        View::Cgroups => table = cgroups::render(f, body, app, frame, &th),
        View::Time => time_split::render(f, body, app, frame, &th),
    }
    footer::render(f, foot, app, &th);
    if app.show_findings {
        findings::render_overlay(f, area, app, frame, &th);
    }
    if app.col_chooser.is_some() {
        col_chooser::render(f, area, app, &th);
    }
    if app.show_help {
        help::render(f, area, app, &th);
    }
    table
}

/// The overview: runnable panel, per-core panel, process table. When rows run short the
/// per-core panel shrinks first, then the runnable history graph; the process table
/// keeps at least a header and a few rows.
/// Returns where the process table went (None in the thread view).
fn render_main(
    f: &mut TermFrame,
    area: Rect,
    app: &App,
    frame: &crate::model::Frame,
    th: &Theme,
) -> Option<TableGeom> {
    // The findings, one line each, above everything: at most 2 rows on a small screen.
    let max = match area.height {
        0..12 => 0,
        12..30 => 2,
        _ => 5,
    };
    let lines: Vec<_> = findings::lines(frame, max, app.finding_sel, th)
        .into_iter()
        .map(|l| findings::fit(l, usize::from(area.width)))
        .collect();
    let head_h = lines.len() as u16;
    let (mut run_h, core_h) = main_heights(area.height - head_h, frame.cpus.len() as u16);
    // One more row for why the scan undercounts, while the table keeps a few rows.
    let why = frame.runnable.undercount.is_some() && frame.runnable.top_view.is_some();
    if why && run_h >= 4 && area.height.saturating_sub(head_h + run_h + core_h) > 8 {
        run_h += 1;
    }
    let [head, run, cores, table] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(run_h),
        Constraint::Length(core_h),
        Constraint::Min(0),
    ])
    .areas(area);
    if !lines.is_empty() {
        f.render_widget(Paragraph::new(lines), head);
    }
    runnable::render(f, run, app, frame, th);
    cores::render(f, cores, frame, th);
    match app.thread_pid {
        Some(pid) => {
            threads::render(f, table, app, frame, pid, th);
            None
        }
        None => procs::render(f, table, app, frame, th),
    }
}

/// Heights of the runnable and per-core panels for a body of `h` rows and `ncpus` CPUs.
pub fn main_heights(h: u16, ncpus: u16) -> (u16, u16) {
    let table_min = 5u16;
    let avail = h.saturating_sub(table_min);
    // Runnable: 4 rows (title + 3 lines), up to 8 with a taller graph.
    let run = if avail >= 4 {
        4 + (h.saturating_sub(30) / 4).min(4)
    } else {
        avail
    };
    let avail = avail.saturating_sub(run);
    // Per-core: a header row and one per CPU, at most a third of the screen.
    let want = ncpus + 1;
    let cap = (h / 3).max(3);
    let cores = want.min(cap).min(avail);
    (run, if cores < 2 { 0 } else { cores })
}
