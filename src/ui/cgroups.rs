//! The cgroup view: the cgroup v2 tree with each cgroup's CPU, throttling, pressure,
//! memory and I/O, and (eBPF) its runnable threads and run-queue wait; the selected
//! cgroup's figures in full below it.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};

use super::Mapped;
use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::app::mouse::{TableGeom, TableKind};
use crate::model::Frame;
use crate::model::cgroup::{CgroupFrame, PressureFrame};
use crate::model::findings::cgroup::{PRESSURE_FULL_PCT, THROTTLED_PCT};

/// The columns (the help screen lists them).
pub const COLUMNS: &[(&str, &str)] = &[
    (
        "CGROUP",
        "the cgroup v2 tree; systemd units by name, containers and pods by short id",
    ),
    ("PROCS", "processes in it and below it"),
    ("CPU%", "CPU used (cpu.stat usage), 100 = one CPU"),
    ("QUOTA", "cpu.max as CPUs; - without a quota"),
    ("THR%", "share of cpu.max periods in which it was throttled"),
    (
        "THR/s",
        "time its threads were held off the CPU by the quota, ms per second",
    ),
    (
        "PSI C/M/I",
        "pressure: CPU some, memory full, I/O full (avg10, %)",
    ),
    ("MEM", "memory.current"),
    ("LIMIT", "memory.high, else memory.max; - without one"),
    ("RUN", "runnable threads, time-weighted (eBPF)"),
    (
        "WAIT/s",
        "run-queue wait of its threads, ms per second (eBPF)",
    ),
    ("IO R/W", "io.stat bytes read and written per second"),
];

fn bytes(b: u64) -> String {
    fmt::kb(b / 1024)
}

fn full(p: Option<PressureFrame>) -> Option<f64> {
    p.and_then(|p| p.full_avg10)
}

fn psi(c: &CgroupFrame) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.0}"));
    format!(
        "{}/{}/{}",
        f(c.cpu_pressure.map(|p| p.some_avg10)),
        f(full(c.memory_pressure)),
        f(full(c.io_pressure))
    )
}

/// Throttled or stalled past a finding's bar.
fn hot(c: &CgroupFrame) -> bool {
    c.throttled_pct.is_some_and(|p| p >= THROTTLED_PCT)
        || [full(c.memory_pressure), full(c.io_pressure)]
            .iter()
            .any(|v| v.is_some_and(|v| v >= PRESSURE_FULL_PCT))
}

fn row(c: &CgroupFrame, secs: f64, width: u16) -> Row<'static> {
    let name = format!("{}{}", "  ".repeat(c.depth as usize), fmt::inert(&c.name));
    let limit = c.memory_high.or(c.memory_max);
    let dash = || "-".to_string();
    let mut cells = vec![
        name,
        c.procs_total.to_string(),
        fmt::opt(c.cpu_pct, 6),
        c.cpu_limit.map_or_else(dash, |l| fmt::fixed(l, 2)),
        c.throttled_pct.map_or_else(dash, fmt::pct),
    ];
    if width >= 100 {
        cells.push(fmt::opt(c.throttled_ms.map(|ms| ms / secs), 6));
    }
    cells.extend([
        psi(c),
        c.memory_current.map_or_else(dash, bytes),
        limit.map_or_else(dash, bytes),
    ]);
    if width >= 120 {
        cells.extend([
            c.runnable_avg.map_or_else(dash, |v| fmt::fixed(v, 1)),
            fmt::opt(c.runq_wait_ms.map(|ms| ms / secs), 6),
            match (c.io_read_bps, c.io_write_bps) {
                (Some(r), Some(w)) => format!("{}/{}", bytes(r as u64), bytes(w as u64)),
                _ => dash(),
            },
        ]);
    }
    Row::new(cells.into_iter().map(Cell::from).collect::<Vec<_>>())
}

/// "some/full" avg10, then the same share of this interval from the totals.
fn pressure_text(what: &str, p: Option<PressureFrame>) -> String {
    let Some(p) = p else {
        return format!("{what} -");
    };
    let v = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| fmt::fixed(v, 1));
    format!(
        "{what} {}/{} ({}/{})",
        fmt::fixed(p.some_avg10, 1),
        v(p.full_avg10),
        v(p.some_pct),
        v(p.full_pct)
    )
}

