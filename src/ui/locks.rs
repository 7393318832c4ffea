//! The kernel-lock view: lock:contention_begin/end waits by lock, caller and type (like
//! `perf lock contention`), and under them the mmap_lock story: who held whose lock, and
//! how many of its threads waited.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::futexes::dur_us;
use super::theme::Theme;
use crate::app::App;
use crate::app::contention_view::LockSort;
use crate::model::Frame;
use crate::model::contention_frame::{LockFrame, MmapLockFrame};

/// "pid R (comm) held pid V (comm)'s mmap_lock N ms; W threads of V waited T (max M)".
pub fn mmap_sentence(m: &MmapLockFrame, wide: bool) -> String {
    let who = |pid: u32, comm: &str| {
        if pid == 0 {
            "an unseen holder".to_string()
        } else if comm.is_empty() {
            format!("pid {pid}")
        } else {
            format!("pid {pid} ({})", fmt::inert(comm))
        }
    };
    let waiters = if m.waiter_pid == m.victim_pid {
        format!(
            "{} thread{} of {}",
            m.waiters,
            if m.waiters == 1 { "" } else { "s" },
            m.victim_pid
        )
    } else {
        format!(
            "{} thread{} of pid {}",
            m.waiters,
            if m.waiters == 1 { "" } else { "s" },
            m.waiter_pid
        )
    };
    if wide {
        format!(
            "{} held {}'s mmap_lock {}; {} waited {} (max {})",
            who(m.holder_pid, &m.holder_comm),
            who(m.victim_pid, &m.victim_comm),
            dur_us(m.hold_ms * 1e3),
            waiters,
            dur_us(m.total_wait_ms * 1e3),
            dur_us(m.max_wait_us)
        )
    } else {
        format!(
            "{} {} held {} {}: hold {}; {} thr waited {}",
            m.holder_pid,
            fmt::inert(&m.holder_comm),
            m.victim_pid,
            fmt::inert(&m.victim_comm),
            dur_us(m.hold_ms * 1e3),
            m.waiters,
            dur_us(m.total_wait_ms * 1e3)
        )
    }
}

struct Col {
    title: &'static str,
    width: u16,
    min_screen: u16,
    sort: Option<LockSort>,
    value: fn(&LockFrame, f64) -> String,
}

const COLS: &[Col] = &[
    Col {
        title: "TYPE",
        width: 10,
        min_screen: 0,
        sort: Some(LockSort::Type),
        value: |r, _| {
            if r.mmap_lock {
                format!("{}*", r.kind)
            } else {
                r.kind.clone()
            }
        },
    },
    Col {
        title: "CONT/s",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Contended),
        value: |r, s| fmt::num(r.contended as f64 / s, 7),
    },
    Col {
        title: "WAIT/s",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Wait),
        value: |r, s| dur_us(r.total_wait_ms * 1e3 / s),
    },
    Col {
        title: "MAX",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Max),
        value: |r, _| dur_us(r.max_wait_us),
    },
    Col {
        title: "AVG",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Avg),
        value: |r, _| dur_us(r.avg_wait_us),
    },
    Col {
        title: "LOCK",
        width: 18,
        min_screen: 140,
        sort: None,
        value: |r, _| r.lock.clone(),
    },
];

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let secs = fr.interval_s.max(1e-9);
    let mm = &fr.contention.mmap_lock;
    let mm_h = if mm.is_empty() {
        0
    } else {
        (mm.len() as u16 + 1).min(area.height / 2)
    };
    let [table, mmap] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(mm_h)]).areas(area);

    let cols: Vec<&Col> = COLS.iter().filter(|c| area.width >= c.min_screen).collect();
    let v = &app.contention;
    let arrow = if v.lock_reverse { "▲" } else { "▼" };
    let mut header: Vec<Cell> = cols
        .iter()
        .map(|c| {
            let sorted = c.sort == Some(v.lock_sort);
            let t = if sorted {
                format!("{}{arrow}", c.title)
            } else {
                c.title.to_string()
            };
            Cell::from(Span::styled(t, if sorted { th.warn } else { th.title }))
        })
        .collect();
    header.push(Cell::from(Span::styled("CALLER", th.title)));
    let show_waiters = area.width >= 110;
    if show_waiters {
        header.push(Cell::from(Span::styled("WAITERS", th.title)));
    }
    let rows_all = v.locks(fr);
    let body_h = table.height.saturating_sub(2) as usize;
    let rows: Vec<Row> = rows_all
        .iter()
        .take(body_h)
        .map(|r| {
            let mut cells: Vec<Cell> = cols
                .iter()
                .map(|c| Cell::from((c.value)(r, secs)))
                .collect();
            cells.push(Cell::from(fmt::inert(&r.caller)));
            if show_waiters {
                let w: Vec<String> = r
                    .waiters
                    .iter()
                    .take(3)
                    .map(|w| format!("{}({}) {}", fmt::inert(&w.comm), w.pid, w.contended))
                    .collect();
                let more = r.waiters.len().saturating_sub(3);
                let tail = if more > 0 {
                    format!(" +{more}")
                } else {
                    String::new()
                };
                cells.push(Cell::from(format!("{}{tail}", w.join(", "))));
            }
            let style = if r.mmap_lock && r.max_wait_us >= 10_000.0 {
                th.warn
            } else {
                th.normal
            };
            Row::new(cells).style(style)
        })
        .collect();
    let mut widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width)).collect();
    widths.push(Constraint::Min(16));
    if show_waiters {
        widths.push(Constraint::Min(20));
    }
    let title = format!(
        " Kernel locks: {} (* mmap_lock), sorted by {} (s: next column, S: reverse) ",
        rows_all.len(),
        v.lock_sort.name()
    );
    let empty = rows.is_empty();
    let t = Table::new(rows, widths).header(Row::new(header)).block(
        Block::default()
            .borders(Borders::TOP)
            .title(Span::styled(title, th.title)),
    );
    f.render_widget(t, table);
    if empty && table.height > 2 {
        let msg = if fr.mode == "bpf" {
            "  no kernel lock waits this interval"
        } else {
            "  needs eBPF (run as root)"
        };
        f.render_widget(
            Paragraph::new(Span::styled(msg, th.dim)),
            Rect {
                y: table.y + 2,
                height: 1,
                ..table
            },
        );
    }

    if mm_h > 0 {
        let wide = area.width >= 110;
        let mut lines = vec![Line::from(Span::styled(
            " mmap_lock: who held whose lock while its threads waited",
            th.title,
        ))];
        for m in mm.iter().take(mm_h.saturating_sub(1) as usize) {
            let style = if m.holder_pid != m.victim_pid && m.max_wait_us >= 10_000.0 {
                th.warn
            } else {
                th.normal
            };
            lines.push(Line::from(Span::styled(
                format!(" {}", mmap_sentence(m, wide)),
                style,
            )));
        }
        f.render_widget(Paragraph::new(lines), mmap);
    }
}
