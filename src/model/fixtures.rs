//! Deterministic Samples for screen snapshots, unit tests and benchmarks: a database
//! host in the middle of seed 000's thread-churn incident, and synthetic machines of
//! any size. Nothing here touches the kernel.

use super::sample::*;

pub use super::fixtures_latency::latency_into;

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
    /// Threads exited per second (apart from `created`, so a swapped column shows).
    exited: u64,
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
        exited: 3090,
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
        exited: 0,
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
        created: 3,
        exited: 2,
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
        exited: 0,
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
        exited: 0,
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
        exited: 0,
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
        exited: 0,
        ghosts: 0,
        ghost_ns: 0,
        wait_ns: 300_000,
        rss: 9_000,
    },
];

/// The tid of thread `i` of `p` (0: the main thread).
fn tid_of(p: &P, i: u32) -> u32 {
    if i == 0 { p.pid } else { p.pid + 1000 + i }
}

/// Scan ticks per second of worker `i` (each worker's differ; the main thread has the
/// rest of the process's, so the process total is `p.ticks`).
fn worker_ticks(p: &P, i: u32) -> u64 {
    if p.ticks >= 2 * u64::from(p.threads) {
        // The first worker has none (model tests copy it as a thread with no ticks).
        u64::from((i + 2) % 3)
    } else {
        0
    }
}

/// Worker `i`'s share of a per-second figure of its process: `i` times a step of at
/// most `cap`, at most 90% of the total over all workers (the main thread has the
/// rest, so no thread waits more than a second a second), so every thread's differs.
fn worker_share(total: u64, cap: u64, p: &P, i: u32) -> u64 {
    let n = u64::from(p.threads);
    let steps = (n * n.saturating_sub(1) / 2).max(1);
    u64::from(i) * cap.min(total / 10 * 9 / steps)
}

/// The user part (70%) of `ticks`; the rest is system time, so that the two add up to
/// `ticks` exactly in every sample (and the threads' deltas to the process's).
fn user_ticks(ticks: u64) -> u64 {
    ticks * 7 / 10
}

/// A machine's tree: systemd the root, the kernel worker kthreadd's, the hostile-named
/// process started from ttop's shell-less parent (ttop), the rest systemd's.
fn ppid_of(pid: u32) -> u32 {
    match pid {
        1 => 0,
        77 => 2,
        31337 => 2201,
        _ => 1,
    }
}

fn proc_scan(p: &P, secs: u64) -> ProcScan {
    let workers: u64 = (1..p.threads).map(|i| worker_ticks(p, i)).sum();
    let main = p.ticks - workers;
    let tasks = (0..p.threads)
        .map(|i| {
            let ticks = if i == 0 { main } else { worker_ticks(p, i) };
            TaskScan {
                tid: tid_of(p, i),
                comm: if i == 0 {
                    p.comm.into()
                } else {
                    format!("{}-w{}", p.comm, i).into()
                },
                state: if i < p.running { 'R' } else { 'S' },
                utime: user_ticks(ticks * secs),
                stime: ticks * secs - user_ticks(ticks * secs),
            }
        })
        .collect();
    ProcScan {
        pid: p.pid,
        ppid: ppid_of(p.pid),
        comm: p.comm.into(),
        cmdline: p.cmd.into(),
        state: p.state,
        num_threads: p.threads,
        utime: 1000 + user_ticks(p.ticks * secs),
        stime: 500 + p.ticks * secs - user_ticks(p.ticks * secs),
        rss_pages: p.rss / 4,
        starttime: 12345,
        tasks,
        cgroup: Default::default(),
        ..super::fixtures_everyday::everyday(p.pid, secs)
    }
}

