//! The cgroup collector: walks the cgroup v2 hierarchy each tick and reads each cgroup's
//! cpu.stat, cpu.max, pressure files, memory.current/max/high, memory.events and io.stat
//! into a `CgroupSample`. Plain files, no eBPF: procfs-only mode has all of it. Which
//! processes are in which cgroup comes from the /proc scan (/proc/PID/cgroup).

pub mod parse;

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::cgroup::{CgroupSample, CgroupScan};

/// The walk stops after this many cgroups (a Kubernetes node has a few hundred; each costs
/// about ten small reads a tick) and counts the rest as skipped.
pub const MAX_CGROUPS: usize = 2000;
/// ...and does not go deeper than this below its top.
pub const MAX_DEPTH: usize = 16;

pub struct CgroupCollector {
    mount: PathBuf,
    /// The subtree walked ("/" for all; `--cgroup PATH`).
    top: String,
    buf: String,
}

/// Where the cgroup2 hierarchy is mounted, from /proc/self/mountinfo.
pub fn mount() -> Option<PathBuf> {
    let mi = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    parse::cgroup2_mount(&mi).map(PathBuf::from)
}

/// `--cgroup PATH` as a path below the mount ("/system.slice/x.service"): PATH may be
/// given below the mount or as a full path under it. An error says what was looked for.
pub fn resolve_path(given: &str) -> Result<String, String> {
    let Some(m) = mount() else {
        return Err(format!(
            "--cgroup {given}: no cgroup v2 hierarchy is mounted (see /proc/self/mountinfo)"
        ));
    };
    let ms = m.to_string_lossy();
    let rel = given
        .strip_prefix(ms.as_ref())
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .unwrap_or(given);
    let rel = format!("/{}", rel.trim_matches('/'));
    let dir = m.join(rel.trim_start_matches('/'));
    if dir.join("cgroup.procs").is_file() {
        Ok(rel)
    } else {
        Err(format!(
            "--cgroup {given}: no such cgroup ({} is not a cgroup v2 directory; \
             `cat /proc/PID/cgroup` shows a process's)",
            dir.display()
        ))
    }
}

/// The processes in the cgroup `rel` and below it, from their cgroup.procs.
pub fn procs_under(rel: &str) -> Vec<u32> {
    let Some(m) = mount() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![m.join(rel.trim_start_matches('/'))];
    while let Some(dir) = stack.pop() {
        if let Ok(t) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            out.extend(t.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        stack.extend(subdirs(&dir));
    }
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

impl CgroupCollector {
    /// None when no cgroup2 hierarchy is mounted.
    pub fn new(top: Option<&str>) -> Option<Self> {
        Some(CgroupCollector {
            mount: mount()?,
            top: top.unwrap_or("/").to_string(),
            buf: String::new(),
        })
    }

    fn read(&mut self, dir: &Path, file: &str) -> Option<&str> {
        self.buf.clear();
        std::fs::File::open(dir.join(file))
            .and_then(|mut f| f.read_to_string(&mut self.buf))
            .ok()?;
        Some(&self.buf)
    }

    fn scan_one(&mut self, dir: &Path, path: String) -> CgroupScan {
        use parse::*;
        let events = self
            .read(dir, "memory.events")
            .map(|t| (keyed(t, "oom_kill"), keyed(t, "high")));
        CgroupScan {
            path,
            cpu: self.read(dir, "cpu.stat").and_then(cpu_stat),
            cpu_max: self.read(dir, "cpu.max").and_then(cpu_max),
            cpu_pressure: self.read(dir, "cpu.pressure").and_then(pressure),
            memory_pressure: self.read(dir, "memory.pressure").and_then(pressure),
            io_pressure: self.read(dir, "io.pressure").and_then(pressure),
            memory_current: self
                .read(dir, "memory.current")
                .and_then(|t| t.trim().parse().ok()),
            memory_max: self.read(dir, "memory.max").and_then(limit),
            memory_high: self.read(dir, "memory.high").and_then(limit),
            oom_kill: events.and_then(|e| e.0),
            high_events: events.and_then(|e| e.1),
            io: self.read(dir, "io.stat").map(io_stat),
        }
    }

    /// Read the subtree, parents before children, children by name.
    pub fn read_all(&mut self) -> CgroupSample {
        let mut out = CgroupSample {
            mount: self.mount.to_string_lossy().into_owned(),
            ..Default::default()
        };
        let top = self.mount.join(self.top.trim_start_matches('/'));
        let mut stack = vec![(top, self.top.clone(), 0usize)];
        while let Some((dir, rel, depth)) = stack.pop() {
            if out.cgroups.len() >= MAX_CGROUPS {
                out.skipped += 1;
                continue;
            }
            let scan = self.scan_one(&dir, rel.clone());
            out.cgroups.push(scan);
            if depth >= MAX_DEPTH {
                continue;
            }
            for sub in subdirs(&dir).into_iter().rev() {
                let name = sub.file_name().unwrap_or_default().to_string_lossy();
                let child = if rel == "/" {
                    format!("/{name}")
                } else {
                    format!("{rel}/{name}")
                };
                stack.push((sub, child, depth + 1));
            }
        }
        out
    }
}
