//! The kernel's own count of contended kernel locks: the `lock:contention_begin`
//! tracepoint counted on every CPU with perf_event_open (counting mode: no samples, no
//! BPF, the same cost with or without ttop). Item 3 divides it by the workload's units
//! of work to see whether ttop changes how often the workload contends: a probe that
//! runs inside a lock's slow path can hold contenders back, and then ttop would report
//! a contention rate the unobserved system does not have.

use std::fs::File;
use std::io::Read;

use ttop::collect::bpf::perf_event::{
    PERF_TYPE_TRACEPOINT, PerfEventAttr, online_cpus, open_on_cpu,
};

/// One counter per online CPU.
pub struct LockCounter {
    fds: Vec<File>,
}

impl LockCounter {
    /// Err: why the kernel's count is not available (no tracefs, no such tracepoint, no
    /// permission).
    pub fn open() -> Result<LockCounter, String> {
        let root = ttop::collect::bpf::tracefs::root()?;
        let id_path = root.join("events/lock/contention_begin/id");
        let id: u64 = std::fs::read_to_string(&id_path)
            .map_err(|e| format!("{}: {e}", id_path.display()))?
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", id_path.display()))?;
        let attr = PerfEventAttr::new(PERF_TYPE_TRACEPOINT, id);
        let mut fds = Vec::new();
        for cpu in online_cpus() {
            let fd = open_on_cpu(&attr, cpu)
                .map_err(|e| format!("perf_event_open(lock:contention_begin, cpu {cpu}): {e}"))?;
            fds.push(File::from(fd));
        }
        Ok(LockCounter { fds })
    }

    /// Contentions counted on all CPUs since `open`.
    pub fn read(&self) -> u64 {
        let mut sum = 0;
        for mut f in &self.fds {
            let mut b = [0u8; 8];
            if f.read_exact(&mut b).is_ok() {
                sum += u64::from_ne_bytes(b);
            }
        }
        sum
    }
}
