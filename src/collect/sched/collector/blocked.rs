//! Blocked now: the threads in an uninterruptible sleep at the read (the wall-time
//! split's io, fault and uninterruptible parts), longest first, each with the kernel
//! stack it left its CPU with (bpf/sched.bpf.c takes it at that switch-out, so no
//! /proc/PID/stack is read).

use libbpf_rs::{MapCore, MapFlags};

use super::skel::types;
use crate::collect::bpf::common::from_bytes;
use crate::collect::stacks::kallsyms;
use crate::model::sample::{BLOCKED_ROWS, BlockedThread};

/// The off-CPU causes (enum ttop_split) that are a block: io, fault, uninterruptible.
pub fn is_block(cause: u32) -> bool {
    (1..=3).contains(&cause)
}

/// A thread the walk found blocked: (tid, tgid, cause, off_ts).
pub type Candidate = (u32, u32, u32, u64);

/// The longest BLOCKED_ROWS of `found` at `end` (ns, the read's end), with their
/// stacks from `stacks` (the blocked_stacks map) and names from /proc.
pub fn blocked_now<M: MapCore>(
    stacks: &M,
    mut found: Vec<Candidate>,
    end: u64,
) -> Vec<BlockedThread> {
    found.sort_by_key(|&(tid, _, _, off_ts)| (off_ts, tid));
    found.truncate(BLOCKED_ROWS);
    found
        .into_iter()
        .map(|(tid, tgid, cause, off_ts)| BlockedThread {
            tid,
            tgid,
            comm: std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm"))
                .map(|c| c.trim_end().to_string())
                .unwrap_or_default(),
            cause: cause as u8,
            for_ns: end.saturating_sub(off_ts),
            stack: stack_of(stacks, tid, off_ts),
        })
        .collect()
}

/// The stack `tid` went to sleep in at `off_ts`, named; empty unless the map's entry
/// is of that very sleep.
fn stack_of<M: MapCore>(stacks: &M, tid: u32, off_ts: u64) -> Vec<String> {
    let Ok(Some(v)) = stacks.lookup(&tid.to_ne_bytes(), MapFlags::ANY) else {
        return Vec::new();
    };
    let b: types::blocked_stack = from_bytes(&v);
    if b.off_ts != off_ts {
        return Vec::new();
    }
    let ips = &b.ips[..(b.nr as usize).min(b.ips.len())];
    kallsyms::prefetch(ips.iter().copied());
    let names: Vec<&str> = ips
        .iter()
        .map(|&ip| kallsyms::lookup(ip).map_or("[unknown]", |(n, _)| n))
        .collect();
    // The tracepoint's, ttop's program's and the scheduler's own frames come first:
    // they are in every stack and say nothing of why it sleeps. Cut through the last
    // of them near the top: where the kernel lists no symbol for BPF programs (5.10's
    // bpf_jit_kallsyms off), the program's address is named after whatever symbol
    // precedes it ("p9_fd_create.cold"), so the run of them does not start at the top.
    names[own_frames(&names)..]
        .iter()
        .map(|n| n.to_string())
        .collect()
}

/// How many frames at the top of a switch-out stack are the scheduler's own.
fn own_frames(names: &[&str]) -> usize {
    names
        .iter()
        .take(8)
        .rposition(|n| is_scheduler_frame(n))
        .map_or(0, |i| i + 1)
}

fn is_scheduler_frame(name: &str) -> bool {
    name.starts_with("bpf_prog_")
        || name.starts_with("bpf_trace_run")
        || name.starts_with("__bpf_trace_")
        || name.starts_with("__traceiter_")
        || name == "__schedule"
        || name == "schedule"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_frames_are_not_the_reason() {
        for n in [
            "bpf_prog_6deef7357e7b4530_ttop_sched_switch",
            "__traceiter_sched_switch",
            "__schedule",
            "schedule",
        ] {
            assert!(is_scheduler_frame(n), "{n}");
        }
        for n in [
            "io_schedule",
            "schedule_timeout",
            "wait_for_vfork_done",
            "folio_wait_bit_common",
        ] {
            assert!(!is_scheduler_frame(n), "{n}");
        }
        // 5.10 under QEMU: the program's address named after the symbol before it.
        let s = [
            "p9_fd_create.cold",
            "bpf_trace_run3",
            "__schedule",
            "schedule",
            "schedule_timeout",
            "kernel_clone",
        ];
        assert_eq!(own_frames(&s), 4);
        assert_eq!(own_frames(&["io_schedule", "folio_wait_bit_common"]), 0);
        assert!(is_block(1) && is_block(2) && is_block(3));
        assert!(!is_block(0) && !is_block(4) && !is_block(7));
    }
}
