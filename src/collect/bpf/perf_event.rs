//! perf_event_open(2) for the profiler's samplers and the benchmark's kernel counters:
//! the attr struct, the call, and the CPUs to open on.

use std::os::fd::{FromRawFd, OwnedFd};

/// include/uapi/linux/perf_event.h, struct perf_event_attr (PERF_ATTR_SIZE_VER8, 136
/// bytes; `size` tells an older kernel how much of it to read).
#[repr(C)]
#[derive(Default)]
pub struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    /// sample_period, or sample_freq with ATTR_FREQ.
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved2: u16,
    pub aux_sample_size: u32,
    pub reserved3: u32,
    pub sig_data: u64,
    pub config3: u64,
}

pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
/// attr.flags bits: `disabled` (libbpf enables a sampler when it attaches) and `freq`.
pub const ATTR_DISABLED: u64 = 1;
pub const ATTR_FREQ: u64 = 1 << 10;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

impl PerfEventAttr {
    pub fn new(type_: u32, config: u64) -> Self {
        Self {
            type_,
            size: std::mem::size_of::<Self>() as u32,
            config,
            ..Default::default()
        }
    }
}

/// Open `attr` for every task on `cpu` (pid -1), close-on-exec, no group.
pub fn open_on_cpu(attr: &PerfEventAttr, cpu: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: a valid, fully initialised attr of the size it says, alive for the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The CPUs online now (/sys/devices/system/cpu/online: "0-3,6"); empty if unreadable.
pub fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            out.extend(a..=b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn attr_is_the_kernels_ver8_size() {
        assert_eq!(std::mem::size_of::<super::PerfEventAttr>(), 136);
    }
}
