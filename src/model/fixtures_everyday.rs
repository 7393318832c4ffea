//! Fixture processes' everyday figures (see fixtures.rs).

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
