//! derive on the fixture's cgroups: rates from the counters, processes mapped up the tree.

use crate::model::cgroup::{FIXTURE_CONTAINER, cgroups_into};
use crate::model::derive;
use crate::model::fixtures::{incident, system};
use crate::model::frame::Frame;

fn frame(bpf: bool) -> Frame {
    let (mut a, mut b) = (incident(1, bpf), incident(2, bpf));
    cgroups_into(&mut a, 1);
    cgroups_into(&mut b, 2);
    derive(&system(), Some(&a), &b)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn rates_come_from_the_counters() {
    let f = frame(true);
    let docker = format!("/system.slice/docker-{FIXTURE_CONTAINER}.scope");
    let d = f.cgroups.iter().find(|c| c.path == docker).unwrap();
    assert_eq!(d.name, "docker 3f2a9c1b7d04");
    assert_eq!(d.depth, 2);
    assert!(close(d.cpu_pct.unwrap(), 200.0));
    assert!(close(d.cpu_limit.unwrap(), 2.0));
    assert_eq!((d.periods, d.throttled_periods), (Some(10), Some(6)));
    assert!(close(d.throttled_pct.unwrap(), 60.0));
    assert!(close(d.throttled_ms.unwrap(), 1400.0));
    let cp = d.cpu_pressure.unwrap();
    assert_eq!((cp.some_avg10, cp.full_avg10), (60.0, Some(40.0)));
    assert!(close(cp.full_pct.unwrap(), 40.0), "400 ms stalled in 1 s");
    assert!(close(d.io_write_bps.unwrap(), f64::from(8u32 << 20)));
    assert_eq!(d.pids, [4242]);
    let pg = f
        .cgroups
        .iter()
        .find(|c| c.name == "postgresql.service")
        .unwrap();
    assert_eq!(pg.high_events, Some(120));
    assert_eq!(pg.memory_high, Some(2 << 30));
    assert!(close(pg.memory_pressure.unwrap().full_pct.unwrap(), 31.5));
}

#[test]
fn processes_count_in_their_cgroup_and_every_parent() {
    let f = frame(true);
    let by = |p: &str| f.cgroups.iter().find(|c| c.path == p).unwrap();
    let root = by("/");
    assert_eq!(
        root.procs_total as usize,
        f.procs.iter().filter(|p| !p.gone).count()
    );
    assert_eq!(root.pids, [1, 77], "only those directly in the root");
    let sys = by("/system.slice");
    assert!(sys.pids.is_empty());
    assert_eq!(sys.procs_total, 3);
    assert_eq!(sys.top_pids[0], 4242, "tiflash is the busiest");
    let session = by("/user.slice/user-1000.slice/session-3.scope");
    let want: f64 = f
        .procs
        .iter()
        .filter(|p| p.pid == 31337 || p.pid == 2201)
        .map(|p| p.runq_wait_ms.unwrap())
        .sum();
    assert!(close(session.runq_wait_ms.unwrap(), want));
    assert!(by("/user.slice").runnable_avg.unwrap() > 0.0);
}

#[test]
fn procfs_only_has_the_files_but_not_the_ebpf_sums() {
    let f = frame(false);
    assert!(f.cgroups.iter().all(|c| c.runnable_avg.is_none()));
    assert!(f.cgroups.iter().all(|c| c.cpu_pct.is_some()));
}

#[test]
fn the_first_sample_has_levels_but_no_rates() {
    let mut s = incident(1, true);
    cgroups_into(&mut s, 1);
    let f = derive(&system(), None, &s);
    let d = &f.cgroups[2];
    assert_eq!(d.cpu_pct, None);
    assert_eq!(d.throttled_pct, None);
    assert!(d.memory_current.is_some() && d.cpu_pressure.unwrap().some_pct.is_none());
}

/// Recordings made before ttop read cgroups have neither `cgroups` nor a process's
/// `cgroup`: they load, with no cgroup rows; ones made now round-trip whole.
#[test]
fn old_recordings_load_and_new_ones_round_trip() {
    let mut s = incident(2, true);
    let mut old = serde_json::to_value(&s).unwrap();
    assert!(old.get("cgroups").is_some());
    old.as_object_mut().unwrap().remove("cgroups");
    assert!(
        old["procs"][0].get("cgroup").is_none(),
        "an empty cgroup is not written"
    );
    let back: crate::model::Sample = serde_json::from_value(old).unwrap();
    assert_eq!(back, s);
    assert!(
        derive(&system(), Some(&incident(1, true)), &back)
            .cgroups
            .is_empty()
    );
    cgroups_into(&mut s, 2);
    let bytes = serde_json::to_vec(&s).unwrap();
    let again: crate::model::Sample = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(again, s);
}
