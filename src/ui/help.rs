//! Help screen, generated from the keymap table.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme::Theme;
use crate::app::App;
use crate::app::keymap::bindings_for;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    let mut lines: Vec<Line> = bindings_for(app.view)
        .map(|b| {
            Line::from(vec![
                Span::styled(format!(" {:<8}", b.label), th.title),
                Span::raw(b.help),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(
        " any key closes this screen",
        th.dim,
    )));
    let w = (lines.iter().map(|l| l.width()).max().unwrap_or(20) as u16 + 4).min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let [_, mid, _] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(h),
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
        .title(Span::styled(" ttop keys ", th.title));
    f.render_widget(Paragraph::new(lines).block(block), popup);
}
