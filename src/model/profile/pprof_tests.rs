//! The pprof writer on a fixture profile with files, lines and an inlined call, read
//! back with a protobuf decoder of its own (the wire format: varints and lengths), so
//! the fields profile.proto names are checked one by one; `go tool pprof` reads real
//! profiles in tests/kernel_pprof.rs.

use std::collections::HashMap;
use std::sync::Arc;

use super::located::{LocatedStack, SrcFrame};
use super::pprof::{Kind, encode, encode_stacks};
use super::sample::{FoldedProfile, StackKey};

enum V {
    Int(u64),
    Bytes(Vec<u8>),
}

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*i];
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            break;
        }
    }
    v
}

/// One message's fields in order (varints and length-delimited only: all pprof uses).
fn fields(b: &[u8]) -> Vec<(u64, V)> {
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let key = varint(b, &mut i);
        let v = match key & 7 {
            0 => V::Int(varint(b, &mut i)),
            2 => {
                let n = varint(b, &mut i) as usize;
                i += n;
                V::Bytes(b[i - n..i].to_vec())
            }
            w => panic!("wire type {w}"),
        };
        out.push((key >> 3, v));
    }
    out
}

fn int(f: &[(u64, V)], field: u64) -> u64 {
    f.iter()
        .find_map(|(k, v)| match v {
            V::Int(x) if *k == field => Some(*x),
            _ => None,
        })
        .unwrap_or(0)
}

fn msgs(f: &[(u64, V)], field: u64) -> Vec<&[u8]> {
    f.iter()
        .filter_map(|(k, v)| match v {
            V::Bytes(b) if *k == field => Some(b.as_slice()),
            _ => None,
        })
        .collect()
}

fn packed(b: &[u8]) -> Vec<u64> {
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        out.push(varint(b, &mut i));
    }
    out
}

/// A decoded profile: samples as (function names leaf first, values), each location
/// as its (function name, file, line) lines, and the functions.
struct Decoded {
    samples: Vec<(Vec<String>, Vec<u64>)>,
    locations: HashMap<u64, Vec<(String, String, u64)>>,
    functions: Vec<(String, String)>,
    period: u64,
}

fn decode(b: &[u8]) -> Decoded {
    let top = fields(b);
    let strings: Vec<String> = msgs(&top, 6)
        .iter()
        .map(|s| String::from_utf8(s.to_vec()).unwrap())
        .collect();
    let mut funcs: HashMap<u64, (String, String)> = HashMap::new();
    for f in msgs(&top, 5) {
        let f = fields(f);
        assert_eq!(int(&f, 2), int(&f, 3), "system name is the name");
        let name = strings[int(&f, 2) as usize].clone();
        funcs.insert(int(&f, 1), (name, strings[int(&f, 4) as usize].clone()));
    }
    let mut locations: HashMap<u64, Vec<(String, String, u64)>> = HashMap::new();
    for l in msgs(&top, 4) {
        let l = fields(l);
        let lines = msgs(&l, 4)
            .iter()
            .map(|line| {
                let line = fields(line);
                let (n, file) = funcs[&int(&line, 1)].clone();
                (n, file, int(&line, 2))
            })
            .collect();
        locations.insert(int(&l, 1), lines);
    }
    let samples = msgs(&top, 2)
        .iter()
        .map(|s| {
            let s = fields(s);
            let ids = packed(msgs(&s, 1)[0]);
            let names = ids.iter().map(|id| locations[id][0].0.clone()).collect();
            (names, packed(msgs(&s, 2)[0]))
        })
        .collect();
    let mut functions: Vec<(String, String)> = funcs.into_values().collect();
    functions.sort();
    Decoded {
        samples,
        locations,
        functions,
        period: int(&top, 12),
    }
}

fn src(name: &str, file: &str, line: u32) -> SrcFrame {
    SrcFrame {
        name: name.into(),
        file: file.into(),
        line,
    }
}

/// A profile counted as the profiler counts it: names, and the same frames as
/// locations. `step` is inlined into `run` (one address, two functions).
fn fixture() -> FoldedProfile {
    let mut p = FoldedProfile::default();
    let main: Arc<[SrcFrame]> = Arc::new([src("main", "/src/db.c", 40)]);
    let kernel: Arc<[SrcFrame]> = Arc::new([SrcFrame::named("do_syscall_64_[k]")]);
    for (run_line, step_line, n) in [(21, 3, 3), (22, 3, 1), (21, 4, 2)] {
        let inlined: Arc<[SrcFrame]> = Arc::new([
            src("step", "/src/db.c", step_line),
            src("run", "/src/db.c", run_line),
        ]);
        p.add(
            StackKey {
                pid: 7,
                process: "db".into(),
                thread: "worker-2".into(),
                frames: ["main", "run", "step", "do_syscall_64_[k]"]
                    .map(String::from)
                    .to_vec(),
            },
            n,
        );
        p.add_located(
            LocatedStack {
                pid: 7,
                process: "db".into(),
                thread: "worker-2".into(),
                locations: vec![main.clone(), inlined, kernel.clone()],
            },
            n,
        );
    }
    p
}

