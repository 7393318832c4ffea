//! The replay time bar: play state and speed, the time shown (UTC clock and offset
//! into the recording), a bar of where that is, and the frame number. With the "go to"
//! prompt open it is the prompt instead.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::fmt;
use super::theme::Theme;
use crate::app::player::ReplayBar;
use crate::app::player::marks::level;
use crate::model::findings::Severity;

/// "1:02:03" or "2:03".
/// A time into the recording, to the nearest second (a sample taken 4.9992 s in is
/// the one 5 s in).
fn offset(ns: u64) -> String {
    let s = (ns + 500_000_000) / 1_000_000_000;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A bar `width` cells wide with a marker at `at` of `total`.
pub fn track(at: u64, total: u64, width: usize) -> String {
    cells(at, total, width, &[])
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// The bar's cells: the position marker, and where findings were active (`marks`, equal
/// stretches of the recording, see `ReplayBar::marks`) a `▲` (critical) or `△`, with
/// the mark level of each cell.
fn cells(at: u64, total: u64, width: usize, marks: &[u8]) -> Vec<(char, u8)> {
    if width == 0 {
        return Vec::new();
    }
    let pos = if total == 0 {
        0
    } else {
        ((at.min(total) as u128 * (width as u128 - 1)) / total as u128) as usize
    };
    let n = marks.len();
    (0..width)
        .map(|i| {
            let mark = if n == 0 {
                0
            } else {
                let from = i * n / width;
                let to = ((i + 1) * n / width).max(from + 1).min(n);
                marks[from..to].iter().copied().max().unwrap_or(0)
            };
            let c = match (i.cmp(&pos), mark) {
                (std::cmp::Ordering::Equal, _) => '●',
                (_, m) if m >= level(Severity::Critical) => '▲',
                (_, m) if m >= level(Severity::Info) => '△',
                (std::cmp::Ordering::Less, _) => '━',
                (std::cmp::Ordering::Greater, _) => '─',
            };
            (c, mark)
        })
        .collect()
}

pub fn render(f: &mut TermFrame, area: Rect, bar: &ReplayBar, th: &Theme) {
    if let Some(text) = &bar.goto {
        let line = Line::from(vec![
            Span::styled(" go to ", th.header),
            Span::raw(format!(" {}▏", fmt::inert(text))),
            Span::styled(
                "  14:05[:30] UTC · 90 or 5m from the start · +30s/-2m from here · Enter go · Esc cancel",
                th.dim,
            ),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let state = if bar.playing {
        Span::styled(format!(" ▶ {} ", bar.speed), th.good)
    } else {
        Span::styled(" ❚❚ PAUSED ", th.alert)
    };
    let when = format!(
        " {} UTC  +{} / {} ",
        fmt::clock(bar.at_ns as f64 / 1e9),
        offset(bar.at_ns.saturating_sub(bar.start_ns)),
        offset(bar.end_ns.saturating_sub(bar.start_ns)),
    );
    let count = format!(" frame {}/{} ", bar.frame, bar.frames);
    let note = bar.note.as_deref().map(|n| format!(" {} ", fmt::inert(n)));
    let used = state.width() + when.chars().count() + count.chars().count();
    let room = (area.width as usize).saturating_sub(used + 2);
    let mut spans = vec![state, Span::raw(when)];
    if room >= 10 {
        let w = room.min(60);
        let cells = cells(
            bar.at_ns.saturating_sub(bar.start_ns),
            bar.end_ns.saturating_sub(bar.start_ns),
            w,
            &bar.marks,
        );
        // Runs of cells of one style, so the line stays a few spans.
        let style = |c: char, m: u8| match c {
            '▲' => th.alert,
            '△' if m >= level(Severity::Warning) => th.warn,
            '△' => th.dim,
            _ => th.title,
        };
        let mut run = String::new();
        let mut run_style = None;
        for (c, m) in cells {
            let st = style(c, m);
            if run_style.is_some_and(|s| s != st) {
                spans.push(Span::styled(std::mem::take(&mut run), run_style.unwrap()));
            }
            run_style = Some(st);
            run.push(c);
        }
        if let Some(st) = run_style {
            spans.push(Span::styled(run, st));
        }
    }
    spans.push(Span::raw(count));
    if let Some(n) = note {
        spans.push(Span::styled(n, th.warn));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn track_marks_the_position() {
        assert_eq!(track(0, 100, 5), "●────");
        assert_eq!(track(50, 100, 5), "━━●──");
        assert_eq!(track(100, 100, 5), "━━━━●");
        assert_eq!(track(7, 0, 3), "●──");
        assert_eq!(track(1, 1, 0), "");
        // Marks: 8 stretches on 4 cells; a cell takes its most severe stretch.
        let crit = level(Severity::Critical);
        let warn = level(Severity::Warning);
        let m = [1, 1, warn, 1, 0, 0, crit, 1];
        let c: String = cells(0, 100, 4, &m).into_iter().map(|(c, _)| c).collect();
        assert_eq!(c, "●△─▲");
        let c: String = cells(100, 100, 4, &m).into_iter().map(|(c, _)| c).collect();
        assert_eq!(c, "━△━●", "the position wins over a mark");
        assert_eq!(offset(3_723_000_000_000), "1:02:03");
        assert_eq!(offset(123_000_000_000), "2:03");
    }
}
