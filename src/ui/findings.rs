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
            format!(" findings need eBPF (run as root): {}", KINDS.join(", ")),
            th.dim,
        ))];
    }
    let n = fr.findings.len();
    let mut out: Vec<Line<'static>> = fr
        .findings
        .iter()
        .enumerate()
        .take(max)
        .map(|(i, f)| {
            let mark = if i == selected % n.max(1) { "›" } else { " " };
            let style = match (f.active, f.severity) {
                (false, _) => th.dim,
                (true, Severity::Critical) => th.alert,
                (true, Severity::Warning) => th.warn,
                (true, Severity::Info) => th.normal,
            };
            let age = (fr.t - f.since).max(0.0);
            let when = if f.active {
                format!("{:.0}s", age + fr.interval_s)
            } else {
                "past".to_string()
            };
            Line::from(vec![
                Span::styled(
                    format!(
                        "{mark}[{}] {} {} {when}: ",
                        key_of(view_of(f)),
                        f.severity.label(),
                        f.kind
                    ),
                    style,
                ),
                Span::styled(fmt::inert(&f.summary), style),
            ])
        })
        .collect();
    if n > max
        && let Some(last) = out.last_mut()
    {
        *last = Line::from(Span::styled(
            format!(
                " … and {} more findings (--json lists them all)",
                n - max + 1
            ),
            th.dim,
        ));
    }
    out
}
