//! Blocked now: the threads in an uninterruptible sleep at the tick (block I/O, a page
//! fault, another D wait), longest first, with the kernel stack each sleeps in: what
//! `cat /proc/PID/task/TID/stack` would show, read by an eBPF task iterator at the tick.

use serde::Serialize;

use super::wall::part_of_cause;
use crate::model::sample::Sample;

/// One blocked thread (JSON `blocked[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BlockedRow {
    pub pid: u32,
    pub tid: u32,
    /// The thread's name.
    pub comm: String,
    /// The part of the time split it is in: io, fault or uninterruptible.
    pub part: &'static str,
    /// How long it had been asleep at the tick, ms.
    pub for_ms: f64,
    /// Its kernel stack, innermost first (the scheduler's own frames left out); empty
    /// when not known (a kernel without task iterators).
    pub stack: Vec<String>,
}

/// The blocked threads of `cur`; None (JSON null: not measured) without eBPF.
pub fn blocked(cur: &Sample) -> Option<Vec<BlockedRow>> {
    let bpf = cur.bpf.as_ref()?;
    Some(
        bpf.blocked
            .iter()
            .map(|b| BlockedRow {
                pid: b.tgid,
                tid: b.tid,
                comm: b.comm.clone(),
                part: part_of_cause(u32::from(b.cause)),
                for_ms: b.for_ns as f64 / 1e6,
                stack: b.stack.clone(),
            })
            .collect(),
    )
}

/// The frame that says why: the innermost frame of `stack` that is not a generic wait
/// (io_schedule, schedule_timeout...), or the innermost one.
pub fn why(stack: &[String]) -> Option<&str> {
    const GENERIC: &[&str] = &[
        "io_schedule",
        "io_schedule_timeout",
        "schedule_timeout",
        "schedule_preempt_disabled",
        "bit_wait_io",
        "__wait_for_common",
        "wait_for_completion",
        "wait_for_completion_io",
        "wait_for_completion_killable",
        "wait_for_completion_state",
    ];
    stack
        .iter()
        .map(String::as_str)
        .find(|f| !GENERIC.contains(f) && !f.starts_with("schedule_"))
        .or(stack.first().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::{BlockedThread, BpfSample};

    #[test]
    fn rows_name_the_part_and_null_without_ebpf() {
        let mut s = Sample::default();
        assert_eq!(blocked(&s), None);
        s.bpf = Some(BpfSample {
            blocked: vec![BlockedThread {
                tid: 8,
                tgid: 7,
                comm: "w".into(),
                cause: 1,
                for_ns: 2_500_000,
                stack: vec!["io_schedule".into(), "folio_wait_bit_common".into()],
            }],
            ..Default::default()
        });
        let r = blocked(&s).unwrap();
        assert_eq!(
            (r[0].pid, r[0].tid, r[0].part, r[0].for_ms),
            (7, 8, "io", 2.5)
        );
        assert_eq!(why(&r[0].stack), Some("folio_wait_bit_common"));
        assert_eq!(why(&["io_schedule".to_string()]), Some("io_schedule"));
        assert_eq!(why(&[]), None);
    }
}
