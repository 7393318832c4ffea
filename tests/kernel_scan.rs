//! The /proc scan under eBPF reads a thread's stat file again only when a scheduler
//! event says it may have changed (src/collect/sched/dirty.rs). Checked against a plain scan
//! taken right after, on a process with hundreds of sleeping threads and one that
//! keeps waking up, and through a rename done from outside while its thread sleeps.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::*;
use ttop::collect::procfs::scan::ProcScanner;
use ttop::collect::{Collector, Config};
use ttop::model::sample::{ProcScan, TaskScan};

const SLEEPERS: usize = 300;

/// read() calls made by the calling thread so far (/proc/thread-self/io).
fn reads_so_far() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("syscr: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The key=value pairs of the workload's next line starting with `key=`.
fn read_until(out: &mut impl BufRead, key: &str) -> HashMap<String, String> {
    let mut line = String::new();
    while !line.starts_with(&format!("{key}=")) {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "scanmix ended early");
    }
    parse_kv(&line)
}

fn tasks_of(procs: &[ProcScan], pid: u32) -> HashMap<u32, TaskScan> {
    procs
        .iter()
        .find(|p| p.pid == pid)
        .map(|p| p.tasks.iter().map(|t| (t.tid, t.clone())).collect())
        .unwrap_or_default()
}

