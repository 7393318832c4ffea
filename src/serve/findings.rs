//! Findings as metrics, so an alert names a cause rather than a raw figure:
//! `ttop_finding_active{kind, severity, comm}` is 1 while a finding holds and 0 while it
//! is listed as past (a kind with nothing listed has one series with empty severity and
//! comm, at 0), and `ttop_findings_total{kind}` counts findings that became active.
//! Labels are bounded: nine kinds, three severities, and the command name (not the pid)
//! of the process a finding is about.

use std::collections::{BTreeMap, HashSet};

use super::out::{Out, l};
use crate::model::Frame;
use crate::model::findings::{KINDS, Severity};

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

/// Findings that became active, by kind, since the start.
#[derive(Debug, Clone, Default)]
pub struct FindingTotals {
    pub started: BTreeMap<&'static str, u64>,
    active: HashSet<(&'static str, u64)>,
}

impl FindingTotals {
    /// Count the findings of `f` (already judged by a `findings::Window`) that were not
    /// active in the frame before.
    pub fn add(&mut self, f: &Frame) {
        let now: HashSet<(&'static str, u64)> = f
            .findings
            .iter()
            .filter(|x| x.active)
            .map(|x| (x.kind, x.key))
            .collect();
        for k in now.difference(&self.active) {
            *self.started.entry(k.0).or_default() += 1;
        }
        self.active = now;
    }
}

pub fn render(o: &mut Out, f: &Frame, t: &FindingTotals) {
    let comm = |pid: Option<&u32>| {
        pid.and_then(|p| f.procs.iter().find(|r| r.pid == *p))
            .map_or(String::new(), |r| r.comm.to_string())
    };
    let mut rows: BTreeMap<(String, String, String), f64> = BTreeMap::new();
    for x in &f.findings {
        let e = rows
            .entry((
                x.kind.to_string(),
                severity(x.severity).to_string(),
                comm(x.pids.first()),
            ))
            .or_default();
        *e = e.max(f64::from(u8::from(x.active)));
    }
    for k in KINDS {
        if !f.findings.iter().any(|x| x.kind == *k) {
            rows.insert((k.to_string(), String::new(), String::new()), 0.0);
        }
    }
    o.family(
        "finding_active",
        "1 while a finding holds, 0 while it is listed as past (see docs/findings.md)",
        rows.into_iter().map(|((kind, sev, comm), v)| {
            (
                l(&[("kind", kind), ("severity", sev), ("comm", comm)]),
                Some(v),
            )
        }),
    );
    o.counters(
        "findings",
        "Findings that became active, by kind",
        None,
        KINDS.iter().map(|k| {
            (
                l(&[("kind", k.to_string())]),
                Some(t.started.get(k).copied().unwrap_or(0) as f64),
            )
        }),
    );
}
