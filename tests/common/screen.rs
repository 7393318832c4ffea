//! A screen drawn on a fixed-size TestBackend, for the snapshot tests.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ttop::app::App;

/// Render `app` at w x h: the screen as text (one line per row, trailing blanks cut)
/// and the buffer, for the styles.
pub fn screen(app: &App, w: u16, h: u16) -> (String, Buffer) {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| ttop::ui::render(f, app)).unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    (out, buf)
}

/// The screen as text only.
pub fn screen_text(app: &App, w: u16, h: u16) -> String {
    screen(app, w, h).0
}
