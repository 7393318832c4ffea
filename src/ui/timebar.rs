//! The replay time bar: play state and speed, the time shown (UTC clock and offset
//! into the recording), a bar of where that is, and the frame number. With the "go to"
//! prompt open it is the prompt instead.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::fmt;
use super::theme::Theme;
use crate::record::player::ReplayBar;

/// "1:02:03" or "2:03".
fn offset(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A bar `width` cells wide with a marker at `at` of `total`.
pub fn track(at: u64, total: u64, width: usize) -> String {
    if width == 0 {
        return String::new();
    }
    let pos = if total == 0 {
        0
    } else {
        ((at.min(total) as u128 * (width as u128 - 1)) / total as u128) as usize
    };
    (0..width)
        .map(|i| match i.cmp(&pos) {
            std::cmp::Ordering::Less => '━',
            std::cmp::Ordering::Equal => '●',
            std::cmp::Ordering::Greater => '─',
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
        spans.push(Span::styled(
            track(
                bar.at_ns.saturating_sub(bar.start_ns),
                bar.end_ns.saturating_sub(bar.start_ns),
                w,
            ),
            th.title,
        ));
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
        assert_eq!(offset(3_723_000_000_000), "1:02:03");
        assert_eq!(offset(123_000_000_000), "2:03");
    }
}
