//! Footer: the most useful keys for the current view, from the keymap table.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::Theme;
use crate::app::App;
use crate::app::act::{ActMenu, SIGNALS, Stage};
use crate::app::keymap::{Action, Binding, bindings_for};
use crate::app::replay_keys::REPLAY_KEYMAP;

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    if let Some(m) = &app.act {
        f.render_widget(Paragraph::new(act_line(m, th)), area);
        return;
    }
    if let Some(msg) = &app.act_result {
        let line = Line::from(vec![
            Span::styled(" act ", th.header),
            Span::raw(format!(" {}", super::fmt::inert(msg))),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
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
    let title = format!(" {} ", app.view.title());
    let replay = app.replay.iter().flat_map(|_| REPLAY_KEYMAP);
    let main = bindings_for(app.view).filter(|b| app.replay.is_none() || !super::help::shadowed(b));
    let items: Vec<(&Binding, &str)> = replay
        .chain(main)
        .filter_map(|b| b.footer.map(|w| (b, w)))
        .collect();
    let mut spans = vec![Span::styled(title.clone(), th.header)];
    for (b, word) in fit(
        &items,
        usize::from(area.width).saturating_sub(Span::raw(title.as_str()).width()),
    ) {
        spans.push(Span::styled(format!(" {}", b.label), th.title));
        spans.push(Span::raw(format!(" {word}")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The footer's keys that fit in `width` columns, in the table's order: the help key
/// always (it is how to find the rest), the others while they fit.
fn fit<'a>(items: &[(&'a Binding, &'a str)], width: usize) -> Vec<(&'a Binding, &'a str)> {
    let w =
        |(b, word): &(&Binding, &str)| 2 + Span::raw(b.label).width() + Span::raw(*word).width();
    let is_help = |(b, _): &(&Binding, &str)| b.action == Action::Help;
    let mut left = width.saturating_sub(items.iter().filter(|i| is_help(i)).map(w).sum());
    let mut out = Vec::with_capacity(items.len());
    let mut full = false;
    for i in items {
        if is_help(i) {
            out.push(*i);
        } else if !full && w(i) <= left {
            left -= w(i);
            out.push(*i);
        } else {
            // Keep the order: once one does not fit, the rest are left out too.
            full = true;
        }
    }
    out
}

/// The act prompt (F9, F7/F8, a): the signal chooser, the CPU list being typed, or the
/// confirmation.
fn act_line<'a>(m: &'a ActMenu, th: &Theme) -> Line<'a> {
    let who = format!("{}({})", super::fmt::inert(&m.comm), m.pid);
    match &m.stage {
        Stage::Signals(i) => {
            let mut spans = vec![
                Span::styled(format!(" signal {who} "), th.header),
                Span::raw(" "),
            ];
            for (j, (name, _)) in SIGNALS.iter().enumerate() {
                if j == *i {
                    spans.push(Span::styled(format!("[{name}]"), th.header));
                } else {
                    spans.push(Span::styled(format!(" {name} "), th.dim));
                }
            }
            spans.push(Span::styled(" ←/→ Enter Esc", th.dim));
            Line::from(spans)
        }
        Stage::Cpus(text) => Line::from(vec![
            Span::styled(format!(" CPUs for {who} "), th.header),
            Span::raw(format!(" {text}▏")),
            Span::styled(
                m.error
                    .as_deref()
                    .map_or("  e.g. 0,2-3 · Enter · Esc cancel".to_string(), |e| {
                        format!("  {e}")
                    }),
                th.dim,
            ),
        ]),
        Stage::Confirm(r) => Line::from(vec![
            Span::styled(" confirm ", th.header),
            Span::raw(format!(" {}? ", super::fmt::inert(&r.describe()))),
            Span::styled("y yes · any other key no", th.dim),
        ]),
    }
}
