//! The profile view (6): a flame graph of the on-CPU stacks drawn in the terminal, root
//! at the bottom as flamegraph.pl and seed 004 draw it, or a `perf report` style table
//! of functions (`t`). Widths are shares of the zoomed frame's samples; names are cut to
//! fit. Colour is never the only cue: the selected frame is reversed, search matches are
//! bold and underlined, plateaus (frames with at least 10% of the shown samples as self
//! time) end in `▲`, kernel frames end in `_[k]`.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell as TCell, Paragraph, Row, Table};

use super::theme::Theme;
use crate::app::App;
use crate::model::Frame;
use crate::model::profile::flame::{self, Cell, Node};

/// The graph's cues and the table's columns (the help screen lists them).
pub const COLUMNS: &[(&str, &str)] = &[
    (
        "width",
        "a frame's share of the samples (or of the time off the CPU) shown, its callees included",
    ),
    (
        "▲",
        "a plateau: at least 10% of the shown samples in the frame itself",
    ),
    ("_[k]", "a kernel frame"),
    (
        "SELF%, SELF",
        "samples (ms off the CPU) in the function itself",
    ),
    (
        "TOTAL%, TOTAL",
        "samples (ms) in the function and what it called",
    ),
    (
        "≈, 1/N waits",
        "off-CPU waits came faster than ttop unwinds their stacks: one in N was kept, at random, and counted N times, so the times are estimates",
    ),
];

/// Self time that makes a frame a plateau: this share of the shown samples.
pub const PLATEAU: f64 = 0.10;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let pv = &app.profile;
    let [title, body, status, search] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let stacks = pv.stacks();
    let root = flame::tree(stacks.iter().map(|(s, n)| (s.as_str(), *n)));
    let total = root.total;
    let window = if pv.all_time {
        "since start".to_string()
    } else {
        format!("last {}", crate::app::profile_view::RECENT)
    };
    let kind = if pv.off_cpu { "off-CPU time" } else { "on-CPU" };
    // Waits faster than the reader unwinds are kept at random, each counting for those
    // it stands for: the time shown is then an estimate.
    let sampled = pv
        .waits_kept()
        .filter(|&(w, k)| k > 0 && k < w)
        .map(|(w, k)| super::fmt::fixed(w as f64 / k as f64, 0));
    let mut head = if pv.seen {
        format!(
            " {kind}, {window} ({} s): {}{}",
            super::fmt::fixed(pv.window_s(), 0),
            if sampled.is_some() { "≈" } else { "" },
            pv.amount(total)
        )
    } else {
        // No stacks came yet: nothing was counted, not zero.
        format!(" {kind}, {window}: no stacks yet")
    };
    if let Some(n) = sampled {
        head.push_str(&format!(", 1/{n} waits"));
    }
    if let Some(p) = pv.pid {
        head.push_str(&format!(", pid {p}"));
    }
    if let Some(z) = pv.zoom.last() {
        head.push_str(&format!("  zoom: {z} (depth {})", pv.zoom.len()));
    }
    head.push_str(if pv.table {
        "  [table]"
    } else {
        "  [root at bottom]"
    });
    f.render_widget(Paragraph::new(head).style(th.title), title);
    if total == 0 {
        let why = if app.replay.is_some() && !pv.seen {
            " this recording has no stacks: record with --profile (ttop record --profile ...)"
        } else if fr.mode != "bpf" {
            " stacks are sampled with eBPF, which is off (see the banner)"
        } else if pv.off_cpu {
            " timing off-CPU stacks of the watched processes… (needs eBPF; o: back to on-CPU)"
        } else if !pv.seen {
            " sampling stacks at 99 Hz… (needs eBPF; `ttop --profile` samples from the start)"
        } else {
            " no samples in this window (the watched processes did not run)"
        };
        f.render_widget(Paragraph::new(why).style(th.dim), body);
    } else if pv.table {
        render_table(f, body, app, &stacks, total, th);
    } else {
        render_graph(f, body, app, &root, th);
    }
    render_status(f, status, app, &root, th);
    let line = match (&pv.typing, &pv.search, &pv.message) {
        (Some(t), _, _) => format!(" search: {t}_   (Enter applies, Esc cancels)"),
        (None, Some(s), _) => {
            let n = flame::matching_samples(stacks.iter().map(|(s, n)| (s.as_str(), *n)), s);
            format!(
                " search {s:?}: {}, {:.1}% of shown (Esc clears)",
                pv.amount(n),
                100.0 * n as f64 / total.max(1) as f64
            )
        }
        (None, None, Some(m)) => format!(" {m}"),
        _ => " ↑ into a callee  ↓ to the caller  ←/→ neighbours  Enter zoom  Esc out  / search  t table  w window  o on/off-CPU  E export".to_string(),
    };
    f.render_widget(Paragraph::new(line).style(th.dim), search);
}

/// A warm colour per name (flamegraph.pl's "hot" palette), kernel frames orange.
fn colour(name: &str) -> Color {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let v = (h % 55) as u8;
    if name.ends_with("_[k]") {
        Color::Rgb(230, 140 + v / 2, 60)
    } else {
        Color::Rgb(205 + v, 80 + v * 2, 55)
    }
}

