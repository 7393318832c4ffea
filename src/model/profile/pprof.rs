//! Folded stacks as a pprof profile (profile.proto, the format `go tool pprof`,
//! Pyroscope and Parca read), uncompressed (pprof accepts raw or gzip).
//!
//! The six messages it needs are written by hand with a protobuf encoder of 40 lines
//! rather than with prost: prost wants a build step (protoc or vendored generated code)
//! and a runtime crate for what is here a write-only format with varints, lengths and
//! packed arrays; the encoder is checked by `go tool pprof` itself (tests/kernel_pprof.rs).
//! Frames carry names only: the folded profile holds no file or line, so `Function`
//! has an empty filename and line 0.

use std::collections::HashMap;

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

/// `folded` lines (`root;...;leaf COUNT`) as a serialized pprof Profile. On-CPU it has
/// two sample types (samples/count, cpu/nanoseconds), off-CPU one (off_cpu/nanoseconds).
pub fn encode(folded: &[String], k: &Kind) -> Vec<u8> {
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
    // One function and one location per distinct frame name (ids from 1).
    let mut funcs: HashMap<String, u64> = HashMap::new();
    for line in folded {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let mut locs: Vec<u64> = Vec::new();
        // pprof lists a sample's locations leaf first.
        for f in stack.split(';').rev() {
            let next = funcs.len() as u64 + 1;
            locs.push(*funcs.entry(f.to_string()).or_insert(next));
        }
        let mut m = Pb::default();
        m.packed(1, &locs);
        if k.off_cpu {
            m.packed(2, &[n * period]);
        } else {
            m.packed(2, &[n, n * period]);
        }
        out.msg(2, m);
    }
    let mut by_id: Vec<(&String, &u64)> = funcs.iter().collect();
    by_id.sort_by_key(|(_, id)| **id);
    for (_, id) in &by_id {
        let mut line = Pb::default();
        line.uint(1, **id);
        let mut loc = Pb::default();
        loc.uint(1, **id);
        loc.msg(4, line);
        out.msg(4, loc);
    }
    for (name, id) in by_id {
        let mut f = Pb::default();
        f.uint(1, *id);
        let n = s.id(name);
        f.uint(2, n);
        f.uint(3, n);
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
