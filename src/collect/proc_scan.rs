//! The "top view": what a /proc scan sees, taken once per tick exactly as top does it
//! (/proc/PID/stat and /proc/PID/task/TID/stat).
//!
//! It must be cheap and harmless to the processes it looks at: it never reads
//! /proc/PID/environ, maps or smaps (they take the target's mmap_lock: seed 002),
//! it reads cmdline once per new process, and every file of a process is opened
//! relative to the process directory it opened once (procfs keeps a dirfd).

use std::collections::HashMap;

use crate::model::sample::{CpuTimes, ProcScan, ProcStat, TaskScan};

#[derive(Default)]
pub struct ProcScanner {
    /// cmdline by (pid, starttime), read once per process lifetime.
    cmdlines: HashMap<(u32, u64), String>,
    /// When set, only these processes are scanned (ttop -p).
    pub only_pids: Option<Vec<u32>>,
}

/// Parse /proc/stat: per-CPU times and the scheduler counters.
pub fn parse_stat(text: &str) -> ProcStat {
    let mut st = ProcStat::default();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        let num = |s: Option<&str>| s.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if let Some(n) = key.strip_prefix("cpu") {
            let Ok(cpu) = n.parse::<u32>() else { continue }; // skip the aggregate "cpu" line
            let v: Vec<u64> = it.map(|x| x.parse().unwrap_or(0)).collect();
            let g = |i: usize| v.get(i).copied().unwrap_or(0);
            st.cpus.push(CpuTimes {
                cpu,
                user: g(0),
                nice: g(1),
                system: g(2),
                idle: g(3),
                iowait: g(4),
                irq: g(5),
                softirq: g(6),
                steal: g(7),
            });
        } else {
            match key {
                "ctxt" => st.ctxt = num(it.next()),
                "processes" => st.forks = num(it.next()),
                "procs_running" => st.procs_running = num(it.next()) as u32,
                "procs_blocked" => st.procs_blocked = num(it.next()) as u32,
                _ => {}
            }
        }
    }
    st
}

/// Read /proc/stat, /proc/loadavg and /proc/uptime.
pub fn read_system() -> ProcStat {
    let mut st = std::fs::read_to_string("/proc/stat")
        .map(|t| parse_stat(&t))
        .unwrap_or_default();
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        for (i, v) in l.split_ascii_whitespace().take(3).enumerate() {
            st.loadavg[i] = v.parse().unwrap_or(0.0);
        }
    }
    if let Ok(u) = std::fs::read_to_string("/proc/uptime") {
        st.uptime_s = u
            .split_ascii_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
    }
    st
}

/// /proc/stat procs_running alone, cheaply (for tests and reference sampling).
pub fn procs_running() -> Option<u32> {
    let t = std::fs::read_to_string("/proc/stat").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("procs_running ")?.trim().parse().ok())
}

impl ProcScanner {
    pub fn new(only_pids: Option<Vec<u32>>) -> Self {
        Self {
            cmdlines: HashMap::new(),
            only_pids,
        }
    }

    /// Scan every process and thread once.
    pub fn scan(&mut self) -> Vec<ProcScan> {
        let procs: Vec<procfs::process::Process> = match &self.only_pids {
            Some(pids) => pids
                .iter()
                .filter_map(|&p| procfs::process::Process::new(p as i32).ok())
                .collect(),
            None => match procfs::process::all_processes() {
                Ok(it) => it.filter_map(Result::ok).collect(),
                Err(_) => Vec::new(),
            },
        };
        let mut out = Vec::with_capacity(procs.len());
        let mut live = HashMap::with_capacity(procs.len());
        for p in procs {
            // A process can vanish at any point of the scan; whatever failed is skipped.
            let Ok(st) = p.stat() else { continue };
            let pid = st.pid as u32;
            let key = (pid, st.starttime);
            let cmdline = match self.cmdlines.remove(&key) {
                Some(c) => c,
                None => p.cmdline().map(|v| v.join(" ")).unwrap_or_default(),
            };
            live.insert(key, cmdline.clone());
            let tasks = match p.tasks() {
                Ok(it) => it
                    .filter_map(Result::ok)
                    .filter_map(|t| t.stat().ok())
                    .map(|ts| TaskScan {
                        tid: ts.pid as u32,
                        comm: ts.comm,
                        state: ts.state,
                        utime: ts.utime,
                        stime: ts.stime,
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            out.push(ProcScan {
                pid,
                ppid: st.ppid as u32,
                comm: st.comm,
                cmdline,
                state: st.state,
                num_threads: st.num_threads.max(0) as u32,
                utime: st.utime,
                stime: st.stime,
                rss_pages: st.rss,
                starttime: st.starttime,
                tasks,
            });
        }
        // Only processes still alive keep their cached cmdline.
        self.cmdlines = live;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let t = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 1 2 50 1 3 4 5 0 0\ncpu1 6 0 3 50 0 0 0 0 0 0\n\
                 intr 1 2 3\nctxt 123456\nbtime 1\nprocesses 789\nprocs_running 3\nprocs_blocked 1\n";
        let s = parse_stat(t);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            s.cpus[0],
            CpuTimes {
                cpu: 0,
                user: 4,
                nice: 1,
                system: 2,
                idle: 50,
                iowait: 1,
                irq: 3,
                softirq: 4,
                steal: 5
            }
        );
        assert_eq!(s.ctxt, 123456);
        assert_eq!(s.forks, 789);
        assert_eq!(s.procs_running, 3);
        assert_eq!(s.procs_blocked, 1);
    }
}
