//! The findings lines at the top of the overview: one line per finding, active ones
//! first, most severe first, each with the key of the view that shows its evidence.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::fmt;
use super::theme::Theme;
use crate::app::View;
use crate::model::Frame;
use crate::model::findings::{Finding, KINDS, Severity};

/// The number key of a view (its place in View::ALL).
fn key_of(v: View) -> usize {
    View::ALL.iter().position(|x| *x == v).unwrap_or(0) + 1
}

/// At most `max` lines; `selected` is marked (the one the evidence key opens).
pub fn lines(fr: &Frame, max: usize, selected: usize, th: &Theme) -> Vec<Line<'static>> {
    if max == 0 {
        return Vec::new();
    }
    // The cgroup findings come from cgroupfs: procfs-only mode lists them when it has any.
    if fr.mode != "bpf" && fr.findings.is_empty() {
        return vec![Line::from(Span::styled(
            format!(
                " findings need eBPF: none of the {} kinds is guessed from /proc ({})",
                KINDS.len(),
                KINDS.join(" ")
            ),
            th.dim,
        ))];
    }
    let n = fr.findings.len();
    let shown = n.min(max);
    fr.findings
        .iter()
        .enumerate()
        .take(shown)
        .map(|(i, f)| {
            // The last line says how many more there are (f shows them all).
            let more = if i + 1 == shown && n > shown {
                format!("+{} ", n - shown)
            } else {
                String::new()
            };
            Line::from(lines_of(fr, f, i == selected % n.max(1), &more, th))
        })
        .collect()
}

/// One finding as the overview writes it: mark, evidence key, severity, kind, for how
/// long, and the sentence.
fn lines_of(fr: &Frame, f: &Finding, marked: bool, more: &str, th: &Theme) -> Vec<Span<'static>> {
    let mark = if marked { "›" } else { " " };
    let style = match (f.active, f.severity) {
        (false, _) => th.dim,
        (true, Severity::Critical) => th.alert,
        (true, Severity::Warning) => th.warn,
        (true, Severity::Info) => th.normal,
    };
    let when = if f.active {
        format!(
            "{}s",
            fmt::fixed((fr.t - f.since).max(0.0) + fr.interval_s, 0)
        )
    } else {
        "past".to_string()
    };
    vec![
        Span::styled(
            format!(
                "{mark}{more}[{}] {} {} {when}: ",
                key_of(View::from(f.view)),
                f.severity.label(),
                f.kind
            ),
            style,
        ),
        Span::styled(fmt::inert(&f.summary), style),
    ]
}

/// Whether a screen line is a findings line (for tests): "›[3] ", " +2 [1] ".
pub fn is_finding_line(l: &str) -> bool {
    let l = l.trim_start_matches(['›', ' ']);
    let l = match l.strip_prefix('+') {
        Some(r) => r
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start(),
        None => l,
    };
    l.len() > 4 && l.starts_with('[') && l.as_bytes()[2] == b']'
}

/// What a finding line cut at the screen's edge ends with: more to read, and where.
pub const CUT: &str = " …(f)";

/// `line` in at most `width` columns: whole when it fits, else cut and ending in
/// `CUT` (the findings screen, f, shows it whole).
pub fn fit(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let tail = Span::raw(CUT).width();
    let mut room = width.saturating_sub(tail);
    let mut spans = Vec::with_capacity(line.spans.len() + 1);
    let mut last_style = ratatui::style::Style::default();
    for sp in line.spans {
        if room == 0 {
            break;
        }
        last_style = sp.style;
        let mut kept = String::new();
        for c in sp.content.chars() {
            let w = Span::raw(c.to_string()).width();
            if w > room {
                room = 0;
                break;
            }
            room -= w;
            kept.push(c);
        }
        spans.push(Span::styled(kept, sp.style));
    }
    spans.push(Span::styled(CUT, last_style));
    Line::from(spans)
}

/// The lines of the findings screen (f): every finding whole, then its figures.
fn overlay_lines(fr: &Frame, th: &Theme) -> Vec<Line<'static>> {
    if fr.mode != "bpf" {
        return lines(fr, 1, 0, th);
    }
    if fr.findings.is_empty() {
        return vec![Line::from(Span::styled(
            " no finding in the last intervals",
            th.dim,
        ))];
    }
    let mut out = Vec::new();
    for f in &fr.findings {
        let head = lines_of(fr, f, false, "", th);
        out.push(Line::from(head));
        let figures: Vec<String> = f
            .figures
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k} {}",
                    fmt::fixed(*v, if v.fract() == 0.0 { 0 } else { 2 })
                )
            })
            .collect();
        if !figures.is_empty() {
            out.push(Line::from(Span::styled(
                format!("    figures: {}", figures.join(", ")),
                th.dim,
            )));
        }
        out.push(Line::default());
    }
    out
}

/// Rows the findings screen takes wrapped in a popup over a `w` x `h` screen, and rows
/// it shows (for scrolling it no further than its end).
pub fn overlay_rows(app: &crate::app::App, w: u16, h: u16) -> (u16, u16) {
    let Some(fr) = app.frame.as_ref() else {
        return (0, 0);
    };
    let inner = overlay_area(Rect::new(0, 0, w, h));
    let rows: usize = overlay_lines(fr, &Theme::new(false))
        .iter()
        .map(|l| fmt::wrapped_rows(l, usize::from(inner.width)))
        .sum();
    (rows as u16, inner.height)
}

fn overlay_area(area: Rect) -> Rect {
    Block::default().borders(Borders::ALL).inner(area)
}

/// The findings screen (f): over the whole screen, every finding whole (the overview's
/// lines are cut at the screen's width), with its figures; ↑/↓ scroll it.
pub fn render_overlay(
    f: &mut ratatui::Frame,
    area: Rect,
    app: &crate::app::App,
    fr: &Frame,
    th: &Theme,
) {
    let lines = overlay_lines(fr, th);
    let inner = overlay_area(area);
    let total: usize = lines
        .iter()
        .map(|l| fmt::wrapped_rows(l, usize::from(inner.width)))
        .sum();
    let total = total as u16;
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let scroll = app.findings_scroll.min(total.saturating_sub(inner.height));
    let more = if total > inner.height {
        format!(
            " rows {}-{} of {total}: ↑/↓ PgUp/PgDn scroll; any other key closes ",
            scroll + 1,
            (scroll + inner.height).min(total)
        )
    } else {
        " any key closes this screen ".to_string()
    };
    f.render_widget(Clear, area);
    f.render_widget(
        Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(
                format!(" findings ({}) ", fr.findings.len()),
                th.title,
            ))
            .title_bottom(Span::styled(more, th.dim)),
        area,
    );
    f.render_widget(para.scroll((scroll, 0)), inner);
}
