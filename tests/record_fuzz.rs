//! A bounded fuzz pass over the recording reader: real recordings (made by the real
//! collector, /proc only, so no root is needed) are mutated (bit flips, truncation,
//! splices, junk, deletions, damaged lengths, and payload damage behind *valid*
//! checksums, so the decompressor and the Sample decoder see garbage too) and read back
//! to the last frame, deriving every Frame. Nothing may panic. A failing input is saved
//! under target/tmp for reproduction.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ttop::collect::{Collector, Config};
use ttop::model::derive;
use ttop::record::format::{RECORD_HEADER_LEN, RecordHeader};
use ttop::record::writer::header_for;
use ttop::record::{Reader, Writer};

/// Wall-clock budget for the random pass (CI runs it on every push).
const BUDGET: Duration = Duration::from_secs(8);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("record-fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A real recording of `n` Samples of this test process (small, so many mutations fit).
fn recording(name: &str, n: usize) -> Vec<u8> {
    let cfg = Config {
        bpf: false,
        pids: Some(vec![std::process::id()]),
        ..Config::default()
    };
    let sys = ttop::collect::system_info();
    let mut c = Collector::new(&cfg);
    let p = tmp(name);
    let mut w = Writer::create(&p, &header_for(&sys, Duration::from_millis(10), None)).unwrap();
    for _ in 0..n {
        w.append(&c.sample()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    w.finish().unwrap();
    let b = std::fs::read(&p).unwrap();
    let _ = std::fs::remove_file(&p);
    b
}

/// Read everything a replay would: every frame in order, derived, plus random seeks.
/// Returns how many Samples decoded.
fn read_all(path: &Path, rng: &mut Rng) -> usize {
    let Ok(mut r) = Reader::open(path) else {
        return 0;
    };
    let sys = r.header().system.clone();
    let mut prev = None;
    let mut ok = 0;
    for i in 0..r.len() {
        if let Ok(s) = r.sample(i) {
            let _ = derive(&sys, prev.as_ref(), &s);
            prev = Some(s);
            ok += 1;
        }
    }
    for _ in 0..3 {
        let _ = r.sample(rng.below(r.len() + 2));
        let _ = r.position_at(rng.next());
    }
    ok
}

/// Offsets of the Sample records (to aim mutations at lengths and payloads).
fn record_offsets(b: &[u8]) -> Vec<usize> {
    (0..b.len().saturating_sub(RECORD_HEADER_LEN))
        .filter(|&i| RecordHeader::decode(&b[i..]).is_some())
        .collect()
}

fn mutate(src: &[u8], records: &[usize], rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let mut b = src.to_vec();
    let len = b.len();
    let what = match rng.below(8) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(len);
                b[i] ^= 1 << rng.below(8);
            }
            "bit flips"
        }
        1 => {
            b.truncate(rng.below(len));
            "truncate"
        }
        2 => {
            let (from, to, n) = (rng.below(len), rng.below(len), 1 + rng.below(512));
            let chunk: Vec<u8> = b[from..(from + n).min(len)].to_vec();
            let end = (to + chunk.len()).min(len);
            b[to..end].copy_from_slice(&chunk[..end - to]);
            "splice (overwrite with another part)"
        }
        3 => {
            let at = rng.below(len);
            let junk: Vec<u8> = (0..1 + rng.below(300)).map(|_| rng.next() as u8).collect();
            b.splice(at..at, junk);
            "insert junk"
        }
        4 => {
            let at = rng.below(len);
            let n = (1 + rng.below(400)).min(len - at);
            b.drain(at..at + n);
            "delete"
        }
        5 => {
            let at = rng.below(len);
            let n = (1 + rng.below(2000)).min(len - at);
            let copy: Vec<u8> = b[at..at + n].to_vec();
            let to = rng.below(len);
            b.splice(to..to, copy);
            "duplicate a range"
        }
        6 => {
            // A record header that lies about its length, with a valid checksum.
            let at = records[rng.below(records.len())];
            let mut h = RecordHeader::decode(&b[at..]).unwrap();
            h.len = match rng.below(3) {
                0 => rng.next() as u32,
                1 => h.len.wrapping_add(1 + rng.below(64) as u32),
                _ => h.len.saturating_sub(1 + rng.below(64) as u32),
            };
            b[at..at + RECORD_HEADER_LEN].copy_from_slice(&h.encode());
            "length lie behind a valid header checksum"
        }
        _ => {
            // Damage a payload and fix both checksums: zstd and JSON see garbage.
            let at = records[rng.below(records.len())];
            let mut h = RecordHeader::decode(&b[at..]).unwrap();
            let start = at + RECORD_HEADER_LEN;
            let end = (start + h.len as usize).min(len);
            if end > start {
                for _ in 0..1 + rng.below(6) {
                    let i = start + rng.below(end - start);
                    b[i] = rng.next() as u8;
                }
                h.payload_crc = crc32fast::hash(&b[start..end]);
                b[at..at + RECORD_HEADER_LEN].copy_from_slice(&h.encode());
            }
            "payload damage behind valid checksums"
        }
    };
    (b, what)
}

