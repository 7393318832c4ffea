//! The cgroup rules on the fixture's cgroups, and their edges.

use crate::model::cgroup::{FIXTURE_CONTAINER, cgroups_into};
use crate::model::derive;
use crate::model::findings::cgroup::*;
use crate::model::findings::{Finding, FindingView, observe};
use crate::model::fixtures::{incident, system};
use crate::model::frame::Frame;

fn frame(bpf: bool) -> Frame {
    let (mut a, mut b) = (incident(1, bpf), incident(2, bpf));
    cgroups_into(&mut a, 1);
    cgroups_into(&mut b, 2);
    derive(&system(), Some(&a), &b)
}

fn cgroup_findings(fr: &Frame) -> Vec<Finding> {
    let mut v = Vec::new();
    super::cgroup::observe(fr, &mut v);
    v
}

fn found(fr: &Frame) -> Vec<(&'static str, String)> {
    cgroup_findings(fr)
        .into_iter()
        .map(|f| (f.kind, f.cgroup.unwrap()))
        .collect()
}

#[test]
fn the_fixture_shows_each_kind_once_on_the_right_cgroup() {
    for bpf in [true, false] {
        let fr = frame(bpf);
        let docker = format!("/system.slice/docker-{FIXTURE_CONTAINER}.scope");
        assert_eq!(
            found(&fr),
            [
                ("cpu_throttled", docker),
                ("memory_pressure", "/system.slice/postgresql.service".into()),
                (
                    "io_pressure",
                    "/user.slice/user-1000.slice/session-3.scope".into()
                ),
            ],
            "bpf {bpf}: procfs-only mode judges cgroupfs too"
        );
        let all: Vec<&str> = observe(&fr).iter().map(|f| f.kind).collect();
        assert!(
            all.contains(&"cpu_throttled"),
            "hooked into observe: {all:?}"
        );
    }
    let fs = cgroup_findings(&frame(true));
    let t = &fs[0];
    assert_eq!(t.pids, [4242], "names its busiest process");
    assert!(t.summary.contains("tiflash(4242)"), "{}", t.summary);
    assert!(t.summary.contains("raise cpu.max"), "{}", t.summary);
    assert_eq!(t.figures["throttled_pct"], 60.0);
    assert_eq!(t.view, FindingView::Cgroups);
    assert!(
        fs[1].summary.contains("postgres(1817)"),
        "{}",
        fs[1].summary
    );
    let j = serde_json::to_value(t).unwrap();
    assert_eq!(j["cgroup"], t.cgroup.as_deref().unwrap());
    assert_eq!(j["view"], "cgroups");
}

#[test]
fn throttling_needs_idle_cpu_and_enough_periods() {
    let mut fr = frame(true);
    // A machine with less idle than the bar: the machine, not the quota, is the limit.
    let n = fr.cpus.len() as f64;
    for c in &mut fr.cpus {
        c.idle = IDLE_CPUS_MIN * 100.0 / n * 0.9;
        c.iowait = 0.0;
    }
    assert!(!found(&fr).iter().any(|f| f.0 == "cpu_throttled"));
    let mut fr = frame(true);
    let d = fr
        .cgroups
        .iter_mut()
        .find(|c| c.periods.is_some() && c.throttled_pct.unwrap() > 0.0)
        .unwrap();
    d.periods = Some(THROTTLED_MIN_PERIODS - 1);
    assert!(!found(&fr).iter().any(|f| f.0 == "cpu_throttled"));
    let mut fr = frame(true);
    let d = fr
        .cgroups
        .iter_mut()
        .find(|c| c.throttled_pct.unwrap_or(0.0) > 0.0)
        .unwrap();
    d.throttled_pct = Some(THROTTLED_PCT - 0.1);
    assert!(!found(&fr).iter().any(|f| f.0 == "cpu_throttled"));
    d_at(&mut fr, THROTTLED_PCT);
    assert!(
        found(&fr).iter().any(|f| f.0 == "cpu_throttled"),
        "the bar itself fires"
    );
}

fn d_at(fr: &mut Frame, pct: f64) {
    let d = fr
        .cgroups
        .iter_mut()
        .find(|c| c.throttled_pct.is_some_and(|p| p > 0.0))
        .unwrap();
    d.throttled_pct = Some(pct);
}

#[test]
fn pressure_names_the_deepest_cgroup_over_the_bar() {
    let mut fr = frame(true);
    // The slice above postgresql.service stalls as much (pressure adds up the tree).
    let pg = fr
        .cgroups
        .iter()
        .find(|c| c.name == "postgresql.service")
        .unwrap()
        .memory_pressure;
    let slice = fr
        .cgroups
        .iter_mut()
        .find(|c| c.path == "/system.slice")
        .unwrap();
    slice.memory_pressure = pg;
    let mem: Vec<_> = found(&fr)
        .into_iter()
        .filter(|f| f.0 == "memory_pressure")
        .collect();
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0].1, "/system.slice/postgresql.service");
    // Just under the bar: nothing.
    let c = fr
        .cgroups
        .iter_mut()
        .find(|c| c.name == "postgresql.service")
        .unwrap();
    c.memory_pressure.as_mut().unwrap().full_avg10 = Some(PRESSURE_FULL_PCT - 0.01);
    let s = fr
        .cgroups
        .iter_mut()
        .find(|c| c.path == "/system.slice")
        .unwrap();
    s.memory_pressure.as_mut().unwrap().full_avg10 = Some(PRESSURE_FULL_PCT - 0.01);
    assert!(!found(&fr).iter().any(|f| f.0 == "memory_pressure"));
}
