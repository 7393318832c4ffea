//! Per-core panel: utilisation from /proc/stat, run-queue length (eBPF, time-weighted avg
//! and max), context switches and migrations per second.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use super::fmt;
use super::theme::Theme;
use crate::model::Frame;
use crate::model::frame::CpuFrame;

/// The per-CPU panel's columns (the help screen lists them).
pub const COLUMNS: &[(&str, &str)] = &[
    ("CPU", "CPU number"),
    (
        "UTIL",
        "busy share of the interval, % (100 - idle - iowait; /proc/stat), and its bar",
    ),
    ("USR", "user time, % (user + nice)"),
    ("SYS", "kernel time, %"),
    ("IRQ", "interrupt and softirq time, %"),
    ("IOW", "iowait: idle with I/O outstanding, %"),
    ("STL", "steal: time the hypervisor ran something else, %"),
    (
        "RQ avg",
        "run-queue length averaged over the interval: threads running or waiting on this CPU (eBPF)",
    ),
    (
        "max",
        "the longest run queue seen on it during the interval",
    ),
    ("SW/s", "context switches on this CPU per second (eBPF)"),
    ("MIG/s", "threads migrated to this CPU per second (eBPF)"),
];

pub(crate) const HEADER: [&str; 12] = [
    "CPU", " UTIL", "", " USR", " SYS", " IRQ", " IOW", " STL", "RQ avg", " max", "  SW/s", "MIG/s",
];

fn bar(util: f64, w: usize) -> String {
    let full = ((util / 100.0) * w as f64).round().clamp(0.0, w as f64) as usize;
    format!("{}{}", "█".repeat(full), "·".repeat(w - full))
}

fn row<'a>(c: &CpuFrame, secs: f64, bar_w: usize, th: &Theme) -> Row<'a> {
    let rate = |v: Option<u64>| v.map_or("-".to_string(), |v| fmt::num(v as f64 / secs, 6));
    let util_style = if c.util >= 90.0 { th.warn } else { th.normal };
    Row::new(vec![
        Cell::from(format!("{:>3}", c.cpu)),
        Cell::from(Span::styled(format!("{:>5}", fmt::pct(c.util)), util_style)),
        Cell::from(Span::styled(bar(c.util, bar_w), th.truth)),
        Cell::from(format!("{:>4}", fmt::fixed(c.user, 0))),
        Cell::from(format!("{:>4}", fmt::fixed(c.system, 0))),
        Cell::from(format!("{:>4}", fmt::fixed(c.irq + c.softirq, 0))),
        Cell::from(format!("{:>4}", fmt::fixed(c.iowait, 0))),
        Cell::from(format!("{:>4}", fmt::fixed(c.steal, 0))),
        Cell::from(format!("{:>6}", fmt::opt(c.runq_avg, 6))),
        Cell::from(format!(
            "{:>4}",
            c.runq_max.map_or("-".into(), |v| v.to_string())
        )),
        Cell::from(format!("{:>6}", rate(c.switches))),
        Cell::from(format!("{:>5}", rate(c.migrations))),
    ])
}

pub fn render(f: &mut TermFrame, area: Rect, fr: &Frame, th: &Theme) {
    if area.height < 2 {
        return;
    }
    let secs = fr.interval_s.max(1e-9);
    let bar_w = (area.width as usize).saturating_sub(70).clamp(4, 40);
    let header = Row::new(HEADER.map(Cell::from)).style(th.title);
    let room = area.height as usize - 1;
    let n = fr.cpus.len();
    let mut rows: Vec<Row> = Vec::with_capacity(room);
    if n <= room {
        rows.extend(fr.cpus.iter().map(|c| row(c, secs, bar_w, th)));
    } else {
        // Not enough rows: the busiest CPUs, then a line that says how many are hidden.
        let mut busy: Vec<&CpuFrame> = fr.cpus.iter().collect();
        busy.sort_by(|a, b| {
            b.util
                .partial_cmp(&a.util)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        rows.extend(busy.iter().take(room - 1).map(|c| row(c, secs, bar_w, th)));
        rows.push(Row::new(vec![Cell::from(Span::styled(
            format!("… {} more CPUs (busiest shown)", n - (room - 1)),
            th.dim,
        ))]));
    }
    let widths = [
        Constraint::Length(3),
        Constraint::Length(5),
        Constraint::Length(bar_w as u16),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(5),
    ];
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}
