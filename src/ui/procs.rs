//! Process table: the /proc scan's columns beside eBPF's. Rows where the scan misses most
//! (ghost threads, CPU the scan does not see) are highlighted.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::app::sort::ProcSort;
use crate::model::Frame;
use crate::model::frame::ProcFrame;

/// A row is highlighted when the scan misses at least this many CPU percentage points
/// (or any ghost thread ran).
pub const MISS_HIGHLIGHT: f64 = 5.0;

struct Col {
    title: &'static str,
    width: u16,
    /// Shown only when the table is at least this wide.
    min_screen: u16,
    sort: Option<ProcSort>,
    value: fn(&ProcFrame, f64) -> String,
}

fn rate(v: Option<u64>, secs: f64) -> String {
    v.map_or("-".to_string(), |v| fmt::num(v as f64 / secs, 6))
}

const COLS: &[Col] = &[
    Col {
        title: "PID",
        width: 7,
        min_screen: 0,
        sort: Some(ProcSort::Pid),
        value: |p, _| p.pid.to_string(),
    },
    Col {
        title: "COMM",
        width: 15,
        min_screen: 0,
        sort: Some(ProcSort::Comm),
        value: |p, _| fmt::inert(&p.comm),
    },
    Col {
        title: "S",
        width: 1,
        min_screen: 56,
        sort: None,
        value: |p, _| p.state.to_string(),
    },
    Col {
        title: "THR",
        width: 4,
        min_screen: 60,
        sort: Some(ProcSort::Threads),
        value: |p, _| fmt::num(f64::from(p.threads_seen), 4),
    },
    Col {
        title: "R",
        width: 3,
        min_screen: 100,
        sort: None,
        value: |p, _| p.running_seen.to_string(),
    },
    Col {
        title: "NEW/s",
        width: 6,
        min_screen: 70,
        sort: Some(ProcSort::Created),
        value: |p, s| rate(p.threads_created, s),
    },
    Col {
        title: "EXIT/s",
        width: 6,
        min_screen: 70,
        sort: Some(ProcSort::Exited),
        value: |p, s| rate(p.threads_exited, s),
    },
    Col {
        title: "GHOST/s",
        width: 7,
        min_screen: 48,
        sort: Some(ProcSort::Ghosts),
        value: |p, s| rate(p.ghost_threads, s),
    },
    Col {
        title: "GHOST%",
        width: 6,
        min_screen: 110,
        sort: None,
        value: |p, s| {
            p.ghost_cpu_ms
                .map_or("-".into(), |v| fmt::pct(v / 10.0 / s))
        },
    },
    Col {
        title: "SCAN%",
        width: 6,
        min_screen: 0,
        sort: Some(ProcSort::CpuScan),
        value: |p, _| fmt::pct(p.cpu_pct_scan),
    },
    Col {
        title: "TRUE%",
        width: 6,
        min_screen: 0,
        sort: Some(ProcSort::CpuTrue),
        value: |p, _| p.cpu_pct_true.map_or("-".into(), fmt::pct),
    },
    Col {
        title: "RQWAIT",
        width: 7,
        min_screen: 77,
        sort: Some(ProcSort::RunqWait),
        value: |p, s| {
            p.runq_wait_ms
                .map_or("-".into(), |v| format!("{}ms", fmt::num(v / s, 5)))
        },
    },
    Col {
        title: "RSS",
        width: 6,
        min_screen: 120,
        sort: Some(ProcSort::Rss),
        value: |p, _| fmt::kb(p.rss_kb),
    },
];

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    if area.height < 3 {
        return;
    }
    let secs = fr.interval_s.max(1e-9);
    let cols: Vec<&Col> = COLS.iter().filter(|c| area.width >= c.min_screen).collect();
    let fixed: u16 = cols.iter().map(|c| c.width + 1).sum();
    let show_cmd = area.width >= fixed + 20;
    let arrow = if app.proc_reverse { "▲" } else { "▼" };
    let mut header: Vec<Cell> = cols
        .iter()
        .map(|c| {
            let sorted = c.sort == Some(app.proc_sort);
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
        .map(|(i, p)| (win.first + i, p))
        .map(|(i, p)| {
            let mut cells: Vec<Cell> = cols
                .iter()
                .map(|c| Cell::from((c.value)(p, secs)))
                .collect();
            if show_cmd {
                let cmd: std::borrow::Cow<str> = if p.gone {
                    format!("exited, last figures: {}", p.comm).into()
                } else if p.cmdline.is_empty() {
                    format!("[{}]", p.comm).into()
                } else {
                    (*p.cmdline).into()
                };
                cells.push(Cell::from(fmt::inert(&cmd)));
            }
            let missed = p.ghost_threads.unwrap_or(0) > 0 || p.scan_miss >= MISS_HIGHLIGHT;
            let style = if i == sel && win.total > 0 {
                th.selected
            } else if missed && p.scan_miss >= worst && worst >= MISS_HIGHLIGHT {
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
        .filter(|(pid, _)| !win.contains(**pid))
        .take(room)
    {
        let mut cells: Vec<Cell> = cols
            .iter()
            .map(|c| Cell::from((c.value)(last, secs)))
            .collect();
        cells[2] = Cell::from("X");
        let note = format!(
            "exited {} UTC; last figures shown (pid {pid})",
            fmt::clock(*t)
        );
        if show_cmd {
            cells.push(Cell::from(note));
        } else if let Some(c) = cells.get_mut(1) {
            *c = Cell::from(format!("{} exited", fmt::inert(&last.comm)));
        }
        rows.push(Row::new(cells).style(th.dim));
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
