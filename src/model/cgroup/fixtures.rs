//! Cgroups for the incident fixture (`fixtures::incident`): a throttled container, a
//! database squeezed under memory.high, a session waiting on I/O, and a quiet exporter
//! with room. Counters grow linearly with `secs`, so any two samples derive alike.

use super::sample::{CgroupSample, CgroupScan, CpuStat, IoStat, Pressure, Psi};
use crate::model::sample::Sample;

/// The container's id (docker's cgroup names it in full).
pub const FIXTURE_CONTAINER: &str =
    "3f2a9c1b7d04e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e";

/// One cgroup's per-second rates: CPU µs, (periods, throttled, throttled µs), pressure
/// (some, full) avg10 and µs per second for cpu, memory and io, memory bytes.
struct G {
    path: String,
    usage: u64,
    bw: Option<(u64, u64, u64)>,
    cpu_max: Option<u64>,
    psi: [(f32, f32, u64, u64); 3],
    mem: u64,
    high: Option<u64>,
    max: Option<u64>,
    high_per_s: u64,
    io: (u64, u64),
}

fn psi(avg: (f32, f32), per_s: (u64, u64), secs: u64) -> Pressure {
    Pressure {
        some: Psi {
            avg10: avg.0,
            total_us: per_s.0 * secs,
        },
        full: Some(Psi {
            avg10: avg.1,
            total_us: per_s.1 * secs,
        }),
    }
}

fn scan(g: &G, secs: u64) -> CgroupScan {
    let p = |i: usize| {
        let (s, f, su, fu) = g.psi[i];
        Some(psi((s, f), (su, fu), secs))
    };
    CgroupScan {
        path: g.path.clone(),
        cpu: Some(CpuStat {
            usage_usec: g.usage * secs,
            user_usec: g.usage * secs * 8 / 10,
            system_usec: g.usage * secs * 2 / 10,
            bandwidth: g.bw.is_some(),
            nr_periods: g.bw.map_or(0, |b| b.0 * secs),
            nr_throttled: g.bw.map_or(0, |b| b.1 * secs),
            throttled_usec: g.bw.map_or(0, |b| b.2 * secs),
        }),
        cpu_max: g.bw.map(|_| (g.cpu_max, 100_000)),
        cpu_pressure: p(0),
        memory_pressure: p(1),
        io_pressure: p(2),
        memory_current: Some(g.mem),
        memory_max: Some(g.max.unwrap_or(super::NO_LIMIT)),
        memory_high: Some(g.high.unwrap_or(super::NO_LIMIT)),
        oom_kill: Some(0),
        high_events: Some(g.high_per_s * secs),
        io: Some(IoStat {
            rbytes: g.io.0 * secs,
            wbytes: g.io.1 * secs,
            rios: g.io.0 / 4096 * secs,
            wios: g.io.1 / 4096 * secs,
        }),
    }
}

/// Put the incident's processes into cgroups and read those cgroups at `secs`.
pub fn cgroups_into(s: &mut Sample, secs: u64) {
    let docker = format!("/system.slice/docker-{FIXTURE_CONTAINER}.scope");
    let session = "/user.slice/user-1000.slice/session-3.scope";
    let gb = 1u64 << 30;
    let quiet = [(0.0, 0.0, 0, 0); 3];
    let g = |path: &str, usage: u64, mem: u64| G {
        path: path.to_string(),
        usage,
        bw: None,
        cpu_max: None,
        psi: quiet,
        mem,
        high: None,
        max: None,
        high_per_s: 0,
        io: (0, 0),
    };
    let groups = [
        G {
            psi: [
                (35.0, 2.0, 400_000, 20_000),
                (25.0, 3.0, 260_000, 30_000),
                (4.0, 1.0, 40_000, 10_000),
            ],
            ..g("/", 3_300_000, 12 * gb)
        },
        g("/system.slice", 3_250_000, 10 * gb),
        G {
            bw: Some((10, 6, 1_400_000)),
            cpu_max: Some(200_000),
            psi: [(60.0, 40.0, 600_000, 400_000), quiet[1], quiet[2]],
            io: (1 << 20, 8 << 20),
            ..g(&docker, 2_000_000, 6 * gb)
        },
        G {
            psi: [
                (5.0, 0.0, 50_000, 0),
                (48.0, 31.5, 480_000, 315_000),
                (3.0, 0.0, 30_000, 0),
            ],
            high: Some(2 * gb),
            max: Some(4 * gb),
            high_per_s: 120,
            io: (64 << 20, 2 << 20),
            ..g(
                "/system.slice/postgresql.service",
                1_200_000,
                2 * gb + (gb >> 4),
            )
        },
        G {
            bw: Some((10, 0, 0)),
            cpu_max: Some(50_000),
            ..g("/system.slice/node_exporter.service", 50_000, 40 << 20)
        },
        g("/user.slice", 60_000, gb),
        g("/user.slice/user-1000.slice", 60_000, gb),
        G {
            psi: [
                (2.0, 0.0, 20_000, 0),
                quiet[1],
                (30.0, 22.0, 300_000, 220_000),
            ],
            io: (0, 120 << 20),
            ..g(session, 60_000, gb)
        },
    ];
    for p in &mut s.procs {
        p.cgroup = match p.pid {
            4242 => docker.as_str(),
            1817 => "/system.slice/postgresql.service",
            912 => "/system.slice/node_exporter.service",
            31337 | 2201 => session,
            _ => "/",
        }
        .into();
    }
    s.cgroups = Some(CgroupSample {
        mount: "/sys/fs/cgroup".into(),
        cgroups: groups.iter().map(|g| scan(g, secs)).collect(),
        skipped: 0,
    });
}
