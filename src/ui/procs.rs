//! Process table: the /proc scan's columns beside eBPF's. Rows where the scan misses most
//! (ghost threads, CPU the scan does not see) are highlighted.

use ratatui::Frame as TermFrame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Cell, Row, Table, Widget};

use super::theme::Theme;
use super::{Mapped, fmt};
use crate::app::App;
use crate::app::mouse::{HeaderCell, SortKey, TableGeom, TableKind};
use crate::app::row::Row as TableRow;
use crate::app::sort::ProcSort;
use crate::app::state::matches_text;
use crate::app::thread_rows::{PER_THREAD, as_proc};
use crate::model::Frame;
use crate::model::frame::{ProcFrame, ThreadFrame};

/// A row is highlighted when the scan misses at least this many CPU percentage points
/// (or any ghost thread ran).
pub const MISS_HIGHLIGHT: f64 = 5.0;

/// The process table's columns: the field table's.
pub use crate::model::procs::fields::FIELDS as COLS;
use crate::model::procs::fields::{At, Field as Col, ProcField, Value};

/// A field's text in a row: its value as the screen writes it.
pub fn text(c: &Col, p: &ProcFrame, at: At) -> String {
    match (c.value)(p, at) {
        Value::Missing => "-".to_string(),
        Value::Plain(s) => s,
        Value::Name(s) => fmt::inert(s),
        Value::Num(v, w) => fmt::num(v, w),
        Value::Pct(v) => fmt::pct(v),
        Value::Kb(v) => fmt::kb(v),
        Value::Micros(v) => fmt::dur_us(v),
        Value::TimePlus(v) => fmt::time_plus(v),
        Value::Start { t, now } => fmt::start(t, now),
    }
}

/// The columns a table `width` wide shows: those the width has room for and not turned
/// off (`hidden`, the column chooser), and always the one it is sorted by (in place of
/// the ones that want the widest screen).
pub fn columns(width: u16, sort: ProcSort, hidden: &[ProcField]) -> Vec<&'static Col> {
    let sorted = |c: &Col| c.id == sort;
    let mut cols: Vec<&Col> = COLS
        .iter()
        .filter(|c| (width >= c.min_screen && !hidden.contains(&c.id)) || sorted(c))
        .collect();
    while cols.iter().map(|c| c.width + 1).sum::<u16>() > width {
        let Some(i) = (0..cols.len())
            .filter(|&i| !sorted(cols[i]) && cols[i].min_screen > 0)
            .max_by_key(|&i| cols[i].min_screen)
        else {
            break;
        };
        cols.remove(i);
    }
    cols
}

/// The cells of a watched process that exited, from its last row: its state X, and
/// when it went (in the command column, else after its name).
fn exited_cells(cols: &[&Col], last: &ProcFrame, t: f64, at: At, cmd: bool) -> Vec<String> {
    let mut cells: Vec<String> = cols.iter().map(|c| text(c, last, at)).collect();
    if let Some(i) = cols.iter().position(|c| c.id == ProcField::State) {
        cells[i] = "X".to_string();
    }
    if cmd {
        cells.push(format!(
            "exited {} UTC; last figures shown (pid {})",
            fmt::clock(t),
            last.pid
        ));
    } else if let Some(i) = cols.iter().position(|c| c.id == ProcField::Comm) {
        cells[i] = format!("{} exited", fmt::inert(&last.comm));
    }
    cells
}

