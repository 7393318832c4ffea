//! The terminal the dashboard and the replayer draw on, and putting it back.
//!
//! ratatui's `try_init` writes to `Stdout` itself, whose 1 KB line buffer, locked for
//! every escape sequence crossterm queues, turned one redraw of a 160x50 screen into a
//! dozen `write`s and several thousand lock round trips. Here the backend writes into a
//! 64 KB buffer that ratatui flushes once at the end of each frame: one `write` a frame.
//! Mouse capture is turned on with the alternate screen and off wherever that is left
//! (quit, error, panic, a signal's stop, Ctrl-Z), so a shell never receives mouse reports.

use std::io::{self, BufWriter, Stdout};

use crossterm::event::DisableMouseCapture;
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Big enough for a full redraw of a large screen with colours (about 30 KB at 200x60).
const FRAME_BUFFER: usize = 64 * 1024;

pub type Screen = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Mouse reports of presses, releases and the wheel, in SGR coordinates (1000 + 1006):
/// not crossterm's EnableMouseCapture, which also asks for every pointer motion (1003),
/// waking the dashboard each time the pointer crosses a cell for nothing it uses.
/// DisableMouseCapture turns off all of these.
struct ClicksAndWheel;

impl crossterm::Command for ClicksAndWheel {
    fn write_ansi(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1006h")
    }
}

/// Puts the terminal back however we leave (return, error, or unwinding panic).
pub struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        restore();
    }
}

/// Mouse capture off, then what `ratatui::restore` puts back (raw mode, the screen).
fn restore() {
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
}

/// The dashboard draws on stdout and reads keys from the terminal: when either is not a
/// terminal (`ssh HOST ttop` without -t, `ttop | less`), say what to do instead of
/// failing on the terminal's first ioctl ("No such device or address"). `instead` is
/// what gives the same figures without a terminal.
pub fn need_terminal(instead: &str) -> anyhow::Result<()> {
    // SAFETY: isatty only inspects the descriptors.
    let (out, input) = unsafe {
        (
            libc::isatty(libc::STDOUT_FILENO) == 1,
            libc::isatty(libc::STDIN_FILENO) == 1,
        )
    };
    let keys = input || std::fs::File::open("/dev/tty").is_ok();
    if out && keys {
        return Ok(());
    }
    let what = if out {
        "no terminal to read keys from"
    } else {
        "its output is not a terminal"
    };
    anyhow::bail!(
        "the dashboard needs a terminal ({what}). Over SSH run `ssh -t HOST ttop`; \
         without a terminal use {instead}"
    )
}

/// Raw mode and the alternate screen, as `ratatui::try_init` sets them up, and mouse
/// capture, with a panic hook that restores the terminal before the message prints.
pub fn open() -> io::Result<(Screen, Restore)> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        hook(info);
    }));
    enable_raw_mode()?;
    let restore = Restore;
    execute!(io::stdout(), EnterAlternateScreen, ClicksAndWheel)?;
    let out = BufWriter::with_capacity(FRAME_BUFFER, io::stdout());
    Ok((Terminal::new(CrosstermBackend::new(out))?, restore))
}

/// Ctrl-Z: put the terminal back as the shell expects it, stop as the terminal's Ctrl-Z
/// stops any job (the whole process group), and when continued (`fg`) take the terminal
/// again and redraw everything. In a process group no shell controls (nobody could
/// continue it) the kernel ignores the stop, and the dashboard simply comes back.
pub fn suspend(term: &mut Screen) -> io::Result<()> {
    term.show_cursor()?;
    execute!(io::stdout(), DisableMouseCapture, LeaveAlternateScreen)?;
    disable_raw_mode()?;
    // SAFETY: kill(0, SIGTSTP) sends the stop signal to our own process group.
    unsafe { libc::kill(0, libc::SIGTSTP) };
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, ClicksAndWheel)?;
    term.clear()
}
