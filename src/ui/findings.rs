//! The findings lines at the top of the overview: one line per finding, active ones
//! first, most severe first, each with the key of the view that shows its evidence.

use ratatui::text::{Line, Span};

use super::fmt;
use super::theme::Theme;
use crate::app::View;
use crate::model::Frame;
use crate::model::findings::{Finding, KINDS, Severity};

/// The view a finding's `view` names.
pub fn view_of(f: &Finding) -> View {
    match f.view {
        "futexes" => View::Futexes,
        "locks" => View::Locks,
        "ipi" => View::Ipi,
        "latency" => View::Latency,
        _ => View::Main,
    }
}

/// The number key of a view (its place in View::ALL).
fn key_of(v: View) -> usize {
    View::ALL.iter().position(|x| *x == v).unwrap_or(0) + 1
}

/// At most `max` lines; `selected` is marked (the one the evidence key opens).
pub fn lines(fr: &Frame, max: usize, selected: usize, th: &Theme) -> Vec<Line<'static>> {
    if max == 0 {
        return Vec::new();
    }
    if fr.mode != "bpf" {
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
            let mark = if i == selected % n.max(1) { "›" } else { " " };
            // The last line says how many more there are (--json lists them all).
            let more = if i + 1 == shown && n > shown {
                format!("+{} ", n - shown)
            } else {
                String::new()
            };
            let style = match (f.active, f.severity) {
                (false, _) => th.dim,
                (true, Severity::Critical) => th.alert,
                (true, Severity::Warning) => th.warn,
                (true, Severity::Info) => th.normal,
            };
            let when = if f.active {
                format!("{:.0}s", (fr.t - f.since).max(0.0) + fr.interval_s)
            } else {
                "past".to_string()
            };
            Line::from(vec![
                Span::styled(
                    format!(
                        "{mark}{more}[{}] {} {} {when}: ",
                        key_of(view_of(f)),
                        f.severity.label(),
                        f.kind
                    ),
                    style,
                ),
                Span::styled(fmt::inert(&f.summary), style),
            ])
        })
        .collect()
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
