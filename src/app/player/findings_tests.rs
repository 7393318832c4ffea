//! Replay shows the findings live showed: after seeks, n / N, and the time bar's marks.

use super::*;
use crate::model::findings::Window;
use crate::model::fixtures::{incident, synthetic, system};
use crate::record::Reader;
use crate::record::Writer;
use crate::record::writer::header_for;

/// A quiet stretch, an incident (saturation, churn, ...) for 12 intervals, quiet again.
fn recording(name: &str) -> (Vec<Sample>, std::path::PathBuf) {
    let p = std::env::temp_dir().join(format!(
        "ttop-player-findings-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    let mut w = Writer::create(&p, &header_for(&system(), Duration::from_secs(1), None)).unwrap();
    let mut all = Vec::new();
    for i in 0..40u64 {
        let mut s = if (10..22).contains(&i) {
            incident(i, true)
        } else {
            // Without eBPF: nothing is guessed, so nothing shows.
            let mut s = synthetic(2, 2, 10 + i);
            s.bpf = None;
            s
        };
        s.seq = i;
        w.append(&s).unwrap();
        all.push(s);
    }
    w.finish().unwrap();
    (all, p)
}

/// Replay shows the findings live showed, at the same frames, however it got there.
#[test]
fn findings_come_back_at_the_same_frames_after_seeks() {
    let (samples, p) = recording("seeks");
    let sys = system();
    let mut w = Window::new();
    let want: Vec<_> = (1..samples.len())
        .map(|i| {
            let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
            w.push(&mut f);
            f.findings
        })
        .collect();
    let first = want.iter().position(|f| !f.is_empty()).unwrap();
    assert!(
        first > 10,
        "the incident's findings hold first: {first} {:?}",
        want[first]
            .iter()
            .map(|f| (f.kind, &f.summary))
            .collect::<Vec<_>>()
    );
    assert!(want.last().unwrap().is_empty(), "and end");
    let mut pl = Player::new(Reader::open(&p).unwrap());
    for pos in [1, 2, 3, 14, 15, 16, 30, 12, 25, 26, 24, 39, 13] {
        pl.seek(pos);
        let got = pl.frame().unwrap().findings;
        assert_eq!(got, want[pos - 1], "position {pos}");
    }
    let _ = std::fs::remove_file(&p);
}

/// n / N land where a finding starts showing: forward from the start, back from the end.
#[test]
fn next_and_previous_finding() {
    let (samples, p) = recording("next");
    let sys = system();
    let mut w = Window::new();
    let mut prev: Vec<(&str, u64)> = Vec::new();
    let mut onsets = Vec::new();
    for i in 1..samples.len() {
        let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
        w.push(&mut f);
        let act: Vec<_> = f
            .findings
            .iter()
            .filter(|f| f.active)
            .map(|f| (f.kind, f.key))
            .collect();
        if act.iter().any(|k| !prev.contains(k)) {
            onsets.push(i);
        }
        prev = act;
    }
    assert!(!onsets.is_empty());
    let mut pl = Player::new(Reader::open(&p).unwrap());
    assert!(pl.seek_finding(true));
    assert_eq!(pl.position(), onsets[0]);
    assert!(!pl.seek_finding(false), "nothing starts before the first");
    assert_eq!(pl.position(), onsets[0]);
    pl.seek(39);
    assert!(pl.seek_finding(false));
    assert_eq!(pl.position(), *onsets.last().unwrap());
    pl.seek(39);
    assert!(!pl.seek_finding(true), "nothing after the end");
    assert!(pl.note.is_some());
    let _ = std::fs::remove_file(&p);
}

/// The time bar's marks, judged in the background a few frames at a time, are where
/// the frames had an active finding, each with its most severe level.
#[test]
fn marks_are_where_findings_were_active() {
    use super::marks::{NONE, UNKNOWN, level};
    let (samples, p) = recording("marks");
    let sys = system();
    let mut w = Window::new();
    let mut want = vec![NONE];
    for i in 1..samples.len() {
        let mut f = derive(&sys, Some(&samples[i - 1]), &samples[i]);
        w.push(&mut f);
        let top = f
            .findings
            .iter()
            .filter(|f| f.active)
            .map(|f| level(f.severity))
            .max();
        want.push(top.unwrap_or(NONE));
    }
    assert!(want.iter().any(|&m| m > NONE) && want.contains(&NONE));
    let mut pl = Player::new(Reader::open(&p).unwrap());
    assert!(pl.bar(None).marks.iter().all(|&m| m == UNKNOWN));
    // Playing and seeking meanwhile changes nothing in the marks.
    let mut rounds = 0;
    while !pl.marks_done() {
        pl.mark_more(7);
        pl.seek((rounds * 13) % samples.len());
        let _ = pl.frame();
        rounds += 1;
    }
    assert_eq!(rounds, samples.len().div_ceil(7));
    let got: Vec<u8> = (0..samples.len()).map(|i| pl.mark(i)).collect();
    assert_eq!(got, want);
    // Bucketed for the bar: 40 positions over 240 stretches, each its position's.
    let b = pl.bar(None).marks;
    assert_eq!(b.len(), MARK_BUCKETS);
    assert_eq!(b[6 * 20], want[20]);
    let _ = std::fs::remove_file(&p);
}
