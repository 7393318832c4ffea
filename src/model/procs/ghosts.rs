//! Ghost threads grouped by name: "3050 short-lived threads named tiflash-w* were born
//! and died between two scans". Names that differ only by digits form one group.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::rates::delta;
use crate::model::sample::{GhostName, Sample};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GhostGroup {
    pub pid: u32,
    /// The shared name, digits replaced by `*` ("worker-*").
    pub name: String,
    /// Ghost threads of that name during the interval.
    pub count: u64,
    /// CPU time they used, ms.
    pub cpu_ms: f64,
}

/// "worker-12" -> "worker-*", "pool3-7" -> "pool*-*": runs of digits become one `*`.
pub fn pattern(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

fn names(s: Option<&Sample>) -> BTreeMap<(u32, &str), &GhostName> {
    s.and_then(|s| s.bpf.as_ref())
        .map(|b| {
            b.ghost_names
                .iter()
                .map(|g| ((g.tgid, g.comm.as_str()), g))
                .collect()
        })
        .unwrap_or_default()
}

/// Per-interval ghost groups, biggest first.
pub fn ghost_groups(prev: Option<&Sample>, cur: &Sample) -> Vec<GhostGroup> {
    let Some(prev) = prev else { return Vec::new() };
    let before = names(Some(prev));
    let mut groups: BTreeMap<(u32, String), GhostGroup> = BTreeMap::new();
    for ((tgid, comm), g) in names(Some(cur)) {
        let p = before.get(&(tgid, comm));
        let count = delta(p.map_or(0, |p| p.count), g.count);
        if count == 0 {
            continue;
        }
        let ns = delta(p.map_or(0, |p| p.oncpu_ns), g.oncpu_ns);
        let name = pattern(comm);
        let e = groups
            .entry((tgid, name.clone()))
            .or_insert_with(|| GhostGroup {
                pid: tgid,
                name,
                ..Default::default()
            });
        e.count += count;
        e.cpu_ms += ns as f64 / 1e6;
    }
    let mut v: Vec<GhostGroup> = groups.into_values().collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::BpfSample;

    fn sample(names: &[(u32, &str, u64, u64)]) -> Sample {
        Sample {
            bpf: Some(BpfSample {
                ghost_names: names
                    .iter()
                    .map(|&(tgid, comm, count, oncpu_ns)| GhostName {
                        tgid,
                        comm: comm.into(),
                        count,
                        oncpu_ns,
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn patterns() {
        assert_eq!(pattern("worker-12"), "worker-*");
        assert_eq!(pattern("pool3-77"), "pool*-*");
        assert_eq!(pattern("postgres"), "postgres");
    }

    #[test]
    fn groups_by_pattern_and_interval() {
        let prev = sample(&[(7, "worker-1", 10, 1_000_000)]);
        let cur = sample(&[
            (7, "worker-1", 15, 3_000_000),
            (7, "worker-2", 4, 1_000_000),
            (8, "sh", 1, 0),
        ]);
        let g = ghost_groups(Some(&prev), &cur);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].pid, g[0].name.as_str(), g[0].count),
            (7, "worker-*", 9)
        );
        assert!((g[0].cpu_ms - 3.0).abs() < 1e-9);
        assert_eq!((g[1].pid, g[1].count), (8, 1));
        assert!(ghost_groups(None, &cur).is_empty());
    }
}
