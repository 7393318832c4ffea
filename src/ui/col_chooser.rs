//! The column chooser (c): the process table's columns, each with its on/off mark and
//! what it means, the cursor's row highlighted; scrolled to keep the cursor in view.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme::Theme;
use crate::app::App;
use crate::app::col_chooser::hideable;
use crate::model::procs::fields::FIELDS;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    let Some(at) = app.col_chooser else {
        return;
    };
    let w = area.width.min(72);
    let h = area.height.min(FIELDS.len() as u16 + 2);
    if w < 20 || h < 3 {
        return;
    }
    let popup = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let rows = usize::from(h - 2);
    let first = at.saturating_sub(rows - 1);
    let lines: Vec<Line> = FIELDS
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, c)| {
            let on = !app.hidden_cols.contains(&c.id);
            let mark = match (on, hideable(c.id)) {
                (_, false) => "[=]",
                (true, _) => "[x]",
                (false, _) => "[ ]",
            };
            let style = if i == at {
                th.selected
            } else if on {
                th.normal
            } else {
                th.dim
            };
            Line::from(Span::styled(
                format!("{mark} {:<9} {}", c.title, c.help),
                style,
            ))
        })
        .collect();
    f.render_widget(Clear, popup);
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        " Columns: space on/off (on: shown if wide enough); Esc closes ",
        th.title,
    ));
    f.render_widget(Paragraph::new(lines).block(block), popup);
}
