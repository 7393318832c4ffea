//! Parsers for the cgroupfs files ttop reads: pure, so they are tested on the kernel's
//! own text (Documentation/admin-guide/cgroup-v2.rst and accounting/psi.rst).

use crate::model::cgroup::{CpuStat, IoStat, Pressure, Psi};

/// `key value` lines (cpu.stat, memory.events): the value of `key`.
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

pub fn cpu_stat(text: &str) -> Option<CpuStat> {
    let usage_usec = keyed(text, "usage_usec")?;
    let periods = keyed(text, "nr_periods");
    Some(CpuStat {
        usage_usec,
        user_usec: keyed(text, "user_usec").unwrap_or(0),
        system_usec: keyed(text, "system_usec").unwrap_or(0),
        bandwidth: periods.is_some(),
        nr_periods: periods.unwrap_or(0),
        nr_throttled: keyed(text, "nr_throttled").unwrap_or(0),
        throttled_usec: keyed(text, "throttled_usec").unwrap_or(0),
    })
}

/// cpu.max: "QUOTA PERIOD" or "max PERIOD".
pub fn cpu_max(text: &str) -> Option<(Option<u64>, u64)> {
    let mut w = text.split_whitespace();
    let quota = w.next()?;
    let period = w.next()?.parse().ok()?;
    let quota = if quota == "max" {
        None
    } else {
        Some(quota.parse().ok()?)
    };
    Some((quota, period))
}

/// memory.max / memory.high: bytes, or "max" (no limit: `NO_LIMIT`).
pub fn limit(text: &str) -> Option<u64> {
    match text.trim() {
        "max" => Some(crate::model::cgroup::NO_LIMIT),
        v => v.parse().ok(),
    }
}

fn psi_line(line: &str) -> Option<Psi> {
    let mut p = Psi::default();
    let mut seen = (false, false);
    for w in line.split_whitespace().skip(1) {
        if let Some(v) = w.strip_prefix("avg10=") {
            p.avg10 = v.parse().ok()?;
            seen.0 = true;
        } else if let Some(v) = w.strip_prefix("total=") {
            p.total_us = v.parse().ok()?;
            seen.1 = true;
        }
    }
    (seen.0 && seen.1).then_some(p)
}

/// A pressure file: "some avg10=.. avg60=.. avg300=.. total=.." and the same for "full".
pub fn pressure(text: &str) -> Option<Pressure> {
    let line = |kind: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(kind))
            .and_then(psi_line)
    };
    Some(Pressure {
        some: line("some")?,
        full: line("full"),
    })
}

/// io.stat: one line per device, "MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. ...",
/// summed over the devices.
pub fn io_stat(text: &str) -> IoStat {
    let mut s = IoStat::default();
    for w in text.split_whitespace() {
        let Some((k, v)) = w.split_once('=') else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "rbytes" => s.rbytes += v,
            "wbytes" => s.wbytes += v,
            "rios" => s.rios += v,
            "wios" => s.wios += v,
            _ => {}
        }
    }
    s
}

/// /proc/PID/cgroup: the cgroup v2 path (the "0::" line), None on a v1-only host.
pub fn proc_cgroup(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// /proc/self/mountinfo: where the cgroup2 hierarchy is mounted.
pub fn cgroup2_mount(mountinfo: &str) -> Option<String> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(unescape))?
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_with_and_without_the_controller() {
        let core = "usage_usec 1200\nuser_usec 1000\nsystem_usec 200\n";
        let c = cpu_stat(core).unwrap();
        assert_eq!((c.usage_usec, c.bandwidth), (1200, false));
        let full = format!(
            "{core}core_sched.force_idle_usec 0\nnr_periods 50\nnr_throttled 40\n\
             throttled_usec 3200000\nnr_bursts 0\nburst_usec 0\n"
        );
        let c = cpu_stat(&full).unwrap();
        assert!(c.bandwidth);
        assert_eq!(
            (c.nr_periods, c.nr_throttled, c.throttled_usec),
            (50, 40, 3_200_000)
        );
        assert_eq!(cpu_stat("nr_periods 3\n"), None, "no usage: not cpu.stat");
    }

    #[test]
    fn limits_and_quota() {
        assert_eq!(cpu_max("20000 100000\n"), Some((Some(20_000), 100_000)));
        assert_eq!(cpu_max("max 100000\n"), Some((None, 100_000)));
        assert_eq!(limit("max\n"), Some(crate::model::cgroup::NO_LIMIT));
        assert_eq!(limit("67108864\n"), Some(64 << 20));
        assert_eq!(limit("junk"), None);
    }

    #[test]
    fn pressure_lines() {
        let t = "some avg10=12.50 avg60=3.00 avg300=1.00 total=123456\n\
                 full avg10=7.25 avg60=2.00 avg300=0.50 total=65432\n";
        let p = pressure(t).unwrap();
        assert_eq!(p.some.avg10, 12.5);
        assert_eq!(p.some.total_us, 123_456);
        assert_eq!(p.full.unwrap().avg10, 7.25);
        let cpu_old = "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\n";
        assert_eq!(pressure(cpu_old).unwrap().full, None);
    }

    #[test]
    fn io_stat_sums_devices() {
        let t = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
                 8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n";
        let s = io_stat(t);
        assert_eq!(s.rbytes, 1_459_200 + 90_430_464);
        assert_eq!(s.wios, 353 + 1252);
    }

    #[test]
    fn proc_cgroup_and_mount() {
        let hybrid = "9:name=systemd:/\n4:memory:/x\n0::/system.slice/nginx.service\n";
        assert_eq!(proc_cgroup(hybrid), Some("/system.slice/nginx.service"));
        assert_eq!(proc_cgroup("4:memory:/x\n"), None);
        let mi = "35 25 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:10 - cgroup cgroup rw,cpu\n\
                  40 25 0:35 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mount(mi).as_deref(), Some("/sys/fs/cgroup/unified"));
    }
}
