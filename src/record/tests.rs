//! Writer -> Reader over fixture Samples: exact round trips, random access across
//! keyframes, the index, and every possible truncation.

use std::path::PathBuf;
use std::time::Duration;

use super::format::KEYFRAME_EVERY;
use super::writer::header_for;
use super::{Reader, Writer};
use crate::model::Sample;
use crate::model::fixtures::{synthetic, system};

fn path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ttop-unit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn samples(n: u64, procs: u32, threads: u32) -> Vec<Sample> {
    (0..n)
        .map(|i| {
            let mut s = synthetic(procs, threads, 10 + i);
            s.seq = i;
            s
        })
        .collect()
}

fn write(name: &str, ss: &[Sample], finish: bool) -> PathBuf {
    let p = path(name);
    let hdr = header_for(&system(), Duration::from_secs(1), None);
    let mut w = Writer::create(&p, &hdr).unwrap();
    for s in ss {
        w.append(s).unwrap();
    }
    if finish {
        w.finish().unwrap();
    } else {
        std::mem::forget(w); // as if killed: no index, no footer
    }
    p
}

#[test]
fn round_trip_across_keyframes_with_and_without_the_index() {
    let ss = samples(2 * KEYFRAME_EVERY + 5, 4, 3);
    for finish in [true, false] {
        let p = write(&format!("rt-{finish}"), &ss, finish);
        let mut r = Reader::open(&p).unwrap();
        assert_eq!(r.indexed(), finish);
        assert_eq!(r.cut_at(), None);
        assert!(r.notes().is_empty(), "{:?}", r.notes());
        assert_eq!(r.header().system, system());
        assert_eq!(r.len(), ss.len());
        assert_eq!(r.entries().iter().filter(|e| e.key).count(), 3);
        for (i, s) in ss.iter().enumerate() {
            assert_eq!(&r.sample(i).unwrap(), s, "sample {i}");
        }
        // Random access: backwards, and jumps into the middle of keyframe groups.
        for i in [124, 3, 64, 64, 59, 60, 0, 120] {
            assert_eq!(r.sample(i).unwrap(), ss[i], "sample {i}");
        }
        let _ = std::fs::remove_file(&p);
    }
}

#[test]
fn position_at_finds_the_sample_at_a_time() {
    let ss = samples(5, 1, 1);
    let p = write("seek", &ss, true);
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.position_at(0), 0);
    assert_eq!(r.position_at(ss[2].wall_ns), 2);
    assert_eq!(r.position_at(ss[2].wall_ns + 1), 2);
    assert_eq!(r.position_at(u64::MAX), 4);
    let _ = std::fs::remove_file(&p);
}

/// Cut the file at every byte: the header gives a one-line error; past it, every
/// complete record is read and nothing else.
#[test]
fn every_truncation_reads_every_complete_frame() {
    let ss = samples(6, 2, 2);
    let p = write("trunc-src", &ss, true);
    let bytes = std::fs::read(&p).unwrap();
    let full = Reader::open(&p).unwrap();
    let offsets: Vec<u64> = full.entries().iter().map(|e| e.offset).collect();
    let footer = &bytes[bytes.len() - 24..];
    let index_at = u64::from_le_bytes(footer[8..16].try_into().unwrap());
    let ends: Vec<u64> = offsets[1..].iter().copied().chain([index_at]).collect();
    let cut_path = path("trunc");
    for cut in 0..bytes.len() as u64 {
        std::fs::write(&cut_path, &bytes[..cut as usize]).unwrap();
        let Ok(mut r) = Reader::open(&cut_path) else {
            assert!(cut < offsets[0], "cut at {cut}: refused a readable file");
            continue;
        };
        assert!(cut >= offsets[0], "cut at {cut}: accepted a cut header");
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(r.len(), complete, "cut at {cut}");
        for (i, s) in ss.iter().enumerate().take(complete) {
            assert_eq!(r.sample(i).as_ref(), Ok(s), "cut at {cut}, sample {i}");
        }
        // Inside a Sample record, or so early in the index record that its kind is cut.
        let inside = offsets.iter().zip(&ends).any(|(&o, &e)| o < cut && cut < e)
            || (index_at < cut && cut <= index_at + 4);
        assert_eq!(
            r.cut_at().is_some(),
            inside,
            "cut at {cut}: {:?}",
            r.cut_at()
        );
        assert!(r.notes().is_empty(), "cut at {cut}: {:?}", r.notes());
    }
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_file(&cut_path);
}

#[test]
fn files_are_private_and_never_overwritten() {
    use std::os::unix::fs::PermissionsExt;
    let p = write("mode", &samples(1, 1, 1), true);
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let hdr = header_for(&system(), Duration::from_secs(1), None);
    assert!(Writer::create(&p, &hdr).is_err());
    let _ = std::fs::remove_file(&p);
}

/// Big Samples get keyframes sooner, so a seek never decodes too many bytes.
#[test]
fn big_samples_get_keyframes_by_bytes() {
    let ss = samples(40, 150, 20);
    let raw = crate::record::codec::to_raw(&ss[0]).len();
    let p = write("bigkeys", &ss, true);
    let mut r = Reader::open(&p).unwrap();
    let keys = r.entries().iter().filter(|e| e.key).count();
    let want = 40usize.div_ceil(super::format::KEYFRAME_RAW_BYTES.div_ceil(raw));
    assert!(
        want >= 2 && keys >= want,
        "{keys} keyframes for 40 samples of {raw} bytes"
    );
    assert_eq!(r.sample(39).unwrap(), ss[39]);
    let _ = std::fs::remove_file(&p);
}
