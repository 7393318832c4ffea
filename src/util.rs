//! Small helpers shared across modules.

/// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() uses.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall clock, ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Keep freed heap memory for the next tick instead of handing it back to the kernel.
///
/// Every tick builds a Sample and a Frame of the same size as the last one and frees the
/// previous pair. glibc's defaults return the freed top of the heap (above 128 KB) and
/// give large vectors their own mmap, so each tick faulted in fresh pages again: at
/// 10,000 processes about half of a derive was page faults. With these thresholds the
/// pages stay mapped and are reused; resident memory does not shrink between ticks, and
/// peak RSS barely moves (10,000 threads, `--json`: 18.0 MB without, 18.7 MB with).
/// The benches call this too, so that they measure what ttop runs.
pub fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets glibc allocator parameters; called before other threads
    // start allocating.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}
