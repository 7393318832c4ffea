//! Runnable panel: true runnable threads (eBPF, time-weighted) versus what the /proc scan
//! counts as running, the kernel's instantaneous procs_running, and the history of both.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::model::Frame;
use crate::model::procs::top_view::TopView;

/// The sentence shown when the scan undercounts.
pub fn undercount_text(true_avg: f64, scan: u32, ratio: f64) -> String {
    format!(
        "top sees {scan} running, truth {}: undercount {}x",
        fmt::fixed(true_avg, 1),
        fmt::fixed(ratio, 1)
    )
}

/// Why the scan (top's view) undercounts, cause by cause, biggest first, in at most
/// `width` columns (the long wording when it fits, else the short one, and the smallest
/// causes left out); None when there is nothing to explain.
pub fn gap_text(v: &TopView, width: u16) -> Option<String> {
    // (threads, long wording, short wording)
    let mut parts: Vec<(f64, String, String)> = Vec::new();
    let mut add = |n: f64, long: String, brief: String| {
        if n >= 0.5 {
            parts.push((n, long, brief));
        }
    };
    let sk = f64::from(v.skipped_running);
    add(
        sk,
        format!("{sk:.0} running after a thread that vanished (top stops there)"),
        format!("{sk:.0} after a vanished one"),
    );
    let ul = f64::from(v.unlisted_running);
    add(
        ul,
        format!("{ul:.0} created after top listed them"),
        format!("{ul:.0} born after listing"),
    );
    let va = f64::from(v.vanished);
    add(
        va,
        format!("{va:.0} ended before their turn"),
        format!("{va:.0} ended first"),
    );
    if let Some(g) = v.ghosts {
        add(
            g,
            format!("{} ghosts (born and dead between scans)", fmt::fixed(g, 1)),
            format!("{} ghosts", fmt::fixed(g, 1)),
        );
    }
    if let Some(o) = v.other {
        add(
            o,
            format!("{} runnable at other moments", fmt::fixed(o, 1)),
            format!("{} other", fmt::fixed(o, 1)),
        );
    }
    parts.sort_by(|a, b| b.0.total_cmp(&a.0));
    let join = |list: &[&String]| {
        let items: Vec<&str> = list.iter().map(|s| s.as_str()).collect();
        format!("  why: {}", items.join(", "))
    };
    for long in [true, false] {
        let mut list: Vec<&String> = parts
            .iter()
            .map(|p| if long { &p.1 } else { &p.2 })
            .collect();
        while !list.is_empty() {
            let text = join(&list);
            if text.chars().count() <= usize::from(width) {
                return Some(text);
            }
            if long {
                break;
            }
            list.pop();
        }
    }
    None
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    if area.height == 0 {
        return;
    }
    let r = &fr.runnable;
    // The scan reads /proc at the pace top does (a recording made before it did, or
    // TTOP_UNPACED, has no top_view).
    let title = if r.top_view.is_some() && area.width >= 60 {
        " Runnable threads · the scan reads /proc at top's pace "
    } else {
        " Runnable threads "
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, th.title));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let show_chart = inner.width >= 100 && !app.history.is_empty();
    let text_w = if show_chart { 70 } else { inner.width };
    let mut lines = Vec::new();
    let what = if fr.filter.is_some() {
        "  watched processes, eBPF"
    } else {
        "  eBPF, time-weighted"
    };
    match r.true_avg {
        Some(avg) => lines.push(Line::from(vec![
            Span::styled("true ", th.truth),
            Span::raw(format!(
                " avg {:>5}  max {:>3}",
                fmt::fixed(avg, 1),
                r.true_max.map_or("-".to_string(), |m| format!("{m:.0}"))
            )),
            Span::styled(what, th.dim),
        ])),
        None => lines.push(Line::from(Span::styled(
            "true  needs eBPF (see the banner)",
            th.dim,
        ))),
    }
    lines.push(Line::from(vec![
        Span::styled("scan ", th.scan),
        Span::raw(format!(
            " R {:<4} procs_running {:<3} blocked {:<3} load {:.2} {:.2} {:.2}",
            r.scan_running,
            r.procs_running,
            r.procs_blocked,
            r.loadavg[0],
            r.loadavg[1],
            r.loadavg[2]
        )),
    ]));
    match (r.undercount, r.true_avg) {
        (Some(ratio), Some(avg)) => {
            let text = if area.width < 60 {
                format!(
                    "▲ top {} vs true {}: {}x under",
                    r.scan_running,
                    fmt::fixed(avg, 1),
                    fmt::fixed(ratio, 1)
                )
            } else {
                format!("▲ {}", undercount_text(avg, r.scan_running, ratio))
            };
            lines.push(Line::from(Span::styled(text, th.alert)));
            if let Some(why) = r.top_view.as_ref().and_then(|v| gap_text(v, text_w)) {
                lines.push(Line::from(Span::styled(why, th.warn)));
            }
        }
        (None, Some(_)) => lines.push(Line::from(Span::styled(
            "top's view and the truth agree this interval",
            th.dim,
        ))),
        _ => {}
    }
    let [text, chart] = if show_chart {
        Layout::horizontal([Constraint::Length(70), Constraint::Min(0)]).areas(inner)
    } else {
        [inner, Rect::default()]
    };
    f.render_widget(Paragraph::new(lines), text);
    if show_chart {
        render_history(f, chart, app, th);
    }
}

fn render_history(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    // As many points as the chart has braille columns (2 per cell).
    let n = (area.width as usize * 2).min(app.history.len());
    let pts: Vec<_> = app.history.iter().skip(app.history.len() - n).collect();
    let truth: Vec<(f64, f64)> = pts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.true_avg.map(|v| (i as f64, v)))
        .collect();
    let scan: Vec<(f64, f64)> = pts
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.scan_running))
        .collect();
    let ymax = truth
        .iter()
        .chain(scan.iter())
        .map(|p| p.1)
        .fold(1.0f64, f64::max)
        * 1.1;
    let data = vec![
        Dataset::default()
            .name("true")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(th.truth)
            .data(&truth),
        Dataset::default()
            .name("scan")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(th.scan)
            .data(&scan),
    ];
    let chart = Chart::new(data)
        .x_axis(Axis::default().bounds([0.0, (n.max(2) - 1) as f64]))
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels([Span::raw("0"), Span::raw(format!("{:.0}", ymax))]),
        )
        .hidden_legend_constraints((Constraint::Ratio(1, 1), Constraint::Ratio(1, 1)));
    f.render_widget(chart, area);
}
