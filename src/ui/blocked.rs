//! The time view's Blocked now: the threads in an uninterruptible sleep at the tick,
//! longest first, with the frame of their kernel stack that says why and the stack
//! itself (innermost first), as `cat /proc/PID/task/TID/stack` would show it.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::fmt::dur_us;
use super::theme::Theme;
use crate::model::procs::blocked::{BlockedRow, why};

/// The columns (the help screen lists them after the time view's).
pub const COLUMNS: &[(&str, &str)] = &[
    (
        "Blocked now",
        "threads in an uninterruptible sleep (D) at the tick, longest first: block I/O, a page fault, or another kernel wait",
    ),
    ("TID / PID", "the thread and its process"),
    (
        "PART",
        "the part of the time split it is in: io, fault or uninterruptible",
    ),
    ("FOR", "how long it has been asleep, at the tick"),
    (
        "WHY",
        "the innermost frame of its kernel stack that is not a generic wait (io_schedule, schedule_timeout...)",
    ),
    (
        "CALLED FROM",
        "the rest of the kernel stack it went to sleep in, WHY's caller first, read by an eBPF task iterator at the tick (- : not known, as on a kernel without task iterators); JSON blocked[].stack has all of it",
    ),
];

/// Lines the section wants for `rows` (a title line and a header, or one line).
pub fn height(rows: &[&BlockedRow]) -> u16 {
    if rows.is_empty() {
        1
    } else {
        2 + rows.len().min(8) as u16
    }
}

pub fn render(f: &mut TermFrame, area: Rect, rows: &[&BlockedRow], th: &Theme) {
    if area.height == 0 {
        return;
    }
    if rows.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "Blocked now: no thread in an uninterruptible sleep at the tick.",
                th.dim,
            )),
            area,
        );
        return;
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(
            " Blocked now: uninterruptible at the tick, longest first ",
            th.title,
        ))
        .border_style(th.dim);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let body: Vec<Row> = rows
        .iter()
        .take(inner.height.saturating_sub(1) as usize)
        .map(|r| {
            Row::new(vec![
                Cell::from(r.tid.to_string()),
                Cell::from(fmt::inert(&r.comm)),
                Cell::from(r.pid.to_string()),
                Cell::from(r.part),
                Cell::from(dur_us(r.for_ms * 1e3)),
                Cell::from(why(&r.stack).map_or("-".to_string(), fmt::inert)),
                Cell::from(callers(&r.stack)),
            ])
        })
        .collect();
    let header =
        Row::new(["TID", "COMM", "PID", "PART", "FOR", "WHY", "CALLED FROM"]).style(th.header);
    let table = Table::new(
        body,
        [
            Constraint::Length(8),
            Constraint::Length(16),
            Constraint::Length(7),
            Constraint::Length(15),
            Constraint::Length(8),
            Constraint::Length(26),
            Constraint::Min(10),
        ],
    )
    .header(header);
    f.render_widget(table, inner);
}

/// The frames after WHY's, "filemap_fault < __do_fault < ...".
fn callers(stack: &[String]) -> String {
    let Some(w) = why(stack) else {
        return "-".to_string();
    };
    let at = stack.iter().position(|f| f == w).map_or(0, |i| i + 1);
    fmt::inert(&stack[at..].join(" < "))
}
