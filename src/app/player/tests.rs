//! The player's navigation: steps, jumps, go-to, pacing, a directory of files.

use super::*;
use crate::model::fixtures::{synthetic, system};
use crate::record::writer::header_for;
use crate::record::{Reader, Writer};

const SEC: u64 = 1_000_000_000;

/// 200 Samples one second apart, starting 2026-11-18 10:00:00 UTC.
fn player(name: &str) -> (Player, std::path::PathBuf) {
    let p = std::env::temp_dir().join(format!("ttop-player-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let mut w = Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
    let t0 = 1_795_000_000 * SEC / (86_400 * SEC) * 86_400 * SEC + 10 * 3600 * SEC;
    for i in 0..200 {
        let mut s = synthetic(2, 2, 10 + i);
        s.seq = i;
        s.wall_ns = t0 + i * SEC;
        s.mono_ns = 1000 * SEC + i * SEC;
        w.append(&s).unwrap();
    }
    w.finish().unwrap();
    (Player::new(Reader::open(&p).unwrap()), p)
}

#[test]
fn steps_jumps_and_goto() {
    let (mut pl, p) = player("nav");
    assert_eq!(pl.position(), 1);
    assert_eq!(pl.frame().unwrap().seq, 1);
    pl.step(-5);
    assert_eq!(pl.position(), 1, "cannot go before the first frame");
    pl.jump(10.0);
    assert_eq!(pl.position(), 11);
    pl.jump(60.0);
    assert_eq!(pl.position(), 71);
    pl.jump(-10.0);
    assert_eq!(pl.position(), 61);
    pl.step(1);
    assert_eq!(pl.frame().unwrap().seq, 62);
    pl.goto("10:02:00").unwrap();
    assert_eq!(pl.position(), 120);
    pl.goto("-30s").unwrap();
    assert_eq!(pl.position(), 90);
    pl.goto("+1m").unwrap();
    assert_eq!(pl.position(), 150);
    pl.goto("5").unwrap();
    assert_eq!(pl.position(), 5);
    pl.goto("2h").unwrap();
    assert_eq!(pl.position(), 199, "past the end: the last frame");
    assert!(pl.goto("25:00").is_err());
    assert!(pl.goto("soon").is_err());
    let bar = pl.bar(None);
    assert_eq!((bar.frame, bar.frames), (199, 199));
    let _ = std::fs::remove_file(&p);
}

/// Samples a little late, or early, each interval: "go to 5 s from the start" is
/// the one taken about 5 s in, and the bar says +0:05 (issue 34, defect 13: it
/// landed on the one before, +0:04).
#[test]
fn goto_lands_on_the_nearest_sample() {
    for (name, drift_ns) in [("late", 1_700_000i64), ("early", -900_000)] {
        let p =
            std::env::temp_dir().join(format!("ttop-player-near-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut w =
            Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
        let t0 = 1_795_000_000 * SEC;
        for i in 0..20u64 {
            let mut s = synthetic(2, 2, 10 + i);
            s.seq = i;
            s.wall_ns = (t0 + i * SEC).saturating_add_signed(drift_ns * i as i64);
            w.append(&s).unwrap();
        }
        w.finish().unwrap();
        let mut pl = Player::new(Reader::open(&p).unwrap());
        pl.goto("5").unwrap();
        assert_eq!(pl.position(), 5, "{name}");
        pl.goto("+3s").unwrap();
        assert_eq!(pl.position(), 8, "{name}");
        let bar = pl.bar(None);
        assert_eq!(
            ((bar.at_ns - bar.start_ns) as f64 / 1e9).round(),
            8.0,
            "{name}"
        );
        let _ = std::fs::remove_file(&p);
    }
}

#[test]
fn frames_equal_what_derive_gives_in_order() {
    let (mut pl, p) = player("frames");
    let sys = pl.series().header().system.clone();
    let mut r = Reader::open(&p).unwrap();
    pl.seek(150);
    let mut f = pl.frame().unwrap();
    let want = derive(&sys, Some(&r.sample(149).unwrap()), &r.sample(150).unwrap());
    // The findings are the window's (see findings_tests); the rest is derive's.
    assert!(!f.findings.is_empty());
    f.findings.clear();
    assert_eq!(f, want);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn playing_paces_frames_by_recorded_time() {
    let (mut pl, p) = player("pace");
    assert_eq!(pl.frame_time(), None, "starts paused");
    pl.playing = true;
    assert_eq!(pl.frame_time(), Some(Duration::from_secs(1)));
    pl.speed = pl.speed.faster();
    assert_eq!(pl.frame_time(), Some(Duration::from_millis(500)));
    pl.speed = Speed::Max;
    assert_eq!(pl.speed.faster(), Speed::Max);
    assert_eq!(pl.frame_time(), Some(Duration::ZERO));
    pl.seek(199);
    assert!(!pl.advance());
    assert!(!pl.playing, "stops at the end");
    let _ = std::fs::remove_file(&p);
}

/// A directory of two rotated files plays as one recording: positions, the frame
/// at the boundary (derived from the last Sample of the first file) and `g` to a
/// clock time in the second file.
#[test]
fn a_directory_plays_across_files_and_goto_reaches_the_second() {
    use crate::record::{Series, rotate};
    let dir = std::env::temp_dir().join(format!("ttop-player-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = 1_795_000_000 * SEC / (86_400 * SEC) * 86_400 * SEC + 10 * 3600 * SEC;
    let mut all = Vec::new();
    for part in 0..2u64 {
        let start = t0 + part * 100 * SEC;
        let p = dir.join(rotate::file_name(start));
        let mut w =
            Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
        for j in 0..100 {
            let i = part * 100 + j;
            let mut s = synthetic(2, 2, 10 + i);
            s.seq = i;
            s.wall_ns = t0 + i * SEC;
            s.mono_ns = 1000 * SEC + i * SEC;
            w.append(&s).unwrap();
            all.push(s);
        }
        w.finish().unwrap();
    }
    let mut pl = Player::new(Series::open(&dir).unwrap());
    assert_eq!(pl.len(), 200);
    pl.seek(100);
    let sys = pl.series().header().system.clone();
    let mut f = pl.frame().unwrap();
    f.findings.clear(); // the window's, see findings_tests
    assert_eq!(f, derive(&sys, Some(&all[99]), &all[100]));
    pl.goto("10:02:30").unwrap();
    assert_eq!(pl.position(), 150);
    assert_eq!(pl.frame().unwrap().seq, 150);
    let day = t0 / SEC / 86_400;
    let (y, m, d) = {
        let name = rotate::file_name(t0);
        (
            name[5..9].to_string(),
            name[9..11].to_string(),
            name[11..13].to_string(),
        )
    };
    assert_eq!(day * 86_400 * SEC + 10 * 3600 * SEC, t0);
    pl.goto(&format!("{y}-{m}-{d} 10:01:45")).unwrap();
    assert_eq!(pl.position(), 105);
    pl.goto(&format!("{y}-{m}-{d}T10:00:10")).unwrap();
    assert_eq!(pl.position(), 10);
    assert!(pl.goto(&format!("{y}-13-{d} 10:00")).is_err());
    pl.goto("10:02:30").unwrap();
    pl.jump(-60.0);
    assert_eq!(pl.position(), 90, "back across the boundary");
    let _ = std::fs::remove_dir_all(&dir);
}
