//! The checks, run here and in every guest (as `checks::`, the filter the `vm_*` drivers
//! pass): one file per subject, and here what they share: the workloads to build and
//! what the running kernel has, read from tracefs and /proc/kallsyms rather than from
//! ttop.

mod blocked;
mod contention;
mod probe;
mod profile;
mod sched;
mod split;
mod split_locks;
mod tlb;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::common::stream::u;
use super::common::*;

/// Every workload a check runs (built before a guest boots).
pub const WORKLOADS: &[&str] = &[
    "churn",
    "spin",
    "futex_mutex",
    "tlbshoot",
    "deepmutex",
    "burn31",
    "bench_churn",
    "bench_threads",
    "mmaplock",
    "timesplit",
    "vforkwait",
    "lockwait",
    "pingpong",
];

/// Start a workload whose threads say who they are (tests/workloads/roles.h): its
/// child, its pid (the "pid=" line) and each "ROLE=TID" line in order, read up to "ready".
fn start_roles(name: &str, args: &[&str]) -> (std::process::Child, u32, Vec<(String, u32)>) {
    use std::io::{BufRead, BufReader};
    let mut w = std::process::Command::new(workload(name))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
    let mut out = BufReader::new(w.stdout.take().unwrap());
    let (mut pid, mut roles) = (0, Vec::new());
    loop {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "{name} ended early");
        let l = l.trim();
        if l == "ready" {
            break;
        }
        let (k, v) = l.split_once('=').unwrap();
        let v: u32 = v.parse().unwrap();
        match k {
            "pid" => pid = v,
            _ => roles.push((k.to_string(), v)),
        }
    }
    (w, pid, roles)
}

fn in_vm() -> bool {
    std::env::var_os("TTOP_VM").is_some()
}

fn tracepoint(group: &str, name: &str) -> bool {
    [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ]
    .iter()
    .any(|r| Path::new(r).join(group).join(name).is_dir())
}

fn kallsyms_has(sym: &str) -> bool {
    std::fs::read_to_string("/proc/kallsyms")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some(sym))
}

fn kprobes() -> bool {
    Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
}

/// A workload's whole stdout after it exited.
fn output(mut w: std::process::Child) -> HashMap<String, String> {
    assert!(
        wait_timeout(&mut w, Duration::from_secs(120)),
        "a workload hung"
    );
    let mut s = String::new();
    std::io::Read::read_to_string(w.stdout.as_mut().unwrap(), &mut s).unwrap();
    parse_kv(&s)
}

fn rows_of(frames: &[Value], pid: u64) -> Vec<&Value> {
    frames
        .iter()
        .flat_map(|fr| fr["procs"].as_array().unwrap())
        .filter(|r| u(&r["pid"]) == pid)
        .collect()
}
