//! The process table's renderer against the Table-based one it replaced.
use super::*;

/// The Table-based renderer this one replaced, kept as the reference.
#[allow(dead_code)]
fn reference(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    if area.height < 3 {
        return;
    }
    let at = At {
        secs: fr.interval_s.max(1e-9),
        now: fr.t,
    };
    let cols = columns(area.width, app.proc_sort, &app.hidden_cols);
    let fixed: u16 = cols.iter().map(|c| c.width + 1).sum();
    let show_cmd = area.width >= fixed + 20;
    let arrow = if app.proc_reverse { "▲" } else { "▼" };
    let mut header: Vec<Cell> = cols
        .iter()
        .map(|c| {
            let sorted = c.id == app.proc_sort;
            let t = if sorted {
                format!("{}{arrow}", c.title)
            } else {
                c.title.to_string()
            };
            Cell::from(Span::styled(t, if sorted { th.warn } else { th.title }))
        })
        .collect();
    if show_cmd {
        header.push(Cell::from(Span::styled("COMMAND", th.title)));
    }
    let body_h = area.height.saturating_sub(2) as usize; // title border + header
    let win = app.proc_window(fr, body_h);
    let (sel, worst) = (win.selected, win.worst);
    let mut rows: Vec<Row> = win
        .rows
        .iter()
        .enumerate()
        .map(|(i, p)| (win.first + i, p.proc().expect("a flat table")))
        .map(|(i, p)| {
            let mut cells: Vec<Cell> = cols.iter().map(|c| Cell::from(text(c, p, at))).collect();
            if show_cmd {
                let cmd: std::borrow::Cow<str> = if p.gone {
                    format!("exited this interval: {}", p.comm).into()
                } else if p.cmdline.is_empty() {
                    format!("[{}]", p.comm).into()
                } else {
                    (*p.cmdline).into()
                };
                cells.push(Cell::from(fmt::inert(&cmd)));
            }
            let missed = p.ghost_threads.unwrap_or(0) > 0 || p.miss() >= MISS_HIGHLIGHT;
            let style = if i == sel && win.total > 0 {
                th.selected
            } else if missed && p.miss() >= worst && worst >= MISS_HIGHLIGHT {
                th.alert
            } else if missed {
                th.warn
            } else if p.gone {
                th.dim
            } else {
                th.normal
            };
            Row::new(cells).style(style)
        })
        .collect();
    // Watched processes that exited: their last figures, and when.
    let room = body_h.saturating_sub(rows.len());
    for (pid, (t, last)) in app
        .exited
        .iter()
        .filter(|(pid, _)| {
            let text = app.narrow_text();
            !fr.procs
                .iter()
                .any(|p| p.pid == **pid && text.is_none_or(|t| matches_text(p, t)))
        })
        .take(room)
    {
        let mut last = last.clone();
        last.pid = *pid;
        let cells = exited_cells(&cols, &last, *t, at, show_cmd);
        rows.push(Row::new(cells.into_iter().map(Cell::from)).style(th.dim));
    }
    let mut widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width)).collect();
    if show_cmd {
        widths.push(Constraint::Min(10));
    }
    let shown = if win.total == fr.procs.len() {
        format!("{}", fr.procs.len())
    } else {
        format!("{} of {}", win.total, fr.procs.len())
    };
    let title = format!(
        " Processes {shown}  sorted by {} {arrow} ",
        app.proc_sort.name()
    );
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, th.title));
    let table = Table::new(rows, widths)
        .header(Row::new(header))
        .column_spacing(1)
        .block(block);
    f.render_widget(table, area);
}

fn draw(app: &App, w: u16, h: u16, table: Renderer) -> Buffer {
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    let th = Theme::new(app.color);
    let fr = app.frame.as_ref().unwrap();
    term.draw(|f| table(f, f.area(), app, fr, &th)).unwrap();
    term.backend().buffer().clone()
}

type Renderer = fn(&mut TermFrame, Rect, &App, &Frame, &Theme);

fn apps() -> Vec<(String, App)> {
    use crate::model::{derive, fixtures};
    let sys = fixtures::system();
    let mut out = Vec::new();
    for bpf in [true, false] {
        let mut cur = fixtures::incident(2, bpf);
        // Wide, combining and zero-width text, cut at a column edge.
        cur.procs[0].comm = "名前名前名前名前x".into();
        cur.procs[1].cmdline = "\u{301}e\u{301} \u{2060}名前 ".repeat(20).into();
        let f = derive(&sys, Some(&fixtures::incident(1, bpf)), &cur);
        for (sel, rev, color) in [(None, false, true), (Some(1817), true, false)] {
            let mut app = App::new();
            app.push_frame(f.clone());
            app.selected_pid = sel;
            app.proc_reverse = rev;
            app.color = color;
            out.push((format!("incident bpf={bpf} sel={sel:?}"), app));
        }
    }
    let f = derive(
        &sys,
        Some(&fixtures::synthetic(300, 2, 100)),
        &fixtures::synthetic(300, 2, 101),
    );
    let mut app = App::new();
    app.push_frame(f.clone());
    app.selected_pid = Some(f.procs[120].pid);
    out.push(("synthetic, scrolled".into(), app));
    let mut app = App::new();
    app.push_frame(f.clone());
    app.filter_text = Some("svc-1".into());
    // Watched processes that exited: one still in the table, two not.
    for pid in [f.procs[1].pid, 1, 2] {
        let mut p = f.procs[1].clone();
        p.pid = pid;
        app.exited.insert(pid, (1.0e9, p));
    }
    out.push(("narrowed, exited rows".into(), app));
    out
}

/// A sorted column's title keeps its arrow (▼): the column is one wider than it.
#[test]
fn sorted_titles_keep_their_arrow() {
    use super::super::{futexes, locks};
    let procs = COLS.iter().map(|c| (c.title, c.width, c.sort.is_some()));
    let futex = futexes::COLS
        .iter()
        .map(|c| (c.title, c.width, c.sort.is_some()));
    let lock = locks::COLS
        .iter()
        .map(|c| (c.title, c.width, c.sort.is_some()));
    for (title, width, sorts) in procs.chain(futex).chain(lock) {
        assert!(
            !sorts || title.chars().count() < usize::from(width),
            "{title}"
        );
    }
}

/// Row for row, cell for cell, style for style, the body written into the buffer
/// is what the Table-based renderer drew, at every width and height.
#[test]
fn same_buffer_as_the_table_renderer() {
    for (name, app) in apps() {
        for w in [
            20, 40, 47, 48, 55, 56, 60, 70, 77, 80, 100, 110, 120, 135, 160, 200,
        ] {
            for h in [1, 2, 3, 4, 7, 12, 30, 60] {
                let got = draw(&app, w, h, |f, a, app, fr, th| {
                    render(f, a, app, fr, th);
                });
                let want = draw(&app, w, h, reference);
                assert_eq!(got, want, "{name} at {w}x{h}");
            }
        }
    }
}
