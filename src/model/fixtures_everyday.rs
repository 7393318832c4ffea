//! Fixture processes' everyday figures and their threads' time split (see fixtures.rs).

use super::sample::ProcScan;

/// The everyday figures (USER, PR/NI, faults, switches) of a fixture process: different
/// per process, counters growing linearly with `secs`.
pub fn everyday(pid: u32, secs: u64) -> ProcScan {
    let nice = [0, -5, 10, 19][(pid % 4) as usize];
    let uid = if pid < 1000 { 0 } else { 1000 + pid % 3 };
    ProcScan {
        priority: Some(20 + nice),
        nice: Some(nice),
        majflt: Some(secs * u64::from(pid % 5)),
        uid: Some(uid),
        user: match uid {
            0 => "root",
            1000 => "postgres",
            1001 => "a-long-user-name",
            _ => "",
        }
        .into(),
        ctx_voluntary: Some(secs * u64::from(pid % 97)),
        ctx_involuntary: Some(secs * u64::from(pid % 13)),
        ..Default::default()
    }
}

/// A fixture thread's off-CPU time after `secs` seconds, when it ran or waited for a CPU
/// `busy_ns` of each second: the rest of each second, 70% to one cause and 30% to
/// another, both picked by its tid, so threads differ and every second adds up.
pub fn off_split(tid: u32, busy_ns: u64, secs: u64) -> [u64; crate::model::sample::OFF_CAUSES] {
    let n = crate::model::sample::OFF_CAUSES;
    let rest = 1_000_000_000u64.saturating_sub(busy_ns);
    let mut off = [0; crate::model::sample::OFF_CAUSES];
    let (a, b) = (tid as usize % n, (tid as usize + 3) % n);
    off[a] += rest * 7 / 10 * secs;
    off[b] += (rest - rest * 7 / 10) * secs;
    off
}