/// Draw the table; what it returns is where its header cells and rows went (the mouse's
/// map of it).
pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) -> Mapped {
    if area.height < 3 {
        return None;
    }
    let at = At {
        secs: fr.interval_s.max(1e-9),
        now: fr.t,
    };
    let cols = columns(area.width, app.proc_sort, &app.hidden_cols);
    let fixed: u16 = cols.iter().map(|c| c.width + 1).sum();
    let show_cmd = area.width >= fixed + 20;
    let arrow = if app.proc_reverse { "▲" } else { "▼" };
    let body_h = area.height.saturating_sub(2) as usize; // title border + header
    let win = app.proc_window(fr, body_h);
    let (sel, worst) = (win.selected, win.worst);
    // The body: each row's style and cell texts, in display order.
    let mut rows: Vec<(Style, Vec<String>)> = Vec::with_capacity(body_h);
    for (i, r) in win.rows.iter().enumerate().map(|(i, r)| (win.first + i, r)) {
        let branch = win.prefix.get(i - win.first).map_or("", String::as_str);
        let selected = i == sel && win.total > 0;
        let TableRow::Proc(p) = r else {
            if let TableRow::Thread(t) = r {
                let style = if selected { th.selected } else { th.thread };
                rows.push((style, thread_cells(&cols, t, at, branch, show_cmd)));
            }
            continue;
        };
        let mut cells: Vec<String> = cols.iter().map(|c| text(c, p, at)).collect();
        if show_cmd {
            let cmd: std::borrow::Cow<str> = if p.gone {
                format!("exited this interval: {}", p.comm).into()
            } else if p.cmdline.is_empty() {
                format!("[{}]", p.comm).into()
            } else {
                (*p.cmdline).into()
            };
            cells.push(format!("{branch}{}", fmt::inert(&cmd)));
        } else if !branch.is_empty()
            && let Some(c) = cols.iter().position(|c| c.id == ProcField::Comm)
        {
            cells[c] = format!("{branch}{}", cells[c]);
        }
        rows.push((row_style(p, selected, worst, th), cells));
    }
    // Watched processes that exited: their last figures, and when. (Only with a filter,
    // and a filtered frame is small: looking a pid up among all rows is cheap.)
    let room = body_h.saturating_sub(rows.len());
    if room > 0 && !app.exited.is_empty() && !app.hide_exited {
        let text = app.narrow_text();
        let in_table = |pid: u32| {
            fr.procs
                .iter()
                .any(|p| p.pid == pid && text.is_none_or(|t| matches_text(p, t)))
        };
        for (pid, (t, last)) in app
            .exited
            .iter()
            .filter(|(pid, _)| !in_table(**pid))
            .take(room)
        {
            let mut last = last.clone();
            last.pid = *pid;
            rows.push((th.dim, exited_cells(&cols, &last, *t, at, show_cmd)));
        }
    }
    let mut widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width)).collect();
    if show_cmd {
        widths.push(Constraint::Min(10));
    }
    let procs = win.total - win.threads;
    let shown = if procs == fr.procs.len() {
        format!("{}", fr.procs.len())
    } else {
        format!("{procs} of {}", fr.procs.len())
    };
    let mut title = format!(
        " Processes {shown}  sorted by {} {arrow} ",
        app.proc_sort.name()
    );
    if app.tree && app.show_threads {
        title.push_str(&format!("as a tree with {} threads (t, H) ", win.threads));
    } else if app.tree {
        title.push_str("as a tree (t) ");
    }
    if app.hide_kernel {
        title.push_str("(kernel threads hidden: K) ");
    }
    if app.hide_exited {
        // Only on a filtered or small frame is app.exited non-empty; gone rows are few.
        let hidden = fr.procs.iter().filter(|p| p.gone).count()
            + app
                .exited
                .keys()
                .filter(|pid| !fr.procs.iter().any(|p| p.pid == **pid))
                .count();
        title.push_str(&format!("({hidden} exited hidden: x) "));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, th.title));
    let inner = block.inner(area);
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
    // The block and the header through ratatui's Table (one row); the body is written
    // straight into the buffer, cell by cell, where the Table would put it: building a
    // Table of ~45 rows (a Row, Cells, Text and Lines per cell) cost more than the rest
    // of the screen.
    let table = Table::new(Vec::<Row>::new(), widths.clone())
        .header(Row::new(header))
        .column_spacing(1)
        .block(block);
    // Only the block's border and the header row: given the whole area, the Table and
    // its Block re-apply their (default, so no-op) style to every cell of it, which cost
    // a quarter of a frame.
    let head = Rect {
        height: area.height.min(inner.y - area.y + 1),
        ..area
    };
    f.render_widget(table, head);
    let spans = column_spans(&widths, inner.width);
    let sorts = (cols.iter())
        .map(|c| c.sort.map(|_| SortKey::Proc(c.id)))
        .chain([None]);
    let geom = TableGeom {
        kind: TableKind::Procs,
        x: inner.x,
        width: inner.width,
        header_y: inner.y,
        body_y: inner.y + 1,
        rows: (win.rows.len() as u16).min(inner.height.saturating_sub(1)),
        first: win.first,
        header: header_cells(inner.x, &spans, sorts),
    };
    if inner.height < 2 {
        return Some(geom);
    }
    let body = Rect {
        y: inner.y + 1,
        height: inner.height - 1,
        ..inner
    };
    let buf = f.buffer_mut();
    for ((style, cells), y) in rows.iter().zip(body.y..body.bottom()) {
        let row = Rect {
            y,
            height: 1,
            ..body
        };
        if *style != Style::default() {
            buf.set_style(row, *style);
        }
        for (text, &(x, w)) in cells.iter().zip(&spans) {
            put_cell(buf, row.x + x, y, w, text);
        }
    }
    Some(geom)
}

