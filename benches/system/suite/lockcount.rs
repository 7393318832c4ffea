//! The kernel's own count of contended kernel locks: the `lock:contention_begin`
//! tracepoint counted on every CPU with perf_event_open (counting mode: no samples, no
//! BPF, the same cost with or without ttop). Item 3 divides it by the workload's units
//! of work to see whether ttop changes how often the workload contends: a probe that
//! runs inside a lock's slow path can hold contenders back, and then ttop would report
//! a contention rate the unobserved system does not have.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// The first 64 bytes of `struct perf_event_attr` (PERF_ATTR_SIZE_VER0), enough for a
/// counter: type, size, config (the tracepoint id) and the flag bits, all 0 here (the
/// counter starts enabled and counts kernel and user mode).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// One counter per online CPU.
pub struct LockCounter {
    fds: Vec<File>,
}

impl LockCounter {
    /// Err: why the kernel's count is not available (no tracefs, no such tracepoint, no
    /// permission).
    pub fn open() -> Result<LockCounter, String> {
        let root = ttop::collect::tracefs::root()?;
        let id_path = root.join("events/lock/contention_begin/id");
        let id: u64 = std::fs::read_to_string(&id_path)
            .map_err(|e| format!("{}: {e}", id_path.display()))?
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", id_path.display()))?;
        let attr = PerfEventAttr {
            type_: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            ..Default::default()
        };
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let online = online_cpus().unwrap_or_else(|| (0..ncpus as i32).collect());
        let mut fds = Vec::new();
        for cpu in online {
            // SAFETY: attr outlives the call; pid -1 with a CPU counts every task there.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr as *const PerfEventAttr,
                    -1i32,
                    cpu,
                    -1i32,
                    PERF_FLAG_FD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(format!(
                    "perf_event_open(lock:contention_begin, cpu {cpu}): {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: a descriptor the kernel just returned, owned from here on.
            fds.push(File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
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

/// /sys/devices/system/cpu/online ("0-1,4"), as CPU numbers.
fn online_cpus() -> Option<Vec<i32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut v = Vec::new();
    for part in s.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<i32>().ok()?..=b.parse::<i32>().ok()?),
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}
