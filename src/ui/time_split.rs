//! The time view: where each process's threads spent the interval, as one bar per
//! process split by part (model::procs::wall), busiest-or-blocked first: on a CPU,
//! waiting for one, or off it for the cause its switch-out gave.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::model::Frame;
use crate::model::frame::ProcFrame;
use crate::model::procs::blocked::BlockedRow;
use crate::model::procs::wall::{PART_HELP, PARTS, TimeSplit};

/// One letter per part (the bar is drawn with them, so it reads without colour):
/// upper case where the thread wanted to run, lower case asleep by choice.
pub const GLYPHS: [char; PARTS.len()] =
    ['C', 'R', 'F', 'L', 'M', 'I', 'P', 'D', 'p', 's', 'r', 'o'];

const COLORS: [Color; PARTS.len()] = [
    Color::Green,
    Color::Yellow,
    Color::Magenta,
    Color::LightYellow,
    Color::LightCyan,
    Color::Red,
    Color::LightRed,
    Color::LightMagenta,
    Color::Blue,
    Color::Cyan,
    Color::LightBlue,
    Color::DarkGray,
];

/// Parts where a thread was running or wanted to (on CPU, runnable, futex, kernel lock,
/// mmap_lock, I/O, fault, other D): the sort key, so the processes whose time goes
/// somewhere come first.
const ACTIVE: usize = 8;

/// The columns (the help screen lists them, then one line per part).
pub const COLUMNS: &[(&str, &str)] = &[
    ("PID", "process ID"),
    ("COMM", "process name"),
    (
        "THR-S",
        "thread-seconds per second: its threads' time in the interval over its length (a process whose 4 threads lived all of it: 4.0)",
    ),
    (
        "BUSY",
        "of that, on a CPU, runnable or blocked (futex, kernel lock, mmap_lock, I/O, fault, other D), not asleep by choice; the sort key",
    ),
    (
        "WHERE THE TIME WENT",
        "a bar of the parts, one letter each (C on CPU, R runnable, F futex, L kernel lock, M mmap_lock, I block I/O, P page fault, D other uninterruptible, p poll, s sleep, r read, o other), and the biggest parts in %",
    ),
];

fn active(p: &ProcFrame) -> f64 {
    (0..ACTIVE).map(|i| p.time.part(i)).sum()
}

/// The bar of `width` cells: each part gets its share of the cells (largest remainders
/// first, so the cells add up), in part order.
pub fn bar(time: &TimeSplit, width: usize, th: &Theme) -> Line<'static> {
    let total = time.total();
    if total <= 0.0 || width == 0 {
        return Line::from("");
    }
    let exact: Vec<f64> = (0..PARTS.len())
        .map(|i| time.part(i) / total * width as f64)
        .collect();
    let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = width - cells.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for i in order {
        if left == 0 {
            break;
        }
        if exact[i] > 0.0 {
            cells[i] += 1;
            left -= 1;
        }
    }
    let spans: Vec<Span> = cells
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| {
            let style = if th.color {
                Style::default().fg(Color::Black).bg(COLORS[i])
            } else {
                th.normal
            };
            Span::styled(GLYPHS[i].to_string().repeat(*n), style)
        })
        .collect();
    Line::from(spans)
}

/// The biggest parts, "futex 62% io 20%".
pub fn biggest(time: &TimeSplit) -> String {
    let total = time.total();
    let mut parts: Vec<(usize, f64)> = (0..PARTS.len())
        .map(|i| (i, time.part(i) / total.max(1e-9)))
        .filter(|(_, s)| *s >= 0.005)
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .take(3)
        .map(|(i, s)| format!("{} {}%", PARTS[*i], fmt::pct(100.0 * s)))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, frame: &Frame, th: &Theme) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(
            " Where the time goes: each process's threads, by part of the interval ",
            th.title,
        ))
        .border_style(th.dim);
    let inner = block.inner(area);
    f.render_widget(block, area);
    // Blocked now, under the bars, for the processes shown (eBPF only).
    let blocked: Vec<&BlockedRow> = frame
        .blocked
        .iter()
        .flatten()
        .filter(|b| {
            frame
                .procs
                .iter()
                .find(|p| p.pid == b.pid)
                .is_none_or(|p| app.shows(p))
        })
        .collect();
    let blocked_h = if frame.blocked.is_some() && frame.interval_s > 0.0 {
        super::blocked::height(&blocked).min(inner.height / 2)
    } else {
        0
    };
    let [table_area, blocked_area, legend_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(blocked_h),
        Constraint::Length(2),
    ])
    .areas(inner);
    super::blocked::render(f, blocked_area, &blocked, th);
    let secs = frame.interval_s.max(1e-9);
    let mut rows: Vec<&ProcFrame> = frame
        .procs
        .iter()
        .filter(|p| p.time.measured() && p.time.total() > 0.0)
        .filter(|p| app.shows(p))
        .collect();
    if rows.is_empty() {
        let why = if frame.mode == "procfs" {
            "The time split needs eBPF: this session reads /proc only."
        } else if frame.interval_s <= 0.0 {
            "The time split shows from the second frame (one interval is needed)."
        } else {
            "No process's threads were seen by eBPF in this interval."
        };
        f.render_widget(Paragraph::new(Span::styled(why, th.dim)), table_area);
    } else {
        rows.sort_by(|a, b| active(b).total_cmp(&active(a)).then(a.pid.cmp(&b.pid)));
        // The bar takes what the figures and the 3 biggest parts in words leave.
        let bar_w = (table_area.width as usize)
            .saturating_sub(7 + 15 + 6 + 6 + 5 + 44)
            .clamp(10, 60);
        let body: Vec<Row> = rows
            .iter()
            .take(table_area.height.saturating_sub(1) as usize)
            .map(|p| {
                Row::new(vec![
                    Cell::from(p.pid.to_string()),
                    Cell::from(fmt::inert(&p.comm)),
                    Cell::from(fmt::fixed(p.time.total() / secs, 1)),
                    Cell::from(fmt::fixed(active(p) / secs, 2)),
                    Cell::from(bar(&p.time, bar_w, th)),
                    Cell::from(biggest(&p.time)),
                ])
            })
            .collect();
        let header =
            Row::new(["PID", "COMM", "THR-S", "BUSY", "WHERE THE TIME WENT", ""]).style(th.header);
        let table = Table::new(
            body,
            [
                Constraint::Length(7),
                Constraint::Length(15),
                Constraint::Length(6),
                Constraint::Length(6),
                Constraint::Length(bar_w as u16),
                Constraint::Min(10),
            ],
        )
        .header(header);
        f.render_widget(table, table_area);
    }
    let legend: Vec<Span> = PARTS
        .iter()
        .enumerate()
        .flat_map(|(i, name)| {
            let style = if th.color {
                Style::default().fg(Color::Black).bg(COLORS[i])
            } else {
                th.normal
            };
            [
                Span::styled(GLYPHS[i].to_string(), style),
                Span::styled(format!(" {name}  "), th.dim),
            ]
        })
        .collect();
    f.render_widget(
        Paragraph::new(Line::from(legend)).wrap(ratatui::widgets::Wrap { trim: true }),
        legend_area,
    );
}

/// The help screen's lines: the columns, then what each part means.
pub fn columns() -> Vec<(&'static str, &'static str)> {
    let mut v = COLUMNS.to_vec();
    v.extend(PARTS.iter().copied().zip(PART_HELP));
    v.extend(super::blocked::COLUMNS);
    v
}
