//! Footer: the most useful keys for the current view, from the keymap table.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::Theme;
use crate::app::App;
use crate::app::keymap::bindings_for;
use crate::app::replay_keys::REPLAY_KEYMAP;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    if let Some(text) = &app.prompt {
        let line = Line::from(vec![
            Span::styled(" filter ", th.header),
            Span::raw(format!(" {}▏", super::fmt::inert(text))),
            Span::styled(
                "  PIDs (1,2) or a name · Enter apply · Esc cancel · empty clears",
                th.dim,
            ),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let mut spans = vec![Span::styled(format!(" {} ", app.view.title()), th.header)];
    let replay = app.replay.iter().flat_map(|_| REPLAY_KEYMAP);
    let main = bindings_for(app.view).filter(|b| app.replay.is_none() || !super::help::shadowed(b));
    for (b, word) in replay.chain(main).filter_map(|b| b.footer.map(|w| (b, w))) {
        spans.push(Span::styled(format!(" {}", b.label), th.title));
        spans.push(Span::raw(format!(" {word}")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
