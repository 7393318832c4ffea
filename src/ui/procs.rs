//! Process table: the /proc scan's columns beside eBPF's. Rows where the scan misses most
//! (ghost threads, CPU the scan does not see) are highlighted.

use ratatui::Frame as TermFrame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Cell, Row, Table, Widget};

use super::fmt;
use super::futexes::dur_us;
use super::theme::Theme;
use crate::app::App;
use crate::app::sort::ProcSort;
use crate::app::state::matches_text;
use crate::model::Frame;
use crate::model::frame::ProcFrame;

/// A row is highlighted when the scan misses at least this many CPU percentage points
/// (or any ghost thread ran).
pub const MISS_HIGHLIGHT: f64 = 5.0;

pub struct Col {
    pub title: &'static str,
    /// What the column means and its unit (the help screen lists it).
    pub help: &'static str,
    width: u16,
    /// Shown only when the table is at least this wide.
    min_screen: u16,
    sort: Option<ProcSort>,
    value: fn(&ProcFrame, f64) -> String,
}

/// A figure of the /proc scan: "-" for a process that was gone when /proc was scanned
/// (the scan never read it this interval: not measured, not 0).
fn scanned(p: &ProcFrame, v: impl FnOnce() -> String) -> String {
    if p.gone { "-".to_string() } else { v() }
}

fn rate(v: Option<u64>, secs: f64) -> String {
    v.map_or("-".to_string(), |v| fmt::num(v as f64 / secs, 6))
}

pub const COLS: &[Col] = &[
    Col {
        title: "PID",
        help: "process ID",
        width: 7,
        min_screen: 0,
        sort: Some(ProcSort::Pid),
        value: |p, _| p.pid.to_string(),
    },
    Col {
        title: "COMM",
        help: "process name, as the kernel keeps it (/proc/PID/comm, 15 characters)",
        width: 15,
        min_screen: 0,
        sort: Some(ProcSort::Comm),
        value: |p, _| fmt::inert(&p.comm),
    },
    Col {
        title: "S",
        help: "state at the scan: R running or runnable, S sleeping, D uninterruptible, I idle kernel thread, T stopped, Z zombie; X gone before the scan",
        width: 1,
        min_screen: 56,
        sort: None,
        value: |p, _| p.state.to_string(),
    },
    Col {
        title: "THR",
        help: "threads the /proc scan found",
        width: 4,
        min_screen: 60,
        sort: Some(ProcSort::Threads),
        value: |p, _| scanned(p, || fmt::num(f64::from(p.threads_seen), 4)),
    },
    Col {
        title: "R",
        help: "of those, threads in state R (running or waiting for a CPU) at the scan",
        width: 3,
        min_screen: 100,
        sort: None,
        value: |p, _| scanned(p, || p.running_seen.to_string()),
    },
    Col {
        title: "NEW/s",
        help: "threads created per second (eBPF)",
        width: 6,
        min_screen: 70,
        sort: Some(ProcSort::Created),
        value: |p, s| rate(p.threads_created, s),
    },
    Col {
        title: "EXIT/s",
        help: "threads that exited per second (eBPF)",
        width: 7,
        min_screen: 70,
        sort: Some(ProcSort::Exited),
        value: |p, s| rate(p.threads_exited, s),
    },
    Col {
        title: "GHOST/s",
        help: "ghost threads per second: born and dead between two scans, so no scan (top, htop, ps) ever lists them (eBPF)",
        width: 8,
        min_screen: 48,
        sort: Some(ProcSort::Ghosts),
        value: |p, s| rate(p.ghost_threads, s),
    },
    Col {
        title: "GHOST%",
        help: "CPU the ghost threads used, in % of one CPU: the CPU a per-thread scan cannot attribute",
        width: 6,
        min_screen: 110,
        sort: None,
        value: |p, s| {
            p.ghost_cpu_ms
                .get()
                .map_or("-".into(), |v| fmt::pct(v / 10.0 / s))
        },
    },
    Col {
        title: "SCAN%",
        help: "CPU as top computes it per process, from utime+stime in /proc/PID/stat between two scans (its exited threads' CPU included), in % of one CPU; - in its first interval and when it was gone at the scan",
        width: 6,
        min_screen: 0,
        sort: Some(ProcSort::CpuScan),
        value: |p, _| p.cpu_pct_scan.get().map_or("-".into(), fmt::pct),
    },
    // What the threads' own counters add up to: TRUE% less this is what a per-thread
    // scan misses (the X sort and the highlight).
    Col {
        title: "THRD%",
        help: "what its threads' own counters add up to: the per-thread view (top -H, htop showing threads), in % of one CPU; TRUE% above it is what that view misses",
        width: 6,
        min_screen: 130,
        sort: None,
        value: |p, _| p.cpu_pct_scan_threads.get().map_or("-".into(), fmt::pct),
    },
    Col {
        title: "TRUE%",
        help: "CPU measured at every context switch (eBPF), exited threads included, in % of one CPU",
        width: 6,
        min_screen: 0,
        sort: Some(ProcSort::CpuTrue),
        value: |p, _| p.cpu_pct_true.map_or("-".into(), fmt::pct),
    },
    Col {
        title: "MISS%",
        help: "CPU a per-thread scan misses, in % of one CPU: TRUE% above THRD% (threads that ended between two scans, ghosts whole); all of TRUE% for a process gone at the scan; - without eBPF and in its first interval",
        width: 6,
        min_screen: 140,
        sort: Some(ProcSort::Miss),
        value: |p, _| p.scan_miss.get().map_or("-".into(), fmt::pct),
    },
    Col {
        title: "RQWAIT/s",
        help: "time its threads spent runnable but waiting for a CPU, per second of the interval (over 1s: several threads waiting at once)",
        width: 9,
        min_screen: 77,
        sort: Some(ProcSort::RunqWait),
        value: |p, s| p.runq_wait_ms.map_or("-".into(), |v| dur_us(v * 1e3 / s)),
    },
    Col {
        title: "RSS",
        help: "resident memory (K, M, G of 1024)",
        width: 6,
        min_screen: 120,
        sort: Some(ProcSort::Rss),
        value: |p, _| scanned(p, || fmt::kb(p.rss_kb)),
    },
];

