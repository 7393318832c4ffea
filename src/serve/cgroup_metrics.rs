//! The cgroup families of `/metrics`: the `top` cgroups by CPU (so the label cardinality
//! stays bounded on a node with hundreds of containers), labelled by path and readable
//! name, plus every cgroup a finding names now.

use super::out::{Out, l};
use crate::model::Frame;
use crate::model::cgroup::CgroupFrame;

/// The cgroups exported: the busiest `top` by CPU, and those a finding names.
fn chosen(f: &Frame, top: usize) -> Vec<&CgroupFrame> {
    let mut v: Vec<&CgroupFrame> = f.cgroups.iter().collect();
    v.sort_by(|a, b| {
        b.cpu_pct
            .unwrap_or(0.0)
            .total_cmp(&a.cpu_pct.unwrap_or(0.0))
            .then(a.path.cmp(&b.path))
    });
    let named = |c: &CgroupFrame| {
        f.findings
            .iter()
            .any(|x| x.cgroup.as_deref() == Some(&c.path))
    };
    let mut out: Vec<&CgroupFrame> = v.iter().take(top).copied().collect();
    out.extend(v.iter().skip(top).filter(|c| named(c)));
    out
}

pub(super) fn render(o: &mut Out, f: &Frame, top: usize) {
    let cgs = chosen(f, top);
    let lab = |c: &CgroupFrame| l(&[("cgroup", c.path.clone()), ("name", c.name.clone())]);
    let per_s = |v: Option<f64>| v.filter(|_| f.interval_s > 0.0).map(|v| v / f.interval_s);
    let rows = |get: &dyn Fn(&CgroupFrame) -> Option<f64>| {
        cgs.iter().map(|c| (lab(c), get(c))).collect::<Vec<_>>()
    };
    o.family(
        "cgroup_cpu_percent",
        "CPU used by the cgroup and below (100 = one CPU)",
        rows(&|c| c.cpu_pct),
    );
    o.family(
        "cgroup_cpu_limit_cpus",
        "cpu.max as CPUs",
        rows(&|c| c.cpu_limit),
    );
    o.family(
        "cgroup_throttled_percent",
        "Share of cpu.max periods in which the cgroup was throttled",
        rows(&|c| c.throttled_pct),
    );
    o.family(
        "cgroup_throttled_seconds_per_second",
        "Time the quota held the cgroup's threads off the CPU",
        rows(&|c| per_s(c.throttled_ms.map(|ms| ms / 1e3))),
    );
    for (name, help, get) in [
        (
            "cgroup_cpu_pressure_some_avg10",
            "cpu.pressure some avg10, percent",
            (|c: &CgroupFrame| c.cpu_pressure.map(|p| p.some_avg10))
                as fn(&CgroupFrame) -> Option<f64>,
        ),
        (
            "cgroup_memory_pressure_full_avg10",
            "memory.pressure full avg10, percent",
            |c| c.memory_pressure.and_then(|p| p.full_avg10),
        ),
        (
            "cgroup_io_pressure_full_avg10",
            "io.pressure full avg10, percent",
            |c| c.io_pressure.and_then(|p| p.full_avg10),
        ),
    ] {
        o.family(name, help, rows(&get));
    }
    o.family(
        "cgroup_memory_bytes",
        "memory.current",
        rows(&|c| c.memory_current.map(|b| b as f64)),
    );
    o.family(
        "cgroup_runqueue_wait_seconds_per_second",
        "Run-queue wait of the cgroup's threads (eBPF)",
        rows(&|c| per_s(c.runq_wait_ms.map(|ms| ms / 1e3))),
    );
}

#[cfg(test)]
mod tests {
    use crate::model::cgroup::cgroups_into;
    use crate::model::derive;
    use crate::model::fixtures::{incident, system};

    #[test]
    fn the_busiest_cgroups_are_exported_with_their_names() {
        let (mut a, mut b) = (incident(1, true), incident(2, true));
        cgroups_into(&mut a, 1);
        cgroups_into(&mut b, 2);
        let mut f = derive(&system(), Some(&a), &b);
        // A finding names postgresql.service, fourth by CPU: it is exported too.
        let pg = "/system.slice/postgresql.service";
        f.findings.push(crate::model::findings::Finding {
            kind: "memory_pressure",
            cgroup: Some(pg.into()),
            ..Default::default()
        });
        let text = super::super::metrics::render(&f, 3);
        let cpu: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("ttop_cgroup_cpu_percent{"))
            .collect();
        assert_eq!(cpu.len(), 4, "{cpu:?}");
        assert!(text.contains(&format!("ttop_cgroup_memory_pressure_full_avg10{{cgroup=\"{pg}\",name=\"postgresql.service\"}} 31.5")));
        assert!(
            cpu.iter()
                .any(|l| l.contains("cgroup=\"/\"") && l.ends_with(" 330.0"))
        );
        assert!(text.contains("ttop_cgroup_throttled_percent{cgroup=\"/system.slice/docker-"));
        assert!(text.contains("name=\"docker 3f2a9c1b7d04\"} 60.0"));
    }
}
