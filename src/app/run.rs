//! The live dashboard's event loop: samples arrive from the collector thread over a
//! bounded channel, keys arrive from the terminal, and the screen is redrawn when either
//! changed something. The terminal is restored on q, Ctrl-C, SIGTERM, SIGHUP and panic.

use std::sync::mpsc::{TryRecvError, sync_channel};
use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};

use super::App;
use super::term_input::{Input, TermInput};
use crate::cli::Cli;
use crate::collect::{Collector, Config, FutexChoice};
use crate::model::{Sample, derive};
use crate::record::live::LiveRecorder;
use crate::stop::Stop;
/// How long a normal shutdown may take after a signal before the process just exits.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(5);

pub fn live(
    cli: &Cli,
    cfg: &Config,
    notes: Vec<String>,
    config: Option<super::config_file::ConfigFile>,
) -> anyhow::Result<()> {
    super::screen::need_terminal(
        "`ttop --json` (a frame per interval), or `ttop record -o FILE` and replay it later",
    )?;
    let sys = crate::collect::system_info();
    // The futex view hooks every futex call while it is open.
    let collector = Collector::new(&Config {
        futex: match cfg.futex {
            FutexChoice::Sleeps => FutexChoice::OnDemand,
            other => other,
        },
        ..cfg.clone()
    });
    let stop = Stop::on_signals()?;
    let (tx, rx) = sync_channel::<Sample>(2);
    let (req_tx, req_rx) = std::sync::mpsc::channel();
    let mut input = TermInput::new(&stop)?;
    let waker = input.waker()?;
    super::term_input::exit_if_stuck_after_signal(EXIT_GRACE)?;
    let handle = crate::collect::spawn_with_requests(
        collector,
        cli.delay,
        cli.rt,
        tx,
        stop.clone(),
        Some(req_rx),
        Some(Box::new(move || waker.wake())),
    );

    let mut app = App::new();
    app.color = cli.color.enabled();
    app.notes = notes;
    let mut start_settings = None;
    if let Some(c) = &config {
        super::config_file::apply(&c.settings, &mut app);
        start_settings = Some(super::config_file::capture(&app, &c.settings));
        if let Some(e) = &c.error {
            eprintln!("ttop: settings not used: {e}");
            app.notes.push(format!(
                "settings not used ({e}): the defaults instead; the file is left as it is"
            ));
        }
    }
    // --record FILE records from the start; the record key starts and stops it.
    let mut rec = LiveRecorder::new(&sys, cli.delay, cfg.pids.clone(), cli.record.clone())?;
    app.recording = rec.label();
    let mut gone = false;
    let result = {
        let (mut term, restore) = super::screen::open()?;
        let mut prev: Option<Sample> = None;
        let mut window = crate::model::findings::Window::new();
        let mut dirty = true;
        let result = loop {
            if stop.is_set() || app.quit {
                break Ok(());
            }
            loop {
                match rx.try_recv() {
                    Ok(s) => {
                        rec.append(&s);
                        app.recording = rec.label();
                        let mut f = derive(&sys, prev.as_ref(), &s);
                        // As `--json` and replay: the first Sample only primes.
                        if prev.is_some() {
                            window.push(&mut f);
                        }
                        app.push_frame(f);
                        prev = Some(s);
                        dirty = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        stop.set();
                        break;
                    }
                }
            }
            if dirty {
                // A dead terminal (SSH gone) makes drawing fail: leave quietly.
                let mut table = None;
                if term
                    .draw(|f| table = crate::ui::render_mapped(f, &app))
                    .is_err()
                {
                    gone = true;
                    break Ok(());
                }
                app.proc_table = table;
                dirty = false;
            }
            // Until a key, a Sample, a resize or a stop: one wake-up per interval when idle.
            let events = match input.wait(None) {
                Ok(Input::Events(ev)) => ev,
                // The terminal is gone (SSH dropped): nothing to restore, nobody to tell.
                Ok(Input::Gone) => {
                    gone = true;
                    break Ok(());
                }
                Err(e) => break Err(e.into()),
            };
            for ev in events {
                match ev {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        if let Ok(sz) = term.size() {
                            app.profile.grid = (sz.width, usize::from(sz.height));
                            app.screen = (sz.width, sz.height);
                        }
                        app.key(&k);
                        dirty = true;
                    }
                    // A pointer moving over the screen changes nothing: no redraw.
                    Event::Mouse(m) => dirty |= app.mouse(&m),
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
            for r in app.requests.drain(..) {
                let _ = req_tx.send(r);
            }
            for r in std::mem::take(&mut app.act_requests) {
                app.act_result = Some(super::act_exec::perform(&r).unwrap_or_else(|e| e));
            }
            if app.profile.export {
                let t = app.frame.as_ref().map_or(0.0, |f| f.t);
                app.profile.export_now(t);
            }
            if std::mem::take(&mut app.toggle_record) {
                rec.toggle();
                app.recording = rec.label();
            }
            if std::mem::take(&mut app.suspend) {
                if let Err(e) = super::screen::suspend(&mut term) {
                    break Err(e.into());
                }
                dirty = true;
            }
        };
        if gone {
            // Restoring would write to a dead tty (and ratatui panics when that fails).
            std::mem::forget(term);
            std::mem::forget(restore);
        }
        result
    };
    stop.set();
    drop(rx);
    // The collector waits on this channel between ticks: closing it ends that wait.
    drop(req_tx);
    let _ = handle.join();
    // What the dashboard showed at the end becomes the settings (if they changed).
    if let (Some(c), Some(start)) = (&config, &start_settings)
        && app.settings_touched
        && let Err(e) = c.save(start, &super::config_file::capture(&app, &c.settings))
    {
        eprintln!("ttop: cannot save settings to {}: {e}", c.path.display());
    }
    result
}
