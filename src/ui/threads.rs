//! Thread view (Enter on a process): its threads as the scan saw them beside their eBPF
//! figures, and the threads no scan saw, grouped by name.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::fmt::dur_us;
use super::theme::Theme;
use super::time_split;
use crate::app::App;
use crate::model::Frame;
use crate::model::frame::ThreadFrame;

/// The thread table's columns: what each means and its unit (the help screen lists
/// them; the header is made from the names).
pub const COLUMNS: [(&str, &str); 9] = [
    ("TID", "thread ID"),
    ("NAME", "thread name (/proc/PID/task/TID/comm)"),
    (
        "S",
        "state at the scan (R running or runnable, S sleeping, D uninterruptible, ...)",
    ),
    (
        "SCAN%",
        "CPU as top -H computes it from the thread's utime+stime between two scans, in % of one CPU",
    ),
    (
        "TRUE%",
        "CPU measured at every context switch (eBPF), in % of one CPU",
    ),
    (
        "RQWAIT/s",
        "time the thread spent runnable but waiting for a CPU, per second",
    ),
    (
        "LATmax",
        "its longest wait for a CPU once runnable (woken or preempted), this interval",
    ),
    (
        "FUTEXwait",
        "time it spent blocked in futex waits during the interval",
    ),
    (
        "SPLIT",
        "where the thread's time went: its interval split by part, as in the time view (8): a bar, one letter a part (C on CPU, R runnable, F futex, I block I/O, P page fault, D other uninterruptible, p poll, s sleep, r read, o other), then its biggest parts; - where eBPF has no entry for it",
    ),
];

/// Cells of the fixed columns and the spaces between the columns: the time split takes
/// what is left.
const FIXED: u16 = 8 + 16 + 1 + 6 + 6 + 8 + 8 + 9 + 9;

/// The line for one group of ghost threads.
pub fn ghost_line(count: u64, name: &str, cpu_ms: f64) -> String {
    format!(
        "{count} short-lived threads named {}: never seen by a scan, {:.0} ms CPU",
        fmt::inert(name),
        cpu_ms,
    )
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, pid: u32, th: &Theme) {
    if area.height < 3 {
        return;
    }
    let secs = fr.interval_s.max(1e-9);
    let proc = fr.procs.iter().find(|p| p.pid == pid);
    let comm = proc.map_or_else(|| "exited".to_string(), |p| fmt::inert(&p.comm));
    let mut threads: Vec<&ThreadFrame> = fr.threads.iter().filter(|t| t.pid == pid).collect();
    threads.sort_by(|a, b| {
        let k = |t: &ThreadFrame| {
            t.cpu_pct_true
                .get()
                .or(t.cpu_pct_scan.get())
                .unwrap_or(-1.0)
        };
        k(b).partial_cmp(&k(a))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.tid.cmp(&b.tid))
    });
    let churn = proc.map_or(String::new(), |p| {
        format!(
            "  created {}/s  exited {}/s",
            p.threads_created
                .map_or("-".into(), |v| fmt::num(v as f64 / secs, 6)),
            p.threads_exited
                .map_or("-".into(), |v| fmt::num(v as f64 / secs, 6)),
        )
    });
    let title = format!(
        " Threads of {pid} ({comm}): {} seen{churn}  Esc back ",
        threads.len()
    );
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, th.title));
    let inner = block.inner(area);
    f.render_widget(block, area);

    let ghosts: Vec<Line> = fr
        .ghost_groups
        .iter()
        .filter(|g| g.pid == pid)
        .take(3)
        .map(|g| {
            Line::from(Span::styled(
                ghost_line(g.count, &g.name, g.cpu_ms),
                th.warn,
            ))
        })
        .collect();
    let gh = (ghosts.len() as u16).min(inner.height.saturating_sub(2));
    let [ghost_area, table_area] =
        Layout::vertical([Constraint::Length(gh), Constraint::Min(0)]).areas(inner);
    f.render_widget(Paragraph::new(ghosts), ghost_area);

    // Per-thread figures from the latency and futex collectors, when present.
    let lat: foldhash::HashMap<u32, f64> = fr
        .latency
        .iter()
        .flat_map(|l| l.threads.iter())
        .filter(|r| r.pid == pid)
        .map(|r| (r.tid, r.max_us))
        .collect();
    let fut: foldhash::HashMap<u32, f64> = fr
        .contention
        .futex_threads
        .iter()
        .filter(|r| r.pid == pid)
        .map(|r| (r.tid, r.total_wait_ms))
        .collect();
    let header = Row::new(COLUMNS.map(|(name, _)| Cell::from(name))).style(th.title);
    let split_w = table_area.width.saturating_sub(FIXED) as usize;
    let rows: Vec<Row> = threads
        .iter()
        .take(table_area.height.saturating_sub(1) as usize)
        .map(|t| {
            Row::new(vec![
                Cell::from(t.tid.to_string()),
                Cell::from(fmt::inert(&t.comm)),
                Cell::from(t.state.to_string()),
                Cell::from(t.cpu_pct_scan.get().map_or("-".into(), fmt::pct)),
                Cell::from(t.cpu_pct_true.get().map_or("-".into(), fmt::pct)),
                Cell::from(
                    t.runq_wait_ms
                        .get()
                        .map_or("-".into(), |v| dur_us(v * 1e3 / secs)),
                ),
                Cell::from(lat.get(&t.tid).map_or("-".into(), |v| dur_us(*v))),
                Cell::from(fut.get(&t.tid).map_or("-".into(), |v| dur_us(v * 1e3))),
                Cell::from(split(t, split_w, th)),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(8),
        Constraint::Length(16),
        Constraint::Length(1),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Min(0),
    ];
    let _ = app;
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        table_area,
    );
}

/// The thread's time split in `w` cells: a bar of up to half of them (at least 8) and
/// its biggest parts in words after it; "-" when it was not measured.
fn split(t: &ThreadFrame, w: usize, th: &Theme) -> Line<'static> {
    if !t.time.measured() || t.time.total() <= 0.0 {
        return Line::from("-");
    }
    let bar_w = (w / 2).clamp(8, 40).min(w);
    let mut line = time_split::bar(&t.time, bar_w, th);
    if w > bar_w + 1 {
        line.spans
            .push(Span::raw(format!(" {}", time_split::biggest(&t.time))));
    }
    line
}