fn render_graph(f: &mut TermFrame, area: Rect, app: &App, root: &Node, th: &Theme) {
    let pv = &app.profile;
    let total = root.total;
    let rows = area.height as usize;
    let cells = flame::layout(root, &pv.zoom, area.width, rows);
    let needle = pv.needle().map(str::to_lowercase);
    let sel = if pv.sel.is_empty() { &pv.zoom } else { &pv.sel };
    let buf = f.buffer_mut();
    for c in &cells {
        let name = c.path.last().map_or("all", String::as_str);
        let y = area.y + area.height - 1 - c.depth as u16;
        let plateau = c.self_ as f64 >= PLATEAU * total as f64;
        let mut style = if th.color {
            Style::default().fg(Color::Black).bg(colour(name))
        } else {
            Style::default()
        };
        if needle
            .as_ref()
            .is_some_and(|n| c.depth > 0 && name.to_lowercase().contains(n.as_str()))
        {
            style = style.add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
            if th.color {
                style = style.bg(Color::Rgb(230, 80, 230));
            }
        }
        if &c.path == sel {
            style = style.add_modifier(Modifier::REVERSED);
        }
        let text = cell_text(name, c, plateau);
        buf.set_stringn(area.x + c.x, y, &text, c.w as usize, style);
    }
}

/// A frame's text in its cells: the name cut to fit, a `▲` for a plateau, and a
/// trailing `|` or space so that neighbours stay apart without colour.
fn cell_text(name: &str, c: &Cell, plateau: bool) -> String {
    let w = c.w as usize;
    let mark = if plateau { "▲" } else { "" };
    let sep = if w >= 2 { "|" } else { "" };
    let room = w.saturating_sub(sep.len() + mark.chars().count());
    let mut s: String = if name.chars().count() > room {
        let keep = room.saturating_sub(1);
        let mut t: String = name.chars().take(keep).collect();
        if room >= 1 {
            t.push(if room >= 3 { '…' } else { '.' });
        }
        t
    } else {
        name.to_string()
    };
    s.push_str(mark);
    while s.chars().count() + sep.len() < w {
        s.push(' ');
    }
    s.push_str(sep);
    s
}

fn render_table(
    f: &mut TermFrame,
    area: Rect,
    app: &App,
    stacks: &[(String, u64)],
    total: u64,
    th: &Theme,
) {
    let pv = &app.profile;
    let mut rows = flame::functions(stacks.iter().map(|(s, n)| (s.as_str(), *n)));
    if let Some(n) = pv.needle() {
        let n = n.to_lowercase();
        rows.retain(|r| r.name.to_lowercase().contains(&n));
    }
    let pct = |n: u64| format!("{:5.1}%", 100.0 * n as f64 / total.max(1) as f64);
    // On-CPU: samples; off-CPU: milliseconds (the counts are microseconds).
    let amount = |n: u64| {
        if pv.off_cpu {
            format!("{:.1}", n as f64 / 1e3)
        } else {
            n.to_string()
        }
    };
    let height = area.height.saturating_sub(1) as usize;
    let sel = pv.table_sel.min(rows.len().saturating_sub(1));
    let first = sel.saturating_sub(height.saturating_sub(1));
    let body: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(i, r)| {
            let row = Row::new(vec![
                TCell::from(pct(r.self_)),
                TCell::from(amount(r.self_)),
                TCell::from(pct(r.total)),
                TCell::from(amount(r.total)),
                TCell::from(r.name.clone()),
            ]);
            if i == sel {
                row.style(th.selected)
            } else {
                row
            }
        })
        .collect();
    let names = if pv.off_cpu {
        ["SELF%", "SELF ms", "TOTAL%", "TOTAL ms", "FUNCTION"]
    } else {
        ["SELF%", "SELF", "TOTAL%", "TOTAL", "FUNCTION"]
    };
    let head = Row::new(names.map(TCell::from)).style(th.header);
    let num_w = if pv.off_cpu { 8 } else { 7 };
    f.render_widget(
        Table::new(
            body,
            [
                Constraint::Length(6),
                Constraint::Length(num_w),
                Constraint::Length(6),
                Constraint::Length(num_w),
                Constraint::Min(10),
            ],
        )
        .header(head),
        area,
    );
}

fn render_status(f: &mut TermFrame, area: Rect, app: &App, root: &Node, th: &Theme) {
    let pv = &app.profile;
    let total = root.total;
    if total == 0 || pv.table {
        return;
    }
    let path = if pv.sel.is_empty() { &pv.zoom } else { &pv.sel };
    let Some(node) = root.at(path) else {
        return;
    };
    let kind = match path.len() {
        0 if pv.off_cpu => "all stacks",
        0 => "all samples",
        3 if pv.off_cpu && node.name.starts_with("[off-cpu") => "why off the CPU",
        1 => "process",
        2 => "thread group",
        _ if node.name.ends_with("_[k]") => "kernel",
        _ if node.name.starts_with('[') => "unnamed (module)",
        _ => "user",
    };
    let p = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
    let text = format!(
        " {}  [{kind}]  {}  total {:.1}%  self {:.1}%",
        node.name,
        pv.amount(node.total),
        p(node.total),
        p(node.self_)
    );
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(text, th.truth))),
        area,
    );
}