const ON_CPU: Kind = Kind {
    off_cpu: false,
    hz: 100,
    start_unix_ns: 0,
    duration_ns: 0,
};

#[test]
fn lines_do_not_change_the_folded_stacks() {
    assert_eq!(
        fixture().folded(),
        vec!["db-7;worker-*;main;run;step;do_syscall_64_[k] 6"]
    );
}

#[test]
fn functions_carry_their_file_and_locations_their_lines() {
    let d = decode(&encode_stacks(&fixture().located_stacks(), &ON_CPU));
    let file = |n: &str| {
        d.functions
            .iter()
            .filter(|(f, _)| f == n)
            .map(|(_, file)| file.as_str())
            .collect::<Vec<_>>()
    };
    // One function per (name, file): three addresses of `run`, one function.
    assert_eq!(file("run"), ["/src/db.c"]);
    assert_eq!(file("step"), ["/src/db.c"]);
    assert_eq!(file("main"), ["/src/db.c"]);
    for named_only in ["db-7", "worker-*", "do_syscall_64_[k]"] {
        assert_eq!(file(named_only), [""], "{named_only}");
    }
    assert_eq!(d.functions.len(), 6);
    // The inlined call and its caller are one location, innermost first, each at its
    // own line.
    let mut inlined: Vec<&Vec<(String, String, u64)>> =
        d.locations.values().filter(|l| l.len() == 2).collect();
    inlined.sort();
    let want = |s: u64, r: u64| {
        vec![
            ("step".to_string(), "/src/db.c".to_string(), s),
            ("run".to_string(), "/src/db.c".to_string(), r),
        ]
    };
    assert_eq!(inlined, [&want(3, 21), &want(3, 22), &want(4, 21)]);
    assert!(
        d.locations
            .values()
            .any(|l| l == &[("main".into(), "/src/db.c".into(), 40)])
    );
    assert!(
        d.locations
            .values()
            .any(|l| l == &[("do_syscall_64_[k]".into(), String::new(), 0)])
    );
    // Samples: leaf first, counts and CPU time as the folded line has them.
    let leaf_first = ["do_syscall_64_[k]", "step", "main", "worker-*", "db-7"];
    let mut counts: Vec<u64> = d
        .samples
        .iter()
        .map(|(names, v)| {
            assert_eq!(names, &leaf_first);
            assert_eq!(v[1], v[0] * d.period);
            v[0]
        })
        .collect();
    counts.sort();
    assert_eq!(counts, [1, 2, 3]);
    assert_eq!(d.period, 10_000_000);
}

#[test]
fn folded_lines_encode_as_names_only() {
    let p = fixture();
    let d = decode(&encode(&p.folded(), &ON_CPU));
    assert!(d.functions.iter().all(|(_, file)| file.is_empty()));
    assert!(d.locations.values().all(|l| l.len() == 1 && l[0].2 == 0));
    let leaf_first = [
        "do_syscall_64_[k]",
        "step",
        "run",
        "main",
        "worker-*",
        "db-7",
    ];
    assert_eq!(d.samples.len(), 1);
    assert_eq!(d.samples[0].0, leaf_first);
    assert_eq!(d.samples[0].1, [6, 6 * d.period]);
}

#[test]
fn names_are_cleaned_as_the_folded_lines_clean_them() {
    let mut p = FoldedProfile::default();
    let odd = "operator;\nx";
    p.add(
        StackKey {
            pid: 1,
            process: "a;b".into(),
            thread: "a;b".into(),
            frames: vec![odd.into()],
        },
        1,
    );
    p.add_located(
        LocatedStack {
            pid: 1,
            process: "a;b".into(),
            thread: "a;b".into(),
            locations: vec![Arc::new([src(odd, "/x.cc", 9)])],
        },
        1,
    );
    assert_eq!(p.folded(), ["a:b-1;a:b;operator::x 1"]);
    let d = decode(&encode_stacks(&p.located_stacks(), &ON_CPU));
    assert_eq!(d.samples[0].0, ["operator::x", "a:b", "a:b-1"]);
    assert!(
        d.functions
            .contains(&("operator::x".into(), "/x.cc".into()))
    );
}
