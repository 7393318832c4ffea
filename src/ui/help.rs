//! Help screen, generated from the keymap table and what the mouse does, then what each column and word on the
//! screen means (from the tables' column definitions). One column when it fits, two
//! when not, and pages when two do not hold it (↓/PgDn and ↑/PgUp turn them; any other
//! key closes the screen).

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme::Theme;
use crate::app::keymap::{Action, Binding, bindings_for};
use crate::app::mouse::MOUSE_HELP;
use crate::app::replay_keys::REPLAY_KEYMAP;
use crate::app::{App, View};

/// Width of the key column.
const KEY_W: usize = 7;

fn entries(app: &App, th: &Theme) -> Vec<Line<'static>> {
    let replay = app.replay.iter().flat_map(|_| REPLAY_KEYMAP);
    let keys = replay
        .chain(bindings_for(app.view).filter(|b| app.replay.is_none() || !shadowed(b)))
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:<KEY_W$}", b.label), th.title),
                Span::raw(b.help),
            ])
        });
    let mouse = MOUSE_HELP.iter().map(|(what, help)| {
        Line::from(vec![
            Span::styled(format!("{what:<KEY_W$}"), th.title),
            Span::raw(*help),
        ])
    });
    let words = columns(app).into_iter().map(|(name, help)| {
        Line::from(vec![
            Span::styled(format!("{name:<KEY_W$} "), th.header),
            Span::raw(help),
        ])
    });
    let head = Line::from(Span::styled(
        "The columns and words on this screen:",
        th.title,
    ));
    (keys.chain(mouse))
        .chain(std::iter::once(head))
        .chain(words)
        .collect()
}

/// What each column (and each word of the header and panels) on the screen of `app`
/// means, and its unit: from the tables' own column definitions where they have them.
pub fn columns(app: &App) -> Vec<(&'static str, &'static str)> {
    use super::{cores, futexes, header, ipi, latency, locks, procs, profile, threads};
    match app.view {
        View::Main if app.thread_pid.is_some() => threads::COLUMNS.to_vec(),
        View::Main => {
            let mut v: Vec<_> = procs::COLS.iter().map(|c| (c.title, c.help)).collect();
            v.push((
                "COMMAND",
                "command line (read once per process); for a process that exited, when",
            ));
            v.extend(header::WORDS);
            v.extend(cores::COLUMNS);
            v
        }
        View::Futexes => (futexes::COLS.iter().map(|c| (c.title, c.help)))
            .chain(futexes::MORE.iter().copied())
            .collect(),
        View::Locks => (locks::COLS.iter().map(|c| (c.title, c.help)))
            .chain(locks::MORE.iter().copied())
            .collect(),
        View::Ipi => ipi::COLUMNS.to_vec(),
        View::Latency => latency::COLUMNS.to_vec(),
        View::Profile => profile::COLUMNS.to_vec(),
        View::Cgroups => super::cgroups::COLUMNS.to_vec(),
        View::Time => super::time_split::columns(),
    }
}

/// How the help is laid out in `area`: the popup, and its pages, each a left and a
/// right column of whole entries (the right one empty in one-column layout).
struct Pages {
    popup: Rect,
    two: bool,
    pages: Vec<(Vec<Line<'static>>, Vec<Line<'static>>)>,
}

