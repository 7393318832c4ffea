//! Blocked now: the threads in an uninterruptible sleep at the read (the wall-time
//! split's io, fault and uninterruptible parts), longest first, each with its kernel
//! stack, read by a task iterator (bpf/sched.bpf.c ttop_blocked_stacks) only at ticks
//! where a thread is blocked: no /proc/PID/stack is read, and nothing is added to the
//! scheduler's hot path.

use libbpf_rs::Link;
use std::collections::HashMap;

use super::skel::types;
use crate::collect::bpf::common::from_bytes;
use crate::collect::stacks::kallsyms;
use crate::model::sample::{BLOCKED_ROWS, BlockedThread};

/// The off-CPU causes (enum ttop_split) that are a block: io, fault, uninterruptible,
/// lock, mmap_lock.
pub fn is_block(cause: u32) -> bool {
    // io, fault, uninterruptible; lock, mmap_lock (enum ttop_split).
    (1..=3).contains(&cause) || (8..=9).contains(&cause)
}

/// A thread the walk found blocked: (tid, tgid, cause, off_ts).
pub type Candidate = (u32, u32, u32, u64);

/// Attach the iterator (None where this kernel did not load it: no task iterators
/// without BTF; the rows then have no stacks).
pub fn iterator(prog: &libbpf_rs::ProgramMut<'static>) -> Option<Link> {
    prog.autoload().then(|| prog.attach().ok()).flatten()
}

/// The longest BLOCKED_ROWS of `found` at `end` (ns, the read's end), with their
/// stacks from the iterator and names from /proc.
pub fn blocked_now(iter: Option<&Link>, mut found: Vec<Candidate>, end: u64) -> Vec<BlockedThread> {
    found.sort_by_key(|&(tid, _, _, off_ts)| (off_ts, tid));
    let stacks = match iter {
        Some(link) if !found.is_empty() => read_stacks(link),
        _ => None,
    };
    // The iterator, run after the walk that found them, lists every thread still in
    // the sleep the walk saw: one it does not list woke (and maybe slept again) in
    // between, and is not blocked in that sleep now (a 12 ms sleep of a vfork parent
    // under TCG was listed without a stack, 2026-11-29).
    if let Some(s) = &stacks {
        found.retain(|(tid, _, _, off_ts)| s.get(tid).is_some_and(|(ts, _)| ts == off_ts));
    }
    found.truncate(BLOCKED_ROWS);
    let stacks = stacks.unwrap_or_default();
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
            // Only a stack of this very sleep (it may have woken and slept again).
            stack: stacks
                .get(&tid)
                .filter(|(ts, _)| *ts == off_ts)
                .map(|(_, s)| s.clone())
                .unwrap_or_default(),
        })
        .collect()
}

/// Run the iterator: tid -> (off_ts, stack named, innermost first); None if it failed.
fn read_stacks(link: &Link) -> Option<HashMap<u32, (u64, Vec<String>)>> {
    let raw = super::task_iters::run(link).ok()?;
    let size = std::mem::size_of::<types::blocked_stack>();
    raw.chunks_exact(size)
        .map(|c| {
            let b: types::blocked_stack = from_bytes(c);
            let ips = &b.ips[..(b.nr as usize).min(b.ips.len())];
            kallsyms::prefetch(ips.iter().copied());
            let names: Vec<&str> = ips
                .iter()
                .map(|&ip| kallsyms::lookup(ip).map_or("[unknown]", |(n, _)| n))
                .collect();
            let stack = names[own_frames(&names)..]
                .iter()
                .map(|n| n.to_string())
                .collect();
            (b.tid, (b.off_ts, stack))
        })
        .collect::<HashMap<_, _>>()
        .into()
}

/// How many frames at the top of a sleeping task's stack are the scheduler's own (or,
/// taken inside sched_switch, the tracepoint's and a BPF program's: where the kernel
/// lists no symbol for BPF programs, as 5.10 may, the program's address is named after
/// whatever precedes it, so the run of them does not always start at the top).
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
