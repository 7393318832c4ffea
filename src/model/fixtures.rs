//! Deterministic Samples for screen snapshots, unit tests and benchmarks: a database
//! host in the middle of seed 000's thread-churn incident, and synthetic machines of
//! any size. Nothing here touches the kernel.

use super::sample::*;

pub fn system() -> SystemInfo {
    SystemInfo {
        host: "db-prod-7".into(),
        kernel: "6.18.0-ttop".into(),
        ncpus: 4,
        clk_tck: 100,
        page_size: 4096,
        boot_time_s: 0,
    }
}

const SEC: u64 = 1_000_000_000;
const T0_WALL: u64 = 1_795_000_000 * SEC; // 2026-11-18 (fixed, so snapshots are stable)

struct P {
    pid: u32,
    comm: &'static str,
    cmd: &'static str,
    state: char,
    threads: u32,
    running: u32,
    /// CPU ticks per second (100 = one CPU) the scan attributes.
    ticks: u64,
    /// On-CPU ns per second measured by eBPF (live threads + exited ones).
    oncpu: u64,
    created: u64,
    ghosts: u64,
    ghost_ns: u64,
    wait_ns: u64,
    rss: u64,
}

const PROCS: &[P] = &[
    P {
        pid: 4242,
        comm: "tiflash",
        cmd: "/usr/bin/tiflash server --config-file /etc/tiflash.toml",
        state: 'S',
        threads: 48,
        running: 2,
        ticks: 140,
        oncpu: 3_100_000_000,
        created: 3120,
        ghosts: 3050,
        ghost_ns: 1_650_000_000,
        wait_ns: 9_800_000_000,
        rss: 2_000_000,
    },
    P {
        pid: 1817,
        comm: "postgres",
        cmd: "postgres: checkpointer",
        state: 'S',
        threads: 1,
        running: 0,
        ticks: 12,
        oncpu: 118_000_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 4_000_000,
        rss: 65_000,
    },
    P {
        pid: 912,
        comm: "node_exporter",
        cmd: "/usr/local/bin/node_exporter --collector.systemd",
        state: 'S',
        threads: 9,
        running: 0,
        ticks: 3,
        oncpu: 31_000_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 2_100_000,
        rss: 24_000,
    },
    P {
        pid: 77,
        comm: "kworker/1:2",
        cmd: "",
        state: 'I',
        threads: 1,
        running: 0,
        ticks: 0,
        oncpu: 2_000_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 100_000,
        rss: 0,
    },
    P {
        pid: 1,
        comm: "systemd",
        cmd: "/sbin/init",
        state: 'S',
        threads: 1,
        running: 0,
        ticks: 0,
        oncpu: 400_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 20_000,
        rss: 3_000,
    },
    P {
        pid: 31337,
        comm: "\u{1b}[2Jevil\u{7}",
        cmd: "./evil \u{1b}]0;pwned\u{7}",
        state: 'R',
        threads: 1,
        running: 1,
        ticks: 5,
        oncpu: 52_000_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 900_000,
        rss: 1_000,
    },
    P {
        pid: 2201,
        comm: "ttop",
        cmd: "ttop",
        state: 'R',
        threads: 2,
        running: 1,
        ticks: 1,
        oncpu: 9_000_000,
        created: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 300_000,
        rss: 9_000,
    },
];

fn proc_scan(p: &P, secs: u64) -> ProcScan {
    let tasks = (0..p.threads)
        .map(|i| TaskScan {
            tid: if i == 0 { p.pid } else { p.pid + 1000 + i },
            comm: if i == 0 {
                p.comm.into()
            } else {
                format!("{}-w{}", p.comm, i).into()
            },
            state: if i < p.running { 'R' } else { 'S' },
            utime: if i == 0 { p.ticks * secs * 7 / 10 } else { 0 },
            stime: if i == 0 { p.ticks * secs * 3 / 10 } else { 0 },
        })
        .collect();
    ProcScan {
        pid: p.pid,
        ppid: 1,
        comm: p.comm.into(),
        cmdline: p.cmd.into(),
        state: p.state,
        num_threads: p.threads,
        utime: 1000 + p.ticks * secs * 7 / 10,
        stime: 500 + p.ticks * secs * 3 / 10,
        rss_pages: p.rss / 4,
        starttime: 12345,
        tasks,
    }
}