fn layout(app: &App, area: Rect, th: &Theme) -> Pages {
    let entries = entries(app, th);
    let widest = entries.iter().map(|l| l.width()).max().unwrap_or(20) as u16;
    let two = entries.len() as u16 + 4 > area.height;
    let (w, h) = if two {
        (area.width, area.height)
    } else {
        ((widest + 4).min(area.width), entries.len() as u16 + 4)
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
    if !two {
        return Pages {
            popup,
            two,
            pages: vec![(entries, Vec::new())],
        };
    }
    // Two columns of whole entries, each wrapped to the column's width, as many pages
    // as it takes; a page's columns hold about the same number of rows.
    let inner = Block::default().borders(Borders::ALL).inner(popup);
    let col_w = usize::from(inner.width.saturating_sub(1) / 2).max(1);
    let rows = usize::from(inner.height).max(1);
    let height = |e: &Line| super::fmt::wrapped_rows(e, col_w);
    let mut pages = Vec::new();
    let mut rest = entries.as_slice();
    while !rest.is_empty() {
        let fit = |from: &[Line]| {
            let mut used = 0;
            from.iter()
                .take_while(|e| {
                    used += height(e);
                    used <= rows
                })
                .count()
                .max(1)
        };
        let n_left = fit(rest);
        let n_right = fit(&rest[n_left.min(rest.len())..]).min(rest.len() - n_left);
        let page = rest.len().min(n_left + n_right);
        // On the last page, balance the two columns.
        let (l, r) = if page == rest.len() {
            let total: usize = rest.iter().map(height).sum();
            let mut acc = 0;
            let half = rest
                .iter()
                .take_while(|e| {
                    acc += height(e);
                    acc <= total.div_ceil(2)
                })
                .count()
                .max(1)
                .min(page);
            (half, page - half)
        } else {
            (n_left, n_right)
        };
        pages.push((rest[..l].to_vec(), rest[l..l + r].to_vec()));
        rest = &rest[page..];
    }
    Pages { popup, two, pages }
}

/// How many pages the help has on a screen `w` x `h` (for the keys that turn them).
pub fn pages(app: &App, w: u16, h: u16) -> usize {
    layout(app, Rect::new(0, 0, w, h), &Theme::new(false))
        .pages
        .len()
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, th: &Theme) {
    let Pages { popup, two, pages } = layout(app, area, th);
    let n = pages.len();
    let at = app.help_page.min(n.saturating_sub(1));
    f.render_widget(Clear, popup);
    let bottom = if n > 1 {
        format!(
            " page {}/{n}: ↓/PgDn next, ↑/PgUp back; any other key closes ",
            at + 1
        )
    } else {
        " any key closes this screen ".to_string()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(" ttop keys ", th.title))
        .title_bottom(Span::styled(bottom, th.dim));
    let inner = block.inner(popup);
    f.render_widget(block, popup);
    let Some((left, right)) = pages.into_iter().nth(at) else {
        return;
    };
    if two {
        let [l, r] = Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)])
            .spacing(1)
            .areas(inner);
        f.render_widget(Paragraph::new(left).wrap(Wrap { trim: false }), l);
        f.render_widget(Paragraph::new(right).wrap(Wrap { trim: false }), r);
    } else {
        f.render_widget(Paragraph::new(left), inner);
    }
}

/// A main binding that does not apply while replaying: its keys are taken over by the
/// replay table (space: play, not pause), or it records (a replay is a recording), or
/// it acts on a live process.
pub fn shadowed(b: &Binding) -> bool {
    matches!(
        b.action,
        Action::ToggleRecord | Action::Kill | Action::NiceBy(_) | Action::Affinity
    ) || b
        .keys
        .iter()
        .all(|k| REPLAY_KEYMAP.iter().any(|r| r.keys.contains(k)))
}

#[cfg(test)]
mod tests {
    use super::super::{cores, ipi, latency};

    /// Every column a hand-written header shows has its meaning among the columns the
    /// help screen lists (the tables built from a column list have it by construction).
    #[test]
    fn every_column_is_explained() {
        let ipi_senders = ["PID", "COMM", "KIND", "FUNCTION", "IPI/s", "CALLS/s"];
        let lat_threads = ["TID", "PID", "COMM", "WAITS/s", "MAX AT (UTC)"];
        type Help = &'static [(&'static str, &'static str)];
        let tables: [(Help, Vec<&str>); 3] = [
            (cores::COLUMNS, cores::HEADER.to_vec()),
            (ipi::COLUMNS, [&ipi::CPU_HEADER[..], &ipi_senders].concat()),
            (
                latency::COLUMNS,
                [&latency::CPU_HEADER[..], &lat_threads].concat(),
            ),
        ];
        for (columns, header) in tables {
            let names: Vec<&str> = columns.iter().flat_map(|(n, _)| n.split(", ")).collect();
            for h in header.iter().map(|h| h.trim()).filter(|h| !h.is_empty()) {
                assert!(names.contains(&h), "{h} has no help");
            }
        }
    }
}
