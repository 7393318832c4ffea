//! `ttop replay FILE`: the live dashboard over a recording. Frames come from the
//! player (the same `derive` as live); replay keys go to the player, every other key
//! to the App exactly as live, so every view, sort and filter works the same.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use crossterm::event::{Event, KeyEvent, KeyEventKind};

use super::App;
use super::keymap::ReplayAction;
use super::player::Player;
use super::prompt_edit::edit_prompt;
use super::replay_keys::replay_action_for;
use super::term_input::{Input, TermInput};
use crate::cli::{Cli, ReplayArgs};
use crate::record::Series;

/// The player, the App it feeds, and the "go to" prompt.
struct Session {
    player: Player,
    app: App,
    goto: Option<String>,
}

impl Session {
    /// Show the player's position. `continuous`: the previous frame shown was the one
    /// before, so the history graph goes on; otherwise it starts afresh.
    fn show(&mut self, continuous: bool) {
        if !continuous {
            self.app.history.clear();
        }
        if let Some(f) = self.player.frame() {
            self.app.push_frame(f);
        }
        if !continuous {
            // A jump: the frame shown before is not this one's neighbour, so what it had
            // and this one lacks did not exit.
            self.app.exited.clear();
        }
        self.refresh_bar();
    }

    fn refresh_bar(&mut self) {
        self.app.replay = Some(self.player.bar(self.goto.as_deref()));
    }

    fn act(&mut self, a: ReplayAction) {
        self.player.note = None;
        let moved = match a {
            ReplayAction::PlayPause => {
                self.player.playing = !self.player.playing;
                false
            }
            ReplayAction::Step(n) => self.player.step(n),
            ReplayAction::Jump(s) => self.player.jump(s as f64),
            ReplayAction::Finding(forward) => self.player.seek_finding(forward),
            ReplayAction::GoTo => {
                self.goto = Some(String::new());
                false
            }
            ReplayAction::Faster => {
                self.player.speed = self.player.speed.faster();
                false
            }
            ReplayAction::Slower => {
                self.player.speed = self.player.speed.slower();
                false
            }
        };
        if moved {
            self.show(a == ReplayAction::Step(1));
        } else {
            self.refresh_bar();
        }
    }

    fn goto_key(&mut self, k: &KeyEvent) {
        if let Some(text) = edit_prompt(&mut self.goto, k) {
            match self.player.goto(&text) {
                Ok(()) => {
                    self.player.note = None;
                    self.show(false);
                }
                Err(e) => self.player.note = Some(e),
            }
        }
        self.refresh_bar();
    }

    fn key(&mut self, k: &KeyEvent) {
        if self.goto.is_some() {
            self.goto_key(k);
        } else if let (false, Some(a)) = (self.app.typing(), replay_action_for(k)) {
            // As any key, a replay key closes the help screen, and does what it does.
            self.app.show_help = false;
            self.act(a);
        } else {
            self.app.key(k);
        }
        if self.app.profile.export {
            let t = self.app.frame.as_ref().map_or(0.0, |f| f.t);
            self.app.profile.export_now(t);
        }
        // A filter narrows the table; there is no collector to narrow the kernel side.
        self.app.requests.clear();
    }
}

/// Judging the recording for the time bar's marks: this long at a time, then a look at
/// the keys for up to MARK_PAUSE, the bar redrawn at most every MARK_REDRAW.
const MARK_SLICE: Duration = Duration::from_millis(20);
const MARK_PAUSE: Duration = Duration::from_millis(1);
const MARK_REDRAW: Duration = Duration::from_millis(250);

pub fn replay(cli: &Cli, args: &ReplayArgs) -> anyhow::Result<()> {
    let path = &args.file;
    super::screen::need_terminal(&format!(
        "`ttop replay {} --json` (its frames as JSON Lines)",
        path.display()
    ))?;
    let reader = Series::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if reader.len() < 2 {
        anyhow::bail!(
            "{}: {} sample(s) recorded: at least two are needed for one frame",
            path.display(),
            reader.len()
        );
    }
    let first_note = reader.notes().first().cloned().or_else(|| {
        reader.cuts().first().map(|(file, at)| {
            if reader.files() > 1 {
                format!(
                    "{} is cut short at byte {at} (still being written?)",
                    file.display()
                )
            } else {
                format!("the file is cut short at byte {at}; every complete frame is here")
            }
        })
    });
    let mut s = Session {
        player: Player::new(reader),
        app: App::new(),
        goto: None,
    };
    s.app.color = cli.color.enabled();
    s.app.source = "replay".to_string();
    if !args.pids.is_empty() {
        let pids: Vec<String> = args.pids.iter().map(u32::to_string).collect();
        s.app.filter_text = Some(pids.join(","));
    }
    s.show(false);
    s.player.note = s.player.note.take().or(first_note);
    s.refresh_bar();

    let stop = crate::stop::Stop::on_signals()?;
    let mut input = TermInput::new(&stop)?;
    super::term_input::exit_if_stuck_after_signal(super::run::EXIT_GRACE)?;
    let (mut term, restore) = super::screen::open()?;
    let mut due: Option<Instant> = None;
    let mut dirty = true;
    let mut marks_drawn = Instant::now();
    loop {
        if stop.is_set() || s.app.quit {
            return Ok(());
        }
        match (s.player.frame_time(), due) {
            (None, _) => due = None,
            (Some(d), None) => due = Some(Instant::now() + d),
            (Some(_), Some(t)) if Instant::now() >= t => {
                if s.player.advance() {
                    s.show(true);
                }
                s.refresh_bar();
                due = s.player.frame_time().map(|d| Instant::now() + d);
                dirty = true;
            }
            _ => {}
        }
        // While idle, judge the recording for the time bar's marks: 20 ms at a time, the
        // bar redrawn at most 4 times a second, keys answered between the slices.
        if !s.player.marks_done() {
            let t0 = Instant::now();
            while !s.player.marks_done() && t0.elapsed() < MARK_SLICE {
                s.player.mark_more(16);
            }
            if s.player.marks_done() || marks_drawn.elapsed() >= MARK_REDRAW {
                s.refresh_bar();
                marks_drawn = Instant::now();
                dirty = true;
            }
        }
        if dirty {
            let mut table = None;
            if term
                .draw(|f| table = crate::ui::render_mapped(f, &s.app))
                .is_err()
            {
                break;
            }
            s.app.proc_table = table;
            dirty = false;
        }
        // Until the next frame is due when playing; until a key or a stop when paused.
        let mut wait = due.map(|t| t.saturating_duration_since(Instant::now()));
        if !s.player.marks_done() {
            wait = Some(wait.map_or(MARK_PAUSE, |w| w.min(MARK_PAUSE)));
        }
        let events = match input.wait(wait)? {
            Input::Events(ev) => ev,
            Input::Gone => break,
        };
        for ev in events {
            match ev {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if let Ok(sz) = term.size() {
                        s.app.profile.grid = (sz.width, usize::from(sz.height));
                        s.app.screen = (sz.width, sz.height);
                    }
                    s.key(&k);
                    if std::mem::take(&mut s.app.suspend) {
                        super::screen::suspend(&mut term)?;
                    }
                    if s.player.frame_time().is_none() {
                        due = None;
                    }
                    dirty = true;
                }
                // As live: the table the last render drew; a move changes nothing.
                Event::Mouse(m) => {
                    dirty |= s.app.mouse(&m);
                    s.app.requests.clear();
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
    }
    // The terminal is gone (SSH dropped): restoring would write to a dead tty.
    std::mem::forget(term);
    std::mem::forget(restore);
    Ok(())
}
