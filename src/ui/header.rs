//! The header line (host, kernel, CPUs, uptime, mode, interval, drops) and the banner
//! that says what is missing and how to fix it.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::model::Frame;
use crate::model::features::{Feature, Status};

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let mode = if fr.mode == "bpf" {
        "eBPF"
    } else {
        "procfs-only"
    };
    let mut spans = vec![
        Span::styled(" ttop ", th.header),
        Span::raw(format!(
            " {}  {}  {} CPUs  up {}  {} {}  {:.1}s ",
            fmt::inert(&fr.host),
            fmt::inert(&fr.kernel),
            fr.ncpus,
            fmt::uptime(fr.uptime_s),
            app.source,
            mode,
            fr.interval_s,
        )),
    ];
    if fr.mode == "bpf" {
        let d = &fr.drops_by_map;
        // The JSON's figure; red only when a figure on screen is a floor (lost_data):
        // an idle VM's few skipped scheduler events a second are not that.
        let floor = crate::model::findings_rules::lost(fr).is_some();
        spans.push(Span::styled(
            format!(" drops {} ", fr.drops),
            if floor { th.alert } else { th.dim },
        ));
        if d.sched_gaps > 0 {
            spans.push(Span::styled(format!(" gaps {} ", d.sched_gaps), th.dim));
        }
    }
    if let Some(filter) = &fr.filter {
        spans.push(Span::styled(
            format!(" watching {} ", fmt::inert(filter)),
            th.warn,
        ));
    }
    if let Some(rec) = &app.recording {
        spans.push(Span::styled(format!(" {} ", fmt::inert(rec)), th.alert));
    }
    if app.paused {
        spans.push(Span::styled(" PAUSED ", th.alert));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The banner's lines: each problem as it is, except that what this kernel measures
/// through an older hook or not at all (a sentence per figure in problems[]) is one line
/// that says how many and where to read which (each view says its own under its table).
fn banner(fr: &Frame) -> Vec<String> {
    let kernel: Vec<&Feature> = fr
        .features
        .iter()
        .filter(|f| f.problem().is_some())
        .collect();
    let is_kernel = |p: &String| kernel.iter().any(|f| f.problem().as_ref() == Some(p));
    let mut lines: Vec<String> = fr
        .problems
        .iter()
        .filter(|p| !is_kernel(p))
        .cloned()
        .collect();
    let missing = kernel
        .iter()
        .filter(|f| f.status == Status::Missing)
        .count();
    let fallback = kernel.len() - missing;
    if !kernel.is_empty() {
        let mut parts = Vec::new();
        if missing > 0 {
            parts.push(format!(
                "{missing} figure{} not measured",
                if missing == 1 { "" } else { "s" }
            ));
        }
        if fallback > 0 {
            parts.push(format!("{fallback} by older hooks"));
        }
        lines.push(format!(
            "this kernel: {} (ttop probe says why)",
            parts.join(", ")
        ));
    }
    lines
}

/// Rows the banner needs (one per line, at most 3).
pub fn banner_lines(fr: &Frame, _width: u16) -> u16 {
    banner(fr).len().min(3) as u16
}

pub fn render_banner(f: &mut TermFrame, area: Rect, fr: &Frame, th: &Theme) {
    let lines: Vec<Line> = banner(fr)
        .iter()
        .take(area.height as usize)
        .map(|p| Line::from(Span::styled(format!(" ! {}", fmt::inert(p)), th.warn)))
        .collect();
    f.render_widget(Paragraph::new(lines), area);
}
