//! Kernel-side cost of ttop's eBPF programs (the statistics themselves are ttop's own:
//! collect/bpf/stats.rs), and waiting for a ttop to hold its programs.

use std::time::{Duration, Instant};

pub use ttop::collect::bpf::stats::{ProgStat, diff, enable_stats, prog_ids_of, snapshot};

/// Wait until `pid` holds BPF programs and their number stops changing.
pub fn wait_progs(pid: u32, limit: Duration) -> Vec<u32> {
    let t0 = Instant::now();
    let mut last = Vec::new();
    while t0.elapsed() < limit {
        let ids = prog_ids_of(pid);
        if !ids.is_empty() && ids == last {
            return ids;
        }
        last = ids;
        std::thread::sleep(Duration::from_millis(300));
    }
    last
}
