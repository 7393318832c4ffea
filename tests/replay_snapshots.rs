//! The replay screen as insta snapshots: fixture Samples are recorded to a real file,
//! played back by the real player, and rendered by the same UI as live, with the time
//! bar (paused, playing at a seek position, the "go to" prompt, the help screen).

mod common;
use common::screen::screen_text as screen;

use std::path::PathBuf;
use std::time::Duration;

use ttop::app::player::{Player, Speed};
use ttop::app::{Action, App};
use ttop::model::fixtures;
use ttop::record::writer::header_for;
use ttop::record::{Reader, Writer};

macro_rules! snap {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

/// Five minutes of the incident fixture, one Sample a second, as a recording.
fn recording(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-snapshots");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let hdr = header_for(&fixtures::system(), Duration::from_secs(1), None);
    let mut w = Writer::create(&p, &hdr).unwrap();
    for i in 0..=300 {
        w.append(&fixtures::incident(i, true)).unwrap();
    }
    w.finish().unwrap();
    p
}

/// What the replay loop does after every move: the frame into the App, the bar beside it.
fn show(app: &mut App, pl: &mut Player, goto: Option<&str>) {
    if let Some(f) = pl.frame() {
        app.push_frame(f);
    }
    app.replay = Some(pl.bar(goto));
}

fn replay_app(name: &str) -> (App, Player, PathBuf) {
    let p = recording(name);
    let mut pl = Player::new(Reader::open(&p).unwrap());
    let mut app = App::new();
    app.source = "replay".into();
    show(&mut app, &mut pl, None);
    (app, pl, p)
}

#[test]
fn replay_paused_at_the_start_80x24() {
    let (app, _, p) = replay_app("start");
    let s = screen(&app, 80, 24);
    assert!(s.contains("PAUSED") && s.contains("frame 1/300"), "{s}");
    assert!(
        s.contains("db-prod-7"),
        "the recorded host is in the header:\n{s}"
    );
    snap!("replay_paused_80x24", s);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn replay_playing_at_a_seek_position_120x32() {
    let (mut app, mut pl, p) = replay_app("seek");
    pl.goto("+2m").unwrap();
    pl.jump(-10.0);
    pl.step(1);
    pl.playing = true;
    pl.speed = Speed::X10;
    show(&mut app, &mut pl, None);
    let s = screen(&app, 120, 32);
    assert!(s.contains("frame 112/300") && s.contains("▶ 10x"), "{s}");
    snap!("replay_seek_playing_120x32", s);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn replay_goto_prompt_and_help() {
    let (mut app, mut pl, p) = replay_app("goto");
    show(&mut app, &mut pl, Some("14:0"));
    snap!("replay_goto_prompt_80x24", screen(&app, 80, 24));
    app.replay = Some(pl.bar(None));
    app.handle(Action::Help);
    let s = screen(&app, 100, 40);
    assert!(s.contains("play / pause the replay"), "{s}");
    assert!(
        !s.contains("start / stop recording"),
        "no recording from a replay:\n{s}"
    );
    snap!("replay_help_100x40", s);
    let _ = std::fs::remove_file(&p);
}

/// The time bar never breaks the screen, down to the smallest terminal.
#[test]
fn replay_tiny_terminals_do_not_panic() {
    let (app, _, p) = replay_app("tiny");
    for (w, h) in [(40, 12), (20, 5), (1, 1), (200, 60)] {
        let _ = screen(&app, w, h);
    }
    let _ = std::fs::remove_file(&p);
}

/// The time bar marks where findings were active once the recording is judged (the
/// replay loop does it while idle): five minutes, the incident in the middle minute only.
#[test]
fn replay_time_bar_marks_findings_100x30() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-snapshots");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("marks-{}", std::process::id()));
    let hdr = header_for(&fixtures::system(), Duration::from_secs(1), None);
    let mut w = Writer::create(&p, &hdr).unwrap();
    for i in 0..=300u64 {
        let mut s = fixtures::incident(i, true);
        if !(120..180).contains(&i) {
            // Quiet: the same machine without eBPF, where nothing is guessed.
            s.bpf = None;
        }
        w.append(&s).unwrap();
    }
    w.finish().unwrap();
    let mut pl = Player::new(Reader::open(&p).unwrap());
    while !pl.marks_done() {
        pl.mark_more(50);
    }
    pl.goto("+1m").unwrap();
    let mut app = App::new();
    app.source = "replay".into();
    show(&mut app, &mut pl, None);
    let s = screen(&app, 100, 30);
    let bar = s.lines().find(|l| l.contains("frame 6")).expect(&s);
    let track: String = bar.chars().filter(|c| "━─●▲△".contains(*c)).collect();
    // Marked from 2:02 (the findings hold 3 frames) to 3:05 (they linger 5), of 5:00.
    let first = track.find('▲').expect(bar) / '▲'.len_utf8();
    let marked = track.chars().filter(|&c| c == '▲').count();
    let w = track.chars().count();
    assert!(
        (first as f64 / w as f64 - 122.0 / 300.0).abs() < 0.05,
        "first mark at {first} of {w}: {bar}"
    );
    assert!(
        (marked as f64 / w as f64 - 63.0 / 300.0).abs() < 0.05,
        "{marked} of {w} cells: {bar}"
    );
    snap!("replay_time_bar_marks_100x30", s);
    let _ = std::fs::remove_file(&p);
}
