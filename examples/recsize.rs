//! Where the bytes of a recording go: keyframe and delta record sizes, and what each
//! section of a Sample costs when compressed against the same section of the previous
//! Sample (the way delta records are made). A development tool for the size target.
//!
//! `cargo run --release --example recsize -- FILE.ttop`

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use ttop::model::Sample;
use ttop::record::codec;
use ttop::record::reader::Reader;

fn json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("serialises")
}

/// One Sample cut into the sections that matter for size.
fn sections(s: &Sample) -> Vec<(&'static str, Vec<u8>)> {
    let b = s.bpf.as_ref();
    vec![
        ("stat", json(&s.stat)),
        ("procs (scan)", json(&s.procs)),
        ("bpf.cpus", json(&b.map(|b| &b.cpus))),
        ("bpf.threads", json(&b.map(|b| &b.threads))),
        (
            "bpf.procs+ghosts",
            json(&b.map(|b| (&b.procs, &b.ghost_names))),
        ),
        ("latency.cpus", json(&b.map(|b| &b.latency.cpus))),
        ("latency.threads", json(&b.map(|b| &b.latency.threads))),
        ("contention", json(&s.contention)),
        ("irq+interrupts", json(&(&s.irq, &s.interrupts))),
    ]
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: recsize FILE.ttop");
        std::process::exit(2);
    };
    let mut r = match Reader::open(Path::new(&path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let n = r.len();
    let file_len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let entries = r.entries().to_vec();
    let (mut keys, mut deltas) = ((0u64, 0u64), (0u64, 0u64));
    for (i, e) in entries.iter().enumerate() {
        let end = entries.get(i + 1).map_or(file_len, |x| x.offset);
        let slot = if e.key { &mut keys } else { &mut deltas };
        slot.0 += 1;
        slot.1 += end - e.offset;
    }
    println!(
        "{path}: {n} frames, {file_len} bytes, {:.0} B/frame",
        file_len as f64 / n.max(1) as f64
    );
    println!(
        "keyframes: {} x {:.0} B; delta records: {} x {:.0} B",
        keys.0,
        keys.1 as f64 / keys.0.max(1) as f64,
        deltas.0,
        deltas.1 as f64 / deltas.0.max(1) as f64
    );
    let mut tot: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut prev: Option<Vec<(&str, Vec<u8>)>> = None;
    for i in 0..n {
        let s = match r.sample(i) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipped: {e}");
                prev = None;
                continue;
            }
        };
        let cur = sections(&s);
        if let Some(p) = &prev {
            for ((name, c), (_, pb)) in cur.iter().zip(p) {
                let e = tot.entry(name).or_default();
                e.0 += c.len();
                e.1 += codec::compress(c, Some(pb)).len();
            }
        }
        prev = Some(cur);
    }
    let m = n.saturating_sub(1).max(1) as f64;
    println!(
        "{:18} {:>12} {:>18}",
        "section", "raw B/frame", "delta B/frame"
    );
    for (k, (raw, c)) in &tot {
        println!("{k:18} {:>12.0} {:>18.0}", *raw as f64 / m, *c as f64 / m);
    }
}
