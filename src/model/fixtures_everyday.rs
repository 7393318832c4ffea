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
    // The main part one of the first eight causes, the second any (kernel locks too).
    let (a, b) = (tid as usize % 8, (tid as usize + 3) % n);
    off[a] += rest * 7 / 10 * secs;
    off[b] += (rest - rest * 7 / 10) * secs;
    off
}

/// Threads blocked at the tick (the time view's Blocked now), longest first as the
/// collector gives them: a page fault waiting on the disk, an fsync queued for a
/// request tag, an mprotect behind the mmap_lock's writer side.
pub fn blocked() -> Vec<crate::model::sample::BlockedThread> {
    let s = |v: &[&str]| v.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    vec![
        crate::model::sample::BlockedThread {
            tid: 5289,
            tgid: 4242,
            comm: "tiflash-w47".into(),
            cause: 2,
            for_ns: 2_310_000_000,
            stack: s(&[
                "io_schedule",
                "folio_wait_bit_common",
                "filemap_fault",
                "__do_fault",
                "do_fault",
                "handle_mm_fault",
                "do_user_addr_fault",
                "exc_page_fault",
                "asm_exc_page_fault",
            ]),
        },
        crate::model::sample::BlockedThread {
            tid: 2820,
            tgid: 1817,
            comm: "postgres-w3".into(),
            cause: 1,
            for_ns: 412_000_000,
            stack: s(&[
                "io_schedule",
                "blk_mq_get_tag",
                "__blk_mq_alloc_requests",
                "blk_mq_submit_bio",
                "submit_bio_noacct",
                "ext4_io_submit",
                "ext4_writepages",
                "do_writepages",
                "file_write_and_wait_range",
                "ext4_sync_file",
                "__x64_sys_fsync",
            ]),
        },
        crate::model::sample::BlockedThread {
            tid: 5288,
            tgid: 4242,
            comm: "tiflash-w46".into(),
            // mmap_lock (enum ttop_split): a writer queued behind the lock's holder.
            cause: 9,
            for_ns: 38_500_000,
            stack: s(&[
                "schedule_preempt_disabled",
                "rwsem_down_write_slowpath",
                "down_write_killable",
                "do_mprotect_pkey",
                "__x64_sys_mprotect",
            ]),
        },
    ]
}
