//! The system-wide /proc files: /proc/stat (per-CPU times, context switches, forks,
//! procs_running), /proc/loadavg and /proc/uptime, kept open from tick to tick.

use crate::collect::procfs::files::SysFile;
use crate::model::sample::{CpuTimes, ProcStat};

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

/// Read /proc/stat, /proc/loadavg and /proc/uptime (once; the collector keeps them open
/// with [`SystemFiles`]).
pub fn read_system() -> ProcStat {
    SystemFiles::default().read()
}

/// /proc/stat, /proc/loadavg and /proc/uptime, kept open.
pub struct SystemFiles {
    stat: SysFile,
    loadavg: SysFile,
    uptime: SysFile,
}

impl Default for SystemFiles {
    fn default() -> Self {
        Self {
            stat: SysFile::new(c"/proc/stat"),
            loadavg: SysFile::new(c"/proc/loadavg"),
            uptime: SysFile::new(c"/proc/uptime"),
        }
    }
}

impl SystemFiles {
    pub fn read(&mut self) -> ProcStat {
        let mut st = parse_stat(self.stat.read());
        for (i, v) in self
            .loadavg
            .read()
            .split_ascii_whitespace()
            .take(3)
            .enumerate()
        {
            st.loadavg[i] = v.parse().unwrap_or(0.0);
        }
        st.uptime_s = self
            .uptime
            .read()
            .split_ascii_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        st
    }
}

/// /proc/stat procs_running alone, cheaply (for tests and reference sampling).
pub fn procs_running() -> Option<u32> {
    let t = std::fs::read_to_string("/proc/stat").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("procs_running ")?.trim().parse().ok())
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
