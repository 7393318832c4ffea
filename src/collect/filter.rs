//! ttop -p / --comm: which processes to watch, resolved to PIDs once per tick (a --comm
//! filter picks up processes started later). Resolution reads only /proc/PID/comm.

use crate::model::sample::FilterSpec;

/// PIDs matching `spec` now: the explicit PIDs (kept even after they exit, so their end
/// is reported) plus every process whose comm equals `spec.comm`, plus those in the
/// cgroup `spec.cgroup` and below it (their cgroup.procs).
pub fn resolve(spec: &FilterSpec) -> Vec<u32> {
    let mut pids = spec.pids.clone();
    if let Some(want) = spec.comm.as_deref()
        && let Ok(dir) = std::fs::read_dir("/proc")
    {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            if comm.trim_end_matches('\n') == want {
                pids.push(pid);
            }
        }
    }
    if let Some(cg) = spec.cgroup.as_deref() {
        pids.extend(super::cgroup::procs_under(cg));
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Check a -p list at start: every PID must exist.
pub fn check_pids(pids: &[u32]) -> Result<(), String> {
    let missing: Vec<String> = pids
        .iter()
        .filter(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .map(|p| p.to_string())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no such process: {}", missing.join(", ")))
    }
}
