//! Help screen, generated from the keymap table. One column when it fits, two when not.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme::Theme;
use crate::app::App;
use crate::app::keymap::{Action, Binding, bindings_for};
use crate::app::replay_keys::REPLAY_KEYMAP;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    let replay = app.replay.iter().flat_map(|_| REPLAY_KEYMAP);
    let entries: Vec<Line> = replay
        .chain(bindings_for(app.view).filter(|b| app.replay.is_none() || !shadowed(b)))
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:<7}", b.label), th.title),
                Span::raw(b.help),
            ])
        })
        .collect();
    let widest = entries.iter().map(|l| l.width()).max().unwrap_or(20) as u16;
    let two = entries.len() as u16 + 4 > area.height;
    let w = if two {
        area.width
    } else {
        (widest + 4).min(area.width)
    };
    let h = if two {
        area.height
    } else {
        entries.len() as u16 + 4
    };
    let [_, mid, _] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(h.min(area.height)),
        Constraint::Min(0),
    ])
    .areas(area);
    let [_, popup, _] = Layout::horizontal([
        Constraint::Min(0),
        Constraint::Length(w),
        Constraint::Min(0),
    ])
    .areas(mid);
    f.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" ttop keys ", th.title))
        .title_bottom(Span::styled(" any key closes this screen ", th.dim));
    let inner = block.inner(popup);
    f.render_widget(block, popup);
    if two {
        let [l, r] = Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)])
            .spacing(1)
            .areas(inner);
        // Split where the wrapped heights balance.
        let col_w = usize::from(l.width.max(1));
        let heights: Vec<usize> = entries
            .iter()
            .map(|e| e.width().div_ceil(col_w).max(1))
            .collect();
        let total: usize = heights.iter().sum();
        let mut acc = 0;
        let half = heights
            .iter()
            .take_while(|h| {
                acc += **h;
                acc <= total.div_ceil(2)
            })
            .count();
        f.render_widget(
            Paragraph::new(entries[..half].to_vec()).wrap(Wrap { trim: false }),
            l,
        );
        f.render_widget(
            Paragraph::new(entries[half..].to_vec()).wrap(Wrap { trim: false }),
            r,
        );
    } else {
        f.render_widget(Paragraph::new(entries), inner);
    }
}

/// A main binding that does not apply while replaying: its keys are taken over by the
/// replay table (space: play, not pause), or it records (a replay is a recording).
pub fn shadowed(b: &Binding) -> bool {
    b.action == Action::ToggleRecord
        || b.keys
            .iter()
            .all(|k| REPLAY_KEYMAP.iter().any(|r| r.keys.contains(k)))
}