/// A machine at `secs` seconds into the incident. Counters grow linearly, so any two
/// consecutive samples derive to the same rates.
pub fn incident(secs: u64, bpf: bool) -> Sample {
    let cpus = (0..4u32)
        .map(|cpu| {
            let c = cpu as usize;
            let busy = [97, 95, 88, 35][c];
            // iowait and steal differ per CPU (and from each other), so a swapped column
            // shows in a snapshot.
            let (iowait, steal) = ([1, 0, 3, 6][c], [0, 2, 1, 4][c]);
            CpuTimes {
                cpu,
                user: secs * busy * 6 / 10,
                system: secs * busy * 3 / 10,
                irq: 0,
                softirq: secs * busy / 10,
                iowait: secs * iowait,
                steal: secs * steal,
                idle: secs * (100 - busy - iowait - steal),
                ..Default::default()
            }
        })
        .collect();
    let procs: Vec<ProcScan> = PROCS.iter().map(|p| proc_scan(p, secs)).collect();
    let bpf = bpf.then(|| {
        let mut threads = Vec::new();
        let mut bprocs = Vec::new();
        for p in PROCS {
            // Every thread's figures differ; the process totals are `p`'s.
            let live = p.oncpu - p.ghost_ns;
            let on = |i| worker_share(live, 1_000_000, p, i);
            let wait = |i| worker_share(p.wait_ns, u64::MAX, p, i);
            let (on_w, wait_w): (u64, u64) = (1..p.threads)
                .map(|i| (on(i), wait(i)))
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            for i in 0..p.threads {
                let (oncpu, waited) = if i == 0 {
                    (live - on_w, p.wait_ns - wait_w)
                } else {
                    (on(i), wait(i))
                };
                threads.push(BpfThread {
                    tid: tid_of(p, i),
                    tgid: p.pid,
                    oncpu_ns: oncpu * secs,
                    runq_wait_ns: waited * secs,
                    switches: (100 + 7 * u64::from(i)) * secs,
                    off_ns: super::fixtures_everyday::off_split(tid_of(p, i), oncpu + waited, secs),
                    oncpu_wall_ns: oncpu * secs,
                });
            }
            bprocs.push(BpfProc {
                tgid: p.pid,
                created: p.created * secs,
                exited: p.exited * secs,
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
                    let c = cpu as usize;
                    let rq = [11.2, 10.4, 9.1, 6.7][c];
                    BpfCpu {
                        cpu,
                        switches: [41_000, 38_600, 33_100, 12_700][c] * secs,
                        migrations: [2_300, 1_950, 1_420, 610][c] * secs,
                        wakeups: [30_000, 28_100, 24_500, 9_300][c] * secs,
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
            blocked: super::fixtures_everyday::blocked(),
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
            // A kernel with lock:contention_begin (the rest: measured, as in recordings
            // made before features were kept).
            features: vec![crate::model::features::Feature::measured(
                "time_split_locks",
                "raw_tp/contention_begin, raw_tp/contention_end",
            )],
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
                off_ns: super::fixtures_everyday::off_split(
                    t.tid,
                    1_000_000 * u64::from(t.tid % 11) + 10_000 * u64::from(t.tid % 13),
                    secs,
                ),
                oncpu_wall_ns: secs * 1_000_000 * u64::from(t.tid % 11),
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
            cgroup: Default::default(),
            ..super::fixtures_everyday::everyday(pid, secs)
        });
    }
    s
}

/// The IPI/TLB figures of `incident` (see `irq::fixture_into`), with the columns that
/// fixture has the same on every CPU made to differ, and the kernel's TLB count apart
/// from eBPF's by a little (so a swapped column shows in a snapshot).
pub fn irq_into(s: &mut Sample, secs: u64) {
    super::irq::fixture_into(s, secs);
    if let Some(irq) = s.irq.as_mut() {
        // The programs' own counts (a host whose /proc/interrupts lacks the x86 lines),
        // so that eBPF's TLB column and the kernel's are two sources.
        irq.measured.recv_proc = false;
        for (k, c) in (0u64..).zip(irq.cpus.iter_mut()) {
            // recv: call, call-single, reschedule, irq-work; sent: reschedule, tlb, call,
            // other (irq::RECV_NAMES, SENT_NAMES).
            c.recv[0] = (40 + 11 * k) * secs;
            c.recv[3] = (3 + 2 * k) * secs;
            c.sent[2] = (150 + 23 * k) * secs;
        }
    }
    if let Some(tlb) = s.interrupts.lines.get_mut("TLB") {
        for (k, v) in (0u64..).zip(tlb.iter_mut()) {
            *v += (k + 1) * 3 * secs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::derive;

    /// Every CPU's row differs from every other's in every column, and so do the
    /// threads' and the latency rows' (a swapped or mis-keyed column would show).
    #[test]
    fn rows_differ_in_every_column() {
        let (mut a, mut b) = (incident(1, true), incident(2, true));
        for (s, secs) in [(&mut a, 1), (&mut b, 2)] {
            latency_into(s, secs);
            irq_into(s, secs);
        }
        let f = derive(&system(), Some(&a), &b);
        let cpus: Vec<_> = f
            .cpus
            .iter()
            .map(|c| {
                vec![
                    c.util,
                    c.iowait,
                    c.steal,
                    c.runq_avg.unwrap(),
                    c.switches.unwrap() as f64,
                    c.migrations.unwrap() as f64,
                    c.tlb_shootdowns.unwrap() as f64,
                    c.interrupts["TLB"] as f64,
                ]
            })
            .collect();
        for col in 0..8 {
            let mut v: Vec<u64> = cpus.iter().map(|c| c[col].to_bits()).collect();
            v.sort();
            v.dedup();
            assert_eq!(v.len(), cpus.len(), "CPU column {col}: {cpus:?}");
        }
        // The columns within a row differ too (iowait from steal, eBPF's TLB count from
        // the kernel's, created from exited).
        assert!(f.cpus.iter().all(|c| c.iowait != c.steal));
        assert!(
            f.cpus
                .iter()
                .all(|c| c.tlb_shootdowns != Some(c.interrupts["TLB"]))
        );
        let tiflash = f.procs.iter().find(|p| p.pid == 4242).unwrap();
        assert_ne!(tiflash.threads_created, tiflash.threads_exited);
        let mut tids: Vec<(u64, u64)> = f
            .threads
            .iter()
            .filter(|t| t.pid == 4242)
            .map(|t| {
                (
                    t.cpu_pct_true.get().unwrap().to_bits(),
                    t.runq_wait_ms.get().unwrap().to_bits(),
                )
            })
            .collect();
        assert!(tids.len() > 40);
        tids.sort();
        tids.dedup();
        assert!(tids.len() >= 5, "threads' figures differ: {tids:?}");
        let lat = f.latency.unwrap();
        let mut at: Vec<u64> = lat
            .cpus
            .iter()
            .map(|c| c.max_at.unwrap().to_bits())
            .collect();
        at.extend(lat.threads.iter().map(|t| t.max_at.to_bits()));
        let n = at.len();
        at.sort();
        at.dedup();
        assert_eq!(at.len(), n, "every MAX AT differs");
        let mut counts: Vec<u64> = lat.cpus.iter().map(|c| c.count).collect();
        counts.dedup();
        assert_eq!(counts.len(), 4);
    }
}