/// The cells of a thread row of the tree (H): the columns a thread has its own figure
/// for, from its row; the others blank (the figure is its process's, not 0); its name
/// after the branches in the command column (else in COMM).
fn thread_cells(cols: &[&Col], t: &ThreadFrame, at: At, branch: &str, cmd: bool) -> Vec<String> {
    let p = as_proc(t);
    let mut cells: Vec<String> = (cols.iter())
        .map(|c| match PER_THREAD.contains(&c.id) {
            true => text(c, &p, at),
            false => String::new(),
        })
        .collect();
    let name = format!("{branch}{}", fmt::inert(&t.comm));
    if cmd {
        cells.push(name);
    } else if let Some(c) = cols.iter().position(|c| c.id == ProcField::Comm) {
        cells[c] = name;
    }
    cells
}

/// How a process row is drawn: selected, the worst miss, any miss, exited, or plain.
fn row_style(p: &ProcFrame, selected: bool, worst: f64, th: &Theme) -> Style {
    let missed = p.ghost_threads.unwrap_or(0) > 0 || p.miss() >= MISS_HIGHLIGHT;
    if selected {
        th.selected
    } else if missed && p.miss() >= worst && worst >= MISS_HIGHLIGHT {
        th.alert
    } else if missed {
        th.warn
    } else if p.gone {
        th.dim
    } else {
        th.normal
    }
}

/// Each column's (x offset, width) in a table `width` wide, as ratatui's Table lays
/// them out (no selection column, spacing 1, `Flex::Start`).
pub(super) fn column_spans(widths: &[Constraint], width: u16) -> Vec<(u16, u16)> {
    let [_, cols] = Layout::horizontal([Constraint::Length(0), Constraint::Fill(0)])
        .areas(Rect::new(0, 0, width, 1));
    Layout::horizontal(widths.iter().copied())
        .flex(Flex::Start)
        .spacing(1)
        .split(cols)
        .iter()
        .map(|r| (r.x, r.width))
        .collect()
}

/// The mouse's map of a header row drawn from screen column `x`: each column's span
/// (`column_spans`) with the sort a click on it picks.
pub(super) fn header_cells(
    x: u16,
    spans: &[(u16, u16)],
    sorts: impl Iterator<Item = Option<SortKey>>,
) -> Vec<HeaderCell> {
    (spans.iter().zip(sorts))
        .map(|(&(cx, w), sort)| HeaderCell {
            x0: x + cx,
            x1: x + cx + w,
            sort,
        })
        .collect()
}

/// Write one cell's text at (x, y), at most `w` columns, exactly as a ratatui Table
/// cell (a one-span Line, left-aligned, default style) renders it.
fn put_cell(buf: &mut Buffer, x: u16, y: u16, w: u16, text: &str) {
    let area = Rect::new(x, y, w, 1).intersection(buf.area);
    if area.is_empty() || text.is_empty() {
        return;
    }
    // Printable ASCII: one cell per byte (what the grapheme walk below does for it).
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        for (cx, b) in (area.x..area.right()).zip(text.bytes()) {
            buf[(cx, y)].set_char(char::from(b));
        }
        return;
    }
    let span = Span::raw(text);
    if span.width() > 0 {
        (&span).render(area, buf);
    }
}

#[cfg(test)]
#[path = "procs_tests.rs"]
mod tests;
