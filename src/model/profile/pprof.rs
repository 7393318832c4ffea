//! Folded stacks as a pprof profile (profile.proto, the format `go tool pprof`,
//! Pyroscope and Parca read), uncompressed (pprof accepts raw or gzip).
//!
//! The six messages it needs are written by hand with a protobuf encoder of 40 lines
//! rather than with prost: prost wants a build step (protoc or vendored generated code)
//! and a runtime crate for what is here a write-only format with varints, lengths and
//! packed arrays; the encoder is checked by `go tool pprof` itself (tests/kernel_pprof.rs).
//!
//! From stacks with source lines (`encode_stacks`, what `ttop profile --pprof` writes):
//! one Function per (name, file), with the file as its `filename`, and one Location per
//! distinct address's frames, its Lines innermost inlined call first, each with the line
//! within its function. From folded lines (`encode`, what `E` in the profile view writes:
//! a Sample's profile holds names only) every frame is a name with no file and line 0.

use std::collections::HashMap;

use super::located::{self, Location, PprofStack, SrcFrame};

/// protobuf wire writer.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v);
        }
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn msg(&mut self, field: u32, m: Pb) {
        self.bytes(field, &m.0);
    }
    fn packed(&mut self, field: u32, vs: &[u64]) {
        let mut p = Pb::default();
        vs.iter().for_each(|v| p.varint(*v));
        self.bytes(field, &p.0);
    }
}

/// Strings by index; index 0 is "".
struct Strings {
    idx: HashMap<String, u64>,
    list: Vec<String>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            idx: HashMap::from([(String::new(), 0)]),
            list: vec![String::new()],
        }
    }
    fn id(&mut self, s: &str) -> u64 {
        if let Some(i) = self.idx.get(s) {
            return *i;
        }
        let i = self.list.len() as u64;
        self.idx.insert(s.to_string(), i);
        self.list.push(s.to_string());
        i
    }
}

/// What the values mean.
pub struct Kind {
    /// On-CPU: each count is one sample of `period_ns` CPU time. Off-CPU: each count is
    /// one microsecond off the CPU.
    pub off_cpu: bool,
    pub hz: u64,
    pub start_unix_ns: u64,
    pub duration_ns: u64,
}

fn value_type(s: &mut Strings, ty: &str, unit: &str) -> Pb {
    let mut m = Pb::default();
    m.uint(1, s.id(ty));
    m.uint(2, s.id(unit));
    m
}

/// `folded` lines (`root;...;leaf COUNT`) as a serialized pprof Profile, every frame a
/// name only (`encode_stacks`).
pub fn encode(folded: &[String], k: &Kind) -> Vec<u8> {
    let stacks: Vec<PprofStack> = folded
        .iter()
        .filter_map(|line| {
            let (stack, n) = line.rsplit_once(' ')?;
            let n = n.parse::<u64>().ok()?;
            Some((stack.split(';').map(located::named).collect(), n))
        })
        .collect();
    encode_stacks(&stacks, k)
}

/// Stacks (locations outermost first, and a count each) as a serialized pprof Profile.
/// On-CPU it has two sample types (samples/count, cpu/nanoseconds), off-CPU one
/// (off_cpu/nanoseconds).
pub fn encode_stacks(stacks: &[PprofStack], k: &Kind) -> Vec<u8> {
    let mut s = Strings::new();
    let mut out = Pb::default();
    let period = if k.off_cpu {
        1_000
    } else {
        1_000_000_000 / k.hz.max(1)
    };
    if k.off_cpu {
        out.msg(1, value_type(&mut s, "off_cpu", "nanoseconds"));
    } else {
        out.msg(1, value_type(&mut s, "samples", "count"));
        out.msg(1, value_type(&mut s, "cpu", "nanoseconds"));
    }
    // Ids from 1, in order of first use.
    let mut funcs: HashMap<(&str, &str), u64> = HashMap::new();
    let mut locs: HashMap<&Location, u64> = HashMap::new();
    let mut func_list: Vec<(&str, &str)> = Vec::new();
    let mut loc_list: Vec<&Location> = Vec::new();
    for (stack, n) in stacks {
        let n = *n;
        let mut ids: Vec<u64> = Vec::with_capacity(stack.len());
        // pprof lists a sample's locations leaf first.
        for l in stack.iter().rev() {
            let next = locs.len() as u64 + 1;
            ids.push(*locs.entry(l).or_insert_with(|| {
                loc_list.push(l);
                next
            }));
            for f in l.iter() {
                let next = funcs.len() as u64 + 1;
                funcs
                    .entry((f.name.as_str(), f.file.as_str()))
                    .or_insert_with(|| {
                        func_list.push((f.name.as_str(), f.file.as_str()));
                        next
                    });
            }
        }
        let mut m = Pb::default();
        m.packed(1, &ids);
        if k.off_cpu {
            m.packed(2, &[n * period]);
        } else {
            m.packed(2, &[n, n * period]);
        }
        out.msg(2, m);
    }
    for (i, l) in loc_list.iter().enumerate() {
        let mut loc = Pb::default();
        loc.uint(1, i as u64 + 1);
        // Innermost inlined call first, as profile.proto orders a Location's lines.
        for f in l.iter() {
            loc.msg(4, line(&funcs, f));
        }
        out.msg(4, loc);
    }
    for (i, (name, file)) in func_list.iter().enumerate() {
        let mut f = Pb::default();
        f.uint(1, i as u64 + 1);
        let n = s.id(name);
        f.uint(2, n);
        f.uint(3, n);
        f.uint(4, s.id(file));
        out.msg(5, f);
    }
    let (ty, unit) = if k.off_cpu {
        ("off_cpu", "nanoseconds")
    } else {
        ("cpu", "nanoseconds")
    };
    let pt = value_type(&mut s, ty, unit);
    for st in &s.list {
        out.bytes(6, st.as_bytes());
    }
    out.uint(9, k.start_unix_ns);
    out.uint(10, k.duration_ns);
    out.msg(11, pt);
    out.uint(12, period);
    out.0
}

/// A Line: the function's id and the line within it (omitted when unknown).
fn line(funcs: &HashMap<(&str, &str), u64>, f: &SrcFrame) -> Pb {
    let mut m = Pb::default();
    m.uint(1, funcs[&(f.name.as_str(), f.file.as_str())]);
    m.uint(2, u64::from(f.line));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_an_empty_profile() {
        let mut p = Pb::default();
        p.varint(300);
        assert_eq!(p.0, [0xac, 0x02]);
        let b = encode(
            &[],
            &Kind {
                off_cpu: false,
                hz: 99,
                start_unix_ns: 0,
                duration_ns: 0,
            },
        );
        // Two sample types, the string table ("", samples, count, cpu, nanoseconds),
        // period type and period.
        assert!(b.windows(7).any(|w| w == b"samples"));
        assert!(!b.is_empty());
    }
}