/// The selected cgroup's figures in full.
fn detail(c: &CgroupFrame, fr: &Frame) -> Vec<Line<'static>> {
    let names: Vec<String> = c
        .top_pids
        .iter()
        .map(|&pid| {
            fr.procs.iter().find(|p| p.pid == pid).map_or_else(
                || pid.to_string(),
                |p| format!("{}({pid})", fmt::inert(&p.comm)),
            )
        })
        .collect();
    let o = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| v.to_string());
    let b = |v: Option<u64>| v.map_or_else(|| "-".into(), bytes);
    vec![
        Line::from(format!(" {}", fmt::inert(&c.path))),
        Line::from(format!(
            " cpu.max periods {} throttled {} ({} ms) · memory {} high {} max {} · over high {} · oom kills {}",
            o(c.periods),
            o(c.throttled_periods),
            c.throttled_ms
                .map_or_else(|| "-".into(), |v| fmt::fixed(v, 0)),
            b(c.memory_current),
            b(c.memory_high),
            b(c.memory_max),
            o(c.high_events),
            o(c.oom_kills),
        )),
        Line::from(format!(
            " pressure some/full avg10 (this interval) %: {} · {} · {}",
            pressure_text("cpu", c.cpu_pressure),
            pressure_text("mem", c.memory_pressure),
            pressure_text("io", c.io_pressure)
        )),
        Line::from(format!(
            " busiest {}",
            if names.is_empty() {
                "-".into()
            } else {
                names.join(" ")
            }
        )),
    ]
}

/// Draw the view; what it returns is where the tree's rows went (a click selects one).
pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) -> Mapped {
    if fr.cgroups.is_empty() {
        f.render_widget(
            Paragraph::new(" no cgroup v2 hierarchy is mounted (or this recording has none)")
                .style(th.dim),
            area,
        );
        return None;
    }
    let secs = fr.interval_s.max(1e-9);
    let w = area.width;
    // The findings, one line each, above the tree (as on the overview).
    let most = if area.height >= 20 { 3 } else { 1 };
    let lines: Vec<_> = super::findings::lines(fr, most, app.finding_sel, th)
        .into_iter()
        .map(|l| super::findings::fit(l, usize::from(w)))
        .collect();
    let [head_area, table, info, note] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Min(3),
        Constraint::Length(4),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(lines), head_area);
    let mut head = vec!["CGROUP", "PROCS", "CPU%", "QUOTA", "THR%"];
    let mut widths = vec![0u16, 5, 6, 5, 5];
    if w >= 100 {
        head.push("THR/s");
        widths.push(6);
    }
    head.extend(["PSI C/M/I", "MEM", "LIMIT"]);
    widths.extend([10, 6, 6]);
    if w >= 120 {
        head.extend(["RUN", "WAIT/s", "IO R/W"]);
        widths.extend([5, 6, 11]);
    }
    let fixed: u16 = widths.iter().sum::<u16>() + widths.len() as u16;
    widths[0] = table.width.saturating_sub(fixed).max(12);
    let sel = app.cgroups.sel.min(fr.cgroups.len() - 1);
    let rows: Vec<Row> = fr
        .cgroups
        .iter()
        .map(|c| row(c, secs, w).style(if hot(c) { th.warn } else { th.normal }))
        .collect();
    let title = format!(
        " cgroups ({}; ↑/↓ select) ",
        fr.cgroups.first().map_or("/", |c| c.path.as_str())
    );
    let mut state = TableState::default().with_selected(Some(sel));
    f.render_stateful_widget(
        Table::new(rows, widths.into_iter().map(Constraint::Length))
            .header(Row::new(head).style(th.header))
            .row_highlight_style(th.selected)
            .block(
                Block::default()
                    .borders(Borders::TOP)
                    .title(title)
                    .title_style(th.title),
            ),
        table,
        &mut state,
    );
    // The rows drawn: under the block's border and the header, from the offset ratatui
    // scrolled to so the selection shows.
    let geom = TableGeom {
        kind: TableKind::Cgroups,
        x: table.x,
        width: table.width,
        header_y: table.y + 1,
        body_y: table.y + 2,
        rows: (fr.cgroups.len() - state.offset()).min(usize::from(table.height.saturating_sub(2)))
            as u16,
        first: state.offset(),
        header: Vec::new(),
    };
    f.render_widget(Paragraph::new(detail(&fr.cgroups[sel], fr)), info);
    let why = if fr.mode == "bpf" {
        ""
    } else {
        " · RUN and WAIT/s need eBPF"
    };
    f.render_widget(
        Paragraph::new(Line::from(vec![Span::styled(
            format!(" PSI: C cpu some, M/I memory and I/O full, avg10 %{why}"),
            th.dim,
        )])),
        note,
    );
    Some(geom)
}