/// The columns a table `width` wide shows: those the width has room for, and always
/// the one it is sorted by (in place of the ones that want the widest screen).
pub fn columns(width: u16, sort: ProcSort) -> Vec<&'static Col> {
    let sorted = |c: &Col| c.sort == Some(sort);
    let mut cols: Vec<&Col> = COLS
        .iter()
        .filter(|c| width >= c.min_screen || sorted(c))
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
fn exited_cells(cols: &[&Col], last: &ProcFrame, t: f64, secs: f64, cmd: bool) -> Vec<String> {
    let mut cells: Vec<String> = cols.iter().map(|c| (c.value)(last, secs)).collect();
    if let Some(i) = cols.iter().position(|c| c.title == "S") {
        cells[i] = "X".to_string();
    }
    if cmd {
        cells.push(format!(
            "exited {} UTC; last figures shown (pid {})",
            fmt::clock(t),
            last.pid
        ));
    } else if let Some(c) = cells.get_mut(1) {
        *c = format!("{} exited", fmt::inert(&last.comm));
    }
    cells
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    if area.height < 3 {
        return;
    }
    let secs = fr.interval_s.max(1e-9);
    let cols = columns(area.width, app.proc_sort);
    let fixed: u16 = cols.iter().map(|c| c.width + 1).sum();
    let show_cmd = area.width >= fixed + 20;
    let arrow = if app.proc_reverse { "▲" } else { "▼" };
    let body_h = area.height.saturating_sub(2) as usize; // title border + header
    let win = app.proc_window(fr, body_h);
    let (sel, worst) = (win.selected, win.worst);
    // The body: each row's style and cell texts, in display order.
    let mut rows: Vec<(Style, Vec<String>)> = Vec::with_capacity(body_h);
    for (i, p) in win.rows.iter().enumerate().map(|(i, p)| (win.first + i, p)) {
        let mut cells: Vec<String> = cols.iter().map(|c| (c.value)(p, secs)).collect();
        let branch = win.prefix.get(i - win.first).map_or("", String::as_str);
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
            && let Some(c) = cols.iter().position(|c| c.title == "COMM")
        {
            cells[c] = format!("{branch}{}", cells[c]);
        }
        rows.push((row_style(p, i == sel && win.total > 0, worst, th), cells));
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
            rows.push((th.dim, exited_cells(&cols, &last, *t, secs, show_cmd)));
        }
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
    let mut title = format!(
        " Processes {shown}  sorted by {} {arrow} ",
        app.proc_sort.name()
    );
    if app.tree {
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
    if inner.height < 2 {
        return;
    }
    let body = Rect {
        y: inner.y + 1,
        height: inner.height - 1,
        ..inner
    };
    let spans = column_spans(&widths, inner.width);
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
fn column_spans(widths: &[Constraint], width: u16) -> Vec<(u16, u16)> {
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
mod tests {
    use super::*;

    /// The Table-based renderer this one replaced, kept as the reference.
    #[allow(dead_code)]
    fn reference(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
        if area.height < 3 {
            return;
        }
        let secs = fr.interval_s.max(1e-9);
        let cols = columns(area.width, app.proc_sort);
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
            let cells = exited_cells(&cols, &last, *t, secs, show_cmd);
            rows.push(Row::new(cells.into_iter().map(Cell::from)).style(th.dim));
        }
        let mut widths: Vec<Constraint> =
            cols.iter().map(|c| Constraint::Length(c.width)).collect();
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
                    let got = draw(&app, w, h, render);
                    let want = draw(&app, w, h, reference);
                    assert_eq!(got, want, "{name} at {w}x{h}");
                }
            }
        }
    }
}
