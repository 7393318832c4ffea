//! The per-cgroup counters on the incident fixture (values against the files' own rates)
//! and on hand-made frames: a cgroup vanishing, a new cgroup every interval, nesting.

use std::collections::BTreeMap;

use super::*;
use crate::model::cgroup::{CgroupFrame, FIXTURE_CONTAINER, cgroups_into};
use crate::model::derive;
use crate::model::fixtures::{incident, system};
use crate::serve::groups::DEFAULT_TOP_BY;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn counts_add_up_the_cgroup_files_since_the_start() {
    let mut g = CgroupGroups::new(20, &DEFAULT_TOP_BY);
    let sample = |secs| {
        let mut s = incident(secs, true);
        cgroups_into(&mut s, secs);
        s
    };
    let mut prev = sample(1);
    for secs in 2..=6 {
        let cur = sample(secs);
        g.add_cgroups(&derive(&system(), Some(&prev), &cur));
        prev = cur;
    }
    // Every cgroup is named after the first interval (which `other` took, through the
    // root): five intervals, four on each named series.
    assert_eq!(g.named.len(), 8);
    let docker = format!("/system.slice/docker-{FIXTURE_CONTAINER}.scope");
    let d = g.named[&docker];
    // The fixture's rates per second: 2 CPUs, 10 periods of which 6 throttled for
    // 1.4 s, cpu some/full 0.6/0.4 s.
    assert!(close(d.cpu_s.unwrap(), 8.0), "{d:?}");
    assert_eq!((d.periods, d.throttled_periods), (Some(40), Some(24)));
    assert!(close(d.throttled_s.unwrap(), 5.6));
    assert!(close(d.psi[0][0].unwrap(), 2.4) && close(d.psi[0][1].unwrap(), 1.6));
    let pg = g.named["/system.slice/postgresql.service"];
    assert_eq!(pg.high_events, Some(480));
    assert_eq!(pg.oom_kills, Some(0));
    assert!(close(pg.psi[1][1].unwrap(), 4.0 * 0.315));
    // No quota: no periods, not 0.
    assert_eq!(g.named["/user.slice"].periods, None);
    assert!(close(g.other.cpu_s.unwrap(), 3.3));
    let mut o = Out::new();
    render(&mut o, &g);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &o.reg).unwrap();
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    let lab = format!("cgroup=\"{docker}\",name=\"docker 3f2a9c1b7d04\"");
    assert!(close(
        line(&format!("ttop_cgroup_throttled_seconds_total{{{lab}}}")),
        5.6
    ));
    assert!(close(
        line(&format!(
            "ttop_cgroup_pressure_stall_seconds_total{{{lab},resource=\"cpu\",kind=\"full\"}}"
        )),
        1.6
    ));
    assert_eq!(
        line("ttop_cgroup_periods_total{cgroup=\"\",name=\"\"}"),
        0.0
    );
    assert!(text.contains("# TYPE ttop_cgroup_runqueue_wait_seconds counter"));
    assert!(!text.contains("ttop_cgroup_periods_total{cgroup=\"/user.slice\""));
}

fn row(path: &str, cpu: f64, throttled_ms: Option<f64>) -> CgroupFrame {
    CgroupFrame {
        path: path.into(),
        cpu_pct: Some(cpu * 100.0),
        throttled_ms,
        ..Default::default()
    }
}

fn frame(rows: Vec<CgroupFrame>) -> Frame {
    Frame {
        interval_s: 1.0,
        cgroups: rows,
        ..Default::default()
    }
}

#[test]
fn churning_and_vanishing_cgroups_stay_bounded_and_never_fall() {
    let n = 3;
    let mut g = CgroupGroups::new(n, &DEFAULT_TOP_BY);
    let mut last: BTreeMap<(String, &str), f64> = BTreeMap::new();
    for i in 0..300u32 {
        let mut rows = vec![row("/", 4.0, None), row("/a", 1.0, None)];
        // A throttled service that stops at frame 100, and a new job every frame.
        if i < 100 {
            rows.push(row("/svc", 2.0, Some(300.0)));
        }
        rows.push(row(
            &format!("/a/job-{i}"),
            0.1 + f64::from(i % 7) / 10.0,
            None,
        ));
        g.add_cgroups(&frame(rows));
        assert!(g.named.len() <= n);
        let mut o = Out::new();
        render(&mut o, &g);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &o.reg).unwrap();
        for fam in [
            "ttop_cgroup_cpu_seconds_total",
            "ttop_cgroup_throttled_seconds_total",
        ] {
            let series: Vec<&str> = text.lines().filter(|l| l.starts_with(fam)).collect();
            assert!(series.len() <= n + 1, "{fam}: {series:?}");
            for s in series {
                let (k, v) = s.rsplit_once(' ').unwrap();
                let v: f64 = v.parse().unwrap();
                if let Some(p) = last.get(&(k.to_string(), fam)) {
                    assert!(v >= *p, "frame {i}: {k} fell from {p} to {v}");
                }
                last.insert((k.to_string(), fam), v);
            }
        }
    }
    // The service is gone but its series stays, at what it counted while named.
    let svc = g.named["/svc"];
    assert!(close(svc.throttled_s.unwrap(), 99.0 * 0.3), "{svc:?}");
    assert!(g.named.contains_key("/") && g.named.contains_key("/a"));
}

#[test]
fn other_counts_each_unnamed_subtree_once() {
    let mut g = CgroupGroups::new(1, &DEFAULT_TOP_BY);
    for _ in 0..10 {
        g.add_cgroups(&frame(vec![
            row("/", 3.0, None),
            row("/a", 2.0, None),
            row("/a/x", 1.5, None),
            row("/b", 1.0, None),
        ]));
    }
    // The root, named after the first frame (which `other` took whole), holds all;
    // then /a and /b go to other each frame, and /a/x only inside /a.
    assert_eq!(g.named.keys().collect::<Vec<_>>(), ["/"]);
    assert!(close(g.named["/"].cpu_s.unwrap(), 27.0));
    assert!(close(g.other.cpu_s.unwrap(), 3.0 + 9.0 * 3.0));
}
