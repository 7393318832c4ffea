//! The latency view: how long threads waited for a CPU once runnable (woken, or
//! preempted), per CPU and per thread, worst first, with when the worst wait ended —
//! `perf sched latency`, live.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::fmt::dur_us;
use super::theme::Theme;
use crate::app::App;
use crate::app::irq_view::LatSort;
use crate::model::Frame;

/// The two tables' columns (the help screen lists them).
pub const COLUMNS: &[(&str, &str)] = &[
    ("CPU", "CPU number: the waits for this CPU"),
    ("TID, PID", "thread and its process"),
    ("COMM", "thread name"),
    (
        "WAITS/s",
        "waits per second: times a thread became runnable (woken, or preempted) and then got a CPU",
    ),
    ("AVG", "mean wait from runnable to running"),
    (
        "P50, P99",
        "median and 99th percentile wait (within one 12.5% histogram slot)",
    ),
    ("MAX", "the longest wait in the interval (exact)"),
    (
        "MAX AT (UTC)",
        "when the longest wait ended (the thread got the CPU), to the millisecond",
    ),
];

pub(crate) const CPU_HEADER: [&str; 7] =
    ["CPU", "WAITS/s", "AVG", "P50", "P99", "MAX", "MAX AT (UTC)"];

/// Wall-clock seconds as UTC "HH:MM:SS.mmm".
pub fn clock_ms(t: f64) -> String {
    if t <= 0.0 {
        return "-".into();
    }
    format!("{}.{:03}", fmt::clock(t), ((t.fract()) * 1e3) as u32 % 1000)
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), dur_us)
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let secs = fr.interval_s.max(1e-9);
    let Some(lat) = fr.latency.as_ref() else {
        f.render_widget(
            Paragraph::new(" scheduling latency needs eBPF (run as root)").style(th.dim),
            area,
        );
        return;
    };
    let cpu_h = (lat.cpus.len() as u16 + 2)
        .min(area.height.saturating_sub(6) / 2)
        .max(3);
    let [cpus, threads, note] = Layout::vertical([
        Constraint::Length(cpu_h),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let head = Row::new(CPU_HEADER.map(Cell::from)).style(th.header);
    let rows: Vec<Row> = lat
        .cpus
        .iter()
        .map(|c| {
            Row::new(vec![
                Cell::from(c.cpu.to_string()),
                Cell::from(fmt::num(c.count as f64 / secs, 7)),
                Cell::from(opt_us(c.avg_us)),
                Cell::from(opt_us(c.p50_us)),
                Cell::from(opt_us(c.p99_us)),
                Cell::from(opt_us(c.max_us)).style(th.truth),
                Cell::from(c.max_at.map_or_else(|| "-".into(), clock_ms)),
            ])
        })
        .collect();
    let widths = [4, 8, 8, 8, 8, 8, 13].map(Constraint::Length);
    f.render_widget(
        Table::new(rows, widths).header(head).block(
            Block::default()
                .borders(Borders::TOP)
                .title(" run-queue latency per CPU (runnable -> on CPU) ")
                .title_style(th.title),
        ),
        cpus,
    );

    let v = &app.irq;
    let title = |name: &'static str, s: LatSort| {
        if v.lat_sort == s {
            format!("{name}{}", if v.lat_reverse { "▲" } else { "▼" })
        } else {
            name.to_string()
        }
    };
    let wide = threads.width >= 100;
    let head = Row::new(vec![
        Cell::from(title("TID", LatSort::Tid)),
        Cell::from(if wide { "PID" } else { "" }),
        Cell::from("COMM"),
        Cell::from(title(LatSort::Count.name(), LatSort::Count)),
        Cell::from(title("AVG", LatSort::Avg)),
        Cell::from(title("P50", LatSort::P50)),
        Cell::from(title("P99", LatSort::P99)),
        Cell::from(title("MAX", LatSort::Max)),
        Cell::from("MAX AT (UTC)"),
    ])
    .style(th.header);
    let rows: Vec<Row> = v
        .threads(fr)
        .iter()
        .map(|t| {
            let style = if t.max_us >= 10_000.0 {
                th.warn
            } else {
                th.normal
            };
            Row::new(vec![
                Cell::from(t.tid.to_string()),
                Cell::from(if wide {
                    t.pid.to_string()
                } else {
                    String::new()
                }),
                Cell::from(fmt::inert(&t.comm)),
                Cell::from(fmt::num(t.count as f64 / secs, 7)),
                Cell::from(dur_us(t.avg_us)),
                Cell::from(dur_us(t.p50_us)),
                Cell::from(dur_us(t.p99_us)),
                Cell::from(dur_us(t.max_us)),
                Cell::from(clock_ms(t.max_at)),
            ])
            .style(style)
        })
        .collect();
    let pid_w = if wide { 7 } else { 0 };
    let comm_w = threads
        .width
        .saturating_sub(7 + pid_w + 7 * 5 + 13 + 9)
        .clamp(8, 32);
    let widths = [7, pid_w, comm_w, 7, 7, 7, 7, 7, 13].map(Constraint::Length);
    f.render_widget(
        Table::new(rows, widths).header(head).block(
            Block::default()
                .borders(Borders::TOP)
                .title(format!(
                    " threads by {} ({} waited; s: sort, S: reverse) ",
                    v.lat_sort.name(),
                    lat.threads_total
                ))
                .title_style(th.title),
        ),
        threads,
    );
    let lost = fr.drops_by_map.lat_stale + fr.drops_by_map.lat_threads;
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(
                " p50/p99 within one 12.5% histogram slot; max exact",
                th.dim,
            ),
            Span::styled(
                if lost > 0 {
                    format!(" · {lost} waits unknowable (missed events)")
                } else {
                    String::new()
                },
                th.warn,
            ),
        ])),
        note,
    );
}
