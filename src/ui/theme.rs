//! Styles. With colour off (NO_COLOR, --color never) only modifiers are used, so the
//! screen still reads on a monochrome terminal.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
    pub normal: Style,
    pub dim: Style,
    pub title: Style,
    pub header: Style,
    pub warn: Style,
    pub alert: Style,
    pub good: Style,
    pub selected: Style,
    pub truth: Style,
    pub scan: Style,
    /// A thread row of the process tree (H), as htop draws them apart.
    pub thread: Style,
}

impl Theme {
    pub fn new(color: bool) -> Self {
        let b = Style::default();
        if color {
            Self {
                color,
                normal: b,
                dim: b.fg(Color::DarkGray),
                title: b.fg(Color::Cyan).add_modifier(Modifier::BOLD),
                header: b.fg(Color::Black).bg(Color::Cyan),
                warn: b.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                alert: b
                    .fg(Color::White)
                    .bg(Color::Red)
                    .add_modifier(Modifier::BOLD),
                good: b.fg(Color::Green),
                selected: b.add_modifier(Modifier::REVERSED),
                truth: b.fg(Color::Green),
                scan: b.fg(Color::Magenta),
                thread: b.fg(Color::Green),
            }
        } else {
            Self {
                color,
                normal: b,
                dim: b,
                title: b.add_modifier(Modifier::BOLD),
                header: b.add_modifier(Modifier::REVERSED),
                warn: b.add_modifier(Modifier::BOLD),
                alert: b.add_modifier(Modifier::BOLD | Modifier::REVERSED),
                good: b,
                selected: b.add_modifier(Modifier::REVERSED),
                truth: b.add_modifier(Modifier::BOLD),
                scan: b,
                thread: b.add_modifier(Modifier::ITALIC),
            }
        }
    }
}