/// A machine at `secs` seconds into the incident. Counters grow linearly, so any two
/// consecutive samples derive to the same rates.
pub fn incident(secs: u64, bpf: bool) -> Sample {
    let cpus = (0..4u32)
        .map(|cpu| {
            let busy = [97, 95, 88, 35][cpu as usize];
            CpuTimes {
                cpu,
                user: secs * busy * 6 / 10,
                system: secs * busy * 3 / 10,
                irq: 0,
                softirq: secs * busy / 10,
                idle: secs * (100 - busy),
                ..Default::default()
            }
        })
        .collect();
    let procs: Vec<ProcScan> = PROCS.iter().map(|p| proc_scan(p, secs)).collect();
    let bpf = bpf.then(|| {
        let mut threads = Vec::new();
        let mut bprocs = Vec::new();
        for p in PROCS {
            threads.push(BpfThread {
                tid: p.pid,
                tgid: p.pid,
                oncpu_ns: (p.oncpu - p.ghost_ns) * secs,
                runq_wait_ns: p.wait_ns * secs,
                switches: 100 * secs,
            });
            bprocs.push(BpfProc {
                tgid: p.pid,
                created: p.created * secs,
                exited: p.created * secs,
                ghosts: p.ghosts * secs,
                dead_oncpu_ns: p.ghost_ns * secs,
                ghost_oncpu_ns: p.ghost_ns * secs,
                ..Default::default()
            });
        }
        // A short-lived process born and dead inside the interval: the scan never saw it.
        bprocs.push(BpfProc {
            tgid: 5150,
            created: secs,
            exited: secs,
            ghosts: secs,
            dead_oncpu_ns: 40_000_000 * secs,
            ghost_oncpu_ns: 40_000_000 * secs,
            comm: "sh".into(),
            ..Default::default()
        });
        BpfSample {
            cpus: (0..4u32)
                .map(|cpu| {
                    let rq = [11.2, 10.4, 9.1, 6.7][cpu as usize];
                    BpfCpu {
                        cpu,
                        switches: 41_000 * secs,
                        migrations: 2_300 * secs,
                        wakeups: 30_000 * secs,
                        runq_area_ns: (rq * 1e9) as u128 * u128::from(secs),
                        runq_max: [19, 17, 16, 12][cpu as usize],
                        runq_now: 9,
                    }
                })
                .collect(),
            threads,
            procs: bprocs,
            drops: Drops::default(),
            runq_peak: 52,
            ghost_names: vec![
                GhostName {
                    tgid: 4242,
                    comm: "DeltaMerge-3".into(),
                    count: 2900 * secs,
                    oncpu_ns: 1_500_000_000 * secs,
                },
                GhostName {
                    tgid: 4242,
                    comm: "DeltaMerge-12".into(),
                    count: 100 * secs,
                    oncpu_ns: 100_000_000 * secs,
                },
                GhostName {
                    tgid: 4242,
                    comm: "tiflash".into(),
                    count: 50 * secs,
                    oncpu_ns: 50_000_000 * secs,
                },
                GhostName {
                    tgid: 5150,
                    comm: "sh".into(),
                    count: secs,
                    oncpu_ns: 40_000_000 * secs,
                },
            ],
            ..Default::default()
        }
    });
    let mode = if bpf.is_some() {
        Mode {
            bpf: true,
            problems: vec![],
            features: vec![],
        }
    } else {
        Mode {
            bpf: false,
            problems: vec!["eBPF off: not root and no CAP_BPF+CAP_PERFMON; run with sudo for the kernel's view".into()],
            features: vec![],
        }
    };
    Sample {
        seq: secs,
        wall_ns: T0_WALL + secs * SEC,
        mono_ns: 1000 * SEC + secs * SEC,
        mode,
        stat: ProcStat {
            cpus,
            ctxt: 164_000 * secs,
            forks: 3_200 * secs,
            procs_running: 31,
            procs_blocked: 0,
            loadavg: [37.9, 35.2, 30.4],
            uptime_s: 86400.0 * 3.0 + 3600.0 * 4.0 + secs as f64,
        },
        procs,
        bpf,
        // top's scan of this machine: paced behind 9 runnable threads a CPU, it found
        // the DeltaMerge threads it had listed gone and stopped reading tiflash there.
        top_scan: Some(TopScan {
            scan_ns: 310_000_000,
            paced_ns: 290_000_000,
            top_ns: 305_000_000,
            thread_cost_ns: 14_500,
            others_per_cpu: 9.4,
            capped: false,
            vanished: 4,
            skipped: 26,
            skipped_running: 22,
            unlisted: 5,
            unlisted_running: 3,
        }),
        ..Default::default()
    }
}

/// A synthetic machine with `nprocs` processes of `threads_per` threads each, for
/// benchmarks at 100, 1,000 and 10,000 threads.
pub fn synthetic(nprocs: u32, threads_per: u32, secs: u64) -> Sample {
    let mut s = incident(secs, true);
    s.procs.clear();
    let b = s.bpf.as_mut().unwrap();
    b.threads.clear();
    b.procs.clear();
    for i in 0..nprocs {
        let pid = 10_000 + i * (threads_per + 1);
        let tasks: Vec<TaskScan> = (0..threads_per)
            .map(|t| TaskScan {
                tid: pid + t,
                comm: format!("worker-{t}").into(),
                state: if t % 17 == 0 { 'R' } else { 'S' },
                utime: secs * u64::from(t % 7),
                stime: secs * u64::from(t % 3),
            })
            .collect();
        for t in &tasks {
            b.threads.push(BpfThread {
                tid: t.tid,
                tgid: pid,
                oncpu_ns: secs * 1_000_000 * u64::from(t.tid % 11),
                runq_wait_ns: secs * 10_000 * u64::from(t.tid % 13),
                switches: secs * 10,
            });
        }
        b.procs.push(BpfProc {
            tgid: pid,
            created: secs * u64::from(i % 5),
            exited: secs * u64::from(i % 5),
            ..Default::default()
        });
        s.procs.push(ProcScan {
            pid,
            ppid: 1,
            comm: format!("svc-{i}").into(),
            cmdline: format!("/usr/bin/svc-{i} --threads {threads_per}").into(),
            state: 'S',
            num_threads: threads_per,
            utime: secs * 10,
            stime: secs * 5,
            rss_pages: 1000 + u64::from(i),
            starttime: 100,
            tasks,
        });
    }
    s
}