/// The binary on the same input: exit 0 (with warnings) or 1 with a one-line error.
fn cli_survives(p: &Path, what: &str) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ttop"))
        .args(["replay", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    match o.status.code() {
        Some(0) => {}
        Some(1) => assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}"),
        c => panic!("{what}: exit {c:?}: {err}"),
    }
}

#[test]
fn mutated_recordings_never_panic() {
    // Two keyframe groups and a bit: deltas, keyframes and the index are all in play.
    let src = recording("fuzz-src", 65);
    let records = record_offsets(&src);
    assert!(records.len() >= 66, "{} records", records.len());
    let p = tmp("fuzz-case");
    let seed = std::env::var("TTOP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7707_2026_u64);
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let mut n = 0u64;
    let mut decoded = 0usize;
    while t0.elapsed() < BUDGET {
        let (mut b, mut what) = mutate(&src, &records, &mut rng);
        if rng.below(4) == 0 {
            // Stack a second mutation on a quarter of the cases.
            let recs = record_offsets(&b);
            if !recs.is_empty() && !b.is_empty() {
                (b, what) = mutate(&b, &recs, &mut rng);
            }
        }
        std::fs::write(&p, &b).unwrap();
        let r = std::panic::catch_unwind(|| read_all(&p, &mut Rng(n + 1)));
        if n.is_multiple_of(100) {
            cli_survives(&p, what);
        }
        match r {
            Ok(k) => decoded += k,
            Err(_) => {
                let keep = tmp(&format!("fuzz-panic-{n}"));
                std::fs::write(&keep, &b).unwrap();
                panic!(
                    "reader panicked on case {n} ({what}, seed {seed}); input saved to {}",
                    keep.display()
                );
            }
        }
        n += 1;
    }
    eprintln!(
        "fuzz: {n} mutated recordings read in {:?}, {decoded} samples decoded",
        t0.elapsed()
    );
    assert!(n >= 200, "only {n} cases in the budget");
    let _ = std::fs::remove_file(&p);
}

/// Every byte offset of a small real recording: the header is refused with an error,
/// past it every complete frame decodes, and nothing panics.
#[test]
fn truncation_at_every_offset_of_a_real_recording() {
    let src = recording("trunc-src", 4);
    let records = record_offsets(&src);
    let p = tmp("trunc-case");
    let mut rng = Rng(1);
    for cut in 0..src.len() {
        std::fs::write(&p, &src[..cut]).unwrap();
        // Sample records that end at or before the cut (the last offset is the index).
        let complete = records.windows(2).filter(|w| w[1] <= cut).count();
        let got = read_all(&p, &mut rng);
        assert_eq!(got, complete, "cut at {cut} of {}", src.len());
    }
    let _ = std::fs::remove_file(&p);
}
