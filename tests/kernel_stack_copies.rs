//! The stack copies ttop keeps per contended futex word (issue 19): which of a word's
//! stacks is shown, and that the copies of words gone idle are let go, so that new words
//! still get theirs. Needs root.

mod common;

use std::io::{BufRead, BufReader};

use common::watch::*;
use common::*;
use serde_json::Value;

/// A word contended from two call sites, one after the other, shows the stack most of
/// its contended waits had: the first site's while only it has waited, the second's once
/// it has many times more waits (the copy unwound is that stack's, not the word's first).
#[test]
fn a_words_stack_is_its_most_frequent_one() {
    if !require_root("a_words_stack_is_its_most_frequent_one") {
        return;
    }
    let _g = kernel_lock();
    let (mut pid, mut word) = (0u64, 0u64);
    let mut out = None;
    let frames = watch(8, || {
        let mut w = spawn_workload("twosites", &["1.5", "4"]);
        let mut r = BufReader::new(w.stdout.take().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let kv = parse_kv(&line);
        pid = kv["pid"].parse().unwrap();
        word = kv["word"].parse().unwrap();
        out = Some(r);
        w
    });
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out.unwrap(), &mut rest).unwrap();
    eprintln!("twosites: {rest}");
    let rows: Vec<(u64, Vec<String>)> = frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid && w["uaddr"] == word)
        .filter(|w| w["stack"].as_array().is_some_and(|s| !s.is_empty()))
        .map(|w| (w["contended"].as_u64().unwrap(), names(w)))
        .collect();
    for (c, s) in &rows {
        eprintln!("{c} contended: {:?}", &s[..s.len().min(6)]);
    }
    let site = |s: &[String]| {
        let rare = s.iter().any(|f| f.starts_with("rare_site_takes_lock"));
        let hot = s.iter().any(|f| f.starts_with("hot_site_takes_lock"));
        assert!(rare != hot, "one site per stack: {s:?}");
        if rare { "rare" } else { "hot" }
    };
    let (first, last) = (rows.first().unwrap(), rows.last().unwrap());
    assert_eq!(
        site(&first.1),
        "rare",
        "only the rare site had waited: {first:?}"
    );
    assert_eq!(
        site(&last.1),
        "hot",
        "the hot site has most waits: {last:?}"
    );
}

/// A long-lived process that moves its contention to new futex words (a fresh heap
/// mutex every 250 ms for 8 s, then 11 s without them, then two more words), while two
/// other threads keep one global mutex contended all along, holds stack copies only for
/// its live words: those of the busy phase's 32 words are let go once the words go idle
/// (10 s), so in the late phase the kernel map holds a few, not ~38, and the late words'
/// stacks are still unwound and named. (Kept per word and stack id while the process had
/// any live word, the copies of idle words stayed until the map was full, and then new
/// words got none: the build before this change held 38 in the late phase.)
#[test]
fn stack_copies_of_idle_words_are_let_go() {
    if !require_root("stack_copies_of_idle_words_are_let_go") {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(26, &[], || {
        spawn_workload("wordwalk", &["8", "250", "11", "2"])
    });
    let held = |f: &Value| f["user_frames"]["copies_held"].as_u64().unwrap_or(0);
    // Each frame's contended words of the workload, with their stacks.
    let rows: Vec<Vec<(u64, Vec<String>)>> = frames
        .iter()
        .map(|f| {
            f["futexes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|w| w["pid"] == pid && w["contended"].as_u64().unwrap_or(0) > 0)
                .map(|w| (w["uaddr"].as_u64().unwrap_or(0), names(w)))
                .collect()
        })
        .collect();
    // The global mutex is the word in the most frames; frames with another word are the
    // phases'.
    let mut seen: std::collections::HashMap<u64, usize> = Default::default();
    for r in &rows {
        for (u, _) in r {
            *seen.entry(*u).or_default() += 1;
        }
    }
    let steady = seen.iter().max_by_key(|e| *e.1).map(|e| *e.0).unwrap_or(0);
    let phases: Vec<(usize, u64)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.iter().any(|(u, _)| *u != steady))
        .map(|(i, _)| (i, held(&frames[i])))
        .collect();
    eprintln!(
        "{} frames; steady word {steady:#x} in {} of them; frames with phase words (frame, copies held): {phases:?}",
        frames.len(),
        seen.get(&steady).copied().unwrap_or(0)
    );
    let gap = phases
        .windows(2)
        .position(|w| w[1].0 > w[0].0 + 5)
        .expect("a busy phase, an idle gap and a late phase");
    let (early, late) = phases.split_at(gap + 1);
    let peak = early.iter().map(|b| b.1).max().unwrap();
    assert!(
        peak >= 16,
        "the busy phase's words had their copies (peak {peak} held)"
    );
    // `copies_held` counts every process's copies, and other processes on the machine
    // (the test harness's own waiting threads, CI's) contend futexes too: 4-8 were held in
    // the late phase on a quiet machine, 8-13 once in CI. Kept copies of idle words
    // would hold at least the busy phase's peak (the earlier build: 38); letting them go
    // leaves at most half of it.
    let bound = (peak / 2).max(12);
    for (i, h) in late {
        assert!(
            *h <= bound,
            "frame {i}: {h} copies held in the late phase (busy-phase peak {peak}, bound {bound}): idle words' copies were kept"
        );
    }
    let named = late
        .iter()
        .flat_map(|(i, _)| &rows[*i])
        .any(|(_, s)| has_chain(s, &["take_phase_lock", "phase_worker"]));
    assert!(
        named,
        "no late word's stack is named: {:?}",
        late.iter().map(|(i, _)| &rows[*i]).collect::<Vec<_>>()
    );
}