#[test]
fn skipped_threads_read_as_a_full_scan_does() {
    if !require_root("skipped_threads_read_as_a_full_scan_does") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("scanmix", &[&SLEEPERS.to_string(), "60", "200", "40"]);
    let mut out = BufReader::new(w.stdout.take().unwrap());
    let mut kv = HashMap::new();
    while !(kv.contains_key("sleepers") && kv.contains_key("burst")) {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "scanmix ended early");
        kv.extend(parse_kv(&line));
    }
    let pid: u32 = kv["pid"].parse().unwrap();
    let burst: u32 = kv["burst"].parse().unwrap();
    let sleepers: Vec<u32> = kv["sleepers"]
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(sleepers.len(), SLEEPERS);

    let mut c = Collector::new(&Config {
        bpf: true,
        pids: Some(vec![pid]),
        comm: None,
        cgroup: None,
        profile_hz: None,
        profile_off_cpu: false,
        futex: ttop::collect::FutexChoice::Sleeps,
        bpf_budget_pct: None,
    });
    assert!(c.mode().bpf, "eBPF did not load: {:?}", c.mode().problems);
    let mut full = ProcScanner::new(Some(vec![pid]));
    let mut burst_cpu = Vec::new();
    let renamed = sleepers[SLEEPERS / 2];
    let mut fewest_reads = u64::MAX;
    for round in 0..12 {
        if round == 6 {
            // By another thread of the process, while this one sleeps: only task_rename
            // says so.
            let _ = std::process::Command::new("kill")
                .args(["-USR1", &pid.to_string()])
                .status();
            assert_eq!(
                read_until(&mut out, "renamed")["renamed"],
                renamed.to_string()
            );
        }
        let mut born = None;
        if round == 9 {
            // A thread born between two samples, in a process whose listing is reused
            // while none is: the next sample lists it.
            let _ = std::process::Command::new("kill")
                .args(["-USR2", &pid.to_string()])
                .status();
            born = Some(read_until(&mut out, "born")["born"].parse::<u32>().unwrap());
        }
        let r0 = reads_so_far();
        let s = c.sample();
        let reads = reads_so_far() - r0;
        let ours = tasks_of(&s.procs, pid);
        let truth = tasks_of(&full.scan(), pid);
        let want = SLEEPERS + 2 + usize::from(round >= 9);
        assert_eq!(ours.len(), want, "round {round}: threads scanned");
        if let Some(b) = born {
            assert!(
                ours.contains_key(&b),
                "the thread born before round {round} is missing"
            );
        }
        for (tid, t) in &truth {
            let o = ours
                .get(tid)
                .unwrap_or_else(|| panic!("tid {tid} not scanned"));
            if *tid == burst || *tid == pid {
                continue; // they run (the main thread every 10 ms): may differ by now
            }
            assert_eq!(
                (&*o.comm, o.state, o.utime, o.stime),
                (&*t.comm, t.state, t.utime, t.stime),
                "round {round}: sleeping thread {tid} differs from a full scan"
            );
        }
        if round >= 6 {
            assert_eq!(&*ours[&renamed].comm, "ttop-renamed", "round {round}");
        }
        let b = &ours[&burst];
        burst_cpu.push(b.utime + b.stime);
        if round >= 2 {
            fewest_reads = fewest_reads.min(reads);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    // The waking thread is read again: its CPU time (40 ms every 240 ms, in 10 ms
    // ticks) keeps growing in what the scan reports.
    let grew = burst_cpu.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        grew >= burst_cpu.len() / 2,
        "the busy thread's CPU stood still in the scan: {burst_cpu:?}"
    );
    eprintln!("fewest files read in one sample: {fewest_reads}");
    // 302 threads, nearly all asleep: a full scan reads 300 and more files.
    assert!(
        fewest_reads < 60,
        "the scan still read {fewest_reads} files per sample with {SLEEPERS} sleeping threads"
    );
    let _ = w.kill();
    let _ = w.wait();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1)
        && std::path::Path::new(&format!("/proc/{pid}")).exists()
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The scan lists /proc again only when a process was started since its last listing
/// (sched.bpf.c counts them at their first wakeup). A process started between two samples
/// is in the next one, and one that exited is gone from it, with no listing in between.
#[test]
fn processes_started_between_samples_are_scanned() {
    if !require_root("processes_started_between_samples_are_scanned") {
        return;
    }
    let _g = kernel_lock();
    let mut c = Collector::new(&Config {
        bpf: true,
        pids: None,
        comm: None,
        cgroup: None,
        profile_hz: None,
        profile_off_cpu: false,
        futex: ttop::collect::FutexChoice::Sleeps,
        bpf_budget_pct: None,
    });
    assert!(c.mode().bpf, "eBPF did not load: {:?}", c.mode().problems);
    let has = |s: &ttop::model::sample::Sample, pid: u32| s.procs.iter().any(|p| p.pid == pid);
    c.sample();
    for round in 0..5 {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(
            has(&c.sample(), pid),
            "round {round}: a process started before the sample is missing"
        );
        assert!(has(&c.sample(), pid), "round {round}: gone a sample later");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !has(&c.sample(), pid),
            "round {round}: a process reaped before the sample is still there"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The fields of a process's own stat line the scan keeps, RSS included.
fn proc_line(p: &ProcScan) -> (u32, u32, String, char, u32, u64, u64, u64, u64) {
    (
        p.pid,
        p.ppid,
        p.comm.to_string(),
        p.state,
        p.num_threads,
        p.utime,
        p.stime,
        p.rss_pages,
        p.starttime,
    )
}

/// A process none of whose threads had an event keeps its last stat line, RSS read
/// again (src/collect/procfs/reuse.rs). Checked against a plain scan taken right after:
/// sleeping processes show exactly what it shows, a process that keeps waking up shows
/// its CPU time growing, and a sleeping orphan shows its new parent at once.
#[test]
fn sleeping_processes_read_as_a_full_scan_does() {
    if !require_root("sleeping_processes_read_as_a_full_scan_does") {
        return;
    }
    let _g = kernel_lock();
    let sleep = || {
        std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap()
    };
    let mut sleepers: Vec<_> = (0..20).map(|_| sleep()).collect();
    // A parent (sh, then exec'd into sleep) and its sleeping child, the orphan-to-be.
    let mut parent = std::process::Command::new("sh")
        .args(["-c", "sleep 60 & echo orphan=$!; exec sleep 60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(parent.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let orphan: u32 = parse_kv(&line)["orphan"].parse().unwrap();
    let mut waker = spawn_workload("scanmix", &["3", "60", "200", "40"]);
    let waker_pid = waker.id();

    let mut c = Collector::new(&Config {
        bpf: true,
        pids: None,
        comm: None,
        cgroup: None,
        profile_hz: None,
        profile_off_cpu: false,
        futex: ttop::collect::FutexChoice::Sleeps,
        bpf_budget_pct: None,
    });
    assert!(c.mode().bpf, "eBPF did not load: {:?}", c.mode().problems);
    let mut asleep: Vec<u32> = sleepers.iter().map(|s| s.id()).collect();
    asleep.push(orphan);
    let mut waker_cpu = Vec::new();
    let find = |all: &[ProcScan], pid: u32| all.iter().find(|p| p.pid == pid).cloned();
    for round in 0..10 {
        if round == 5 {
            let _ = parent.kill();
            let _ = parent.wait();
        }
        let s = c.sample();
        let truth = ProcScanner::new(None).scan();
        for &pid in &asleep {
            let ours = find(&s.procs, pid).unwrap_or_else(|| panic!("{pid} not scanned"));
            let t = find(&truth, pid).unwrap_or_else(|| panic!("{pid} gone"));
            if t.state != 'S' {
                continue; // a sleep just started may not be asleep yet
            }
            assert_eq!(
                proc_line(&ours),
                proc_line(&t),
                "round {round}: sleeping process {pid} differs from a full scan"
            );
        }
        let o = find(&s.procs, orphan).unwrap();
        if round >= 5 {
            assert_ne!(o.ppid, parent.id(), "round {round}: the dead parent shows");
        } else {
            assert_eq!(o.ppid, parent.id(), "round {round}");
        }
        let w = find(&s.procs, waker_pid).expect("waker scanned");
        waker_cpu.push(w.utime + w.stime);
        std::thread::sleep(Duration::from_millis(250));
    }
    // The process that keeps waking up is read again: its CPU time (40 ms every 240 ms,
    // in 10 ms ticks) keeps growing in what the scan reports.
    let grew = waker_cpu.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        grew >= waker_cpu.len() / 2,
        "the waking process's CPU stood still in the scan: {waker_cpu:?}"
    );
    let _ = parent.wait(); // reaped at round 5; this only returns its status
    for s in &mut sleepers {
        let _ = s.kill();
        let _ = s.wait();
    }
    let _ = waker.kill();
    let _ = waker.wait();
    // SAFETY: signalling the orphan we started (through sh); init reaps it.
    unsafe { libc::kill(orphan as i32, libc::SIGKILL) };
}
