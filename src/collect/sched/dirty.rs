//! Which threads the /proc scan must read again: bpf/sched.bpf.c's `dirty_tids`, one
//! byte per thread id, set by every scheduler event that can change what
//! /proc/PID/task/TID/stat shows (switch in or out, wakeup, birth, exit, rename); and
//! which processes' task/ directories to list again (`dirty_tgids`: a thread was born
//! or exited).
//!
//! A thread asleep since the last scan has the same state, times and name as the scan
//! read then, so reading its file again costs the kernel a `do_task_stat` for nothing:
//! with 10,000 sleeping threads that was nearly all of ttop's CPU. The scan swaps a
//! thread's byte back to 0 just before it decides; an event after that marks it again
//! for the next scan.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU8, Ordering};

/// Both maps: threads to read again, and processes whose task/ to list again.
pub struct Dirty {
    pub tids: DirtyTids,
    /// Marked when a thread of the process is born or exits.
    pub tgids: DirtyTids,
    /// Processes started so far (sched.bpf.c `procs_born`), read just before this scan:
    /// while it stands still the scan reuses its last listing of /proc.
    pub births: u64,
    /// Read every thread and list every directory this scan: the kernel skipped a run of
    /// a marking program since the last one, so a mark may be missing.
    pub read_all: bool,
}

impl Dirty {
    /// Everything marked (tests).
    pub fn owned(ids: usize) -> Self {
        Self {
            tids: DirtyTids::owned(ids),
            tgids: DirtyTids::owned(ids),
            births: 0,
            read_all: false,
        }
    }
}

enum Bytes {
    /// The BPF array map, mmapped (BPF_F_MMAPABLE): `len` bytes at `ptr`.
    Mapped { ptr: *mut libc::c_void, len: usize },
    /// Owned bytes, for tests.
    Owned(Box<[AtomicU8]>),
}

pub struct DirtyTids {
    bytes: Bytes,
    /// Thread ids covered (one byte each); a larger id is always read.
    tids: usize,
}

// SAFETY: the mapping is only accessed through atomic byte operations.
unsafe impl Send for DirtyTids {}

impl DirtyTids {
    /// Map the `dirty_tids` array (`entries` values of 8 bytes, each 8 tids).
    pub fn map(fd: BorrowedFd<'_>, entries: u32) -> Option<Self> {
        let tids = entries as usize * 8;
        if tids == 0 {
            return None;
        }
        // SAFETY: a shared mapping of the map's own fd, of at most its size; checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                tids,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then_some(Self {
            bytes: Bytes::Mapped { ptr, len: tids },
            tids,
        })
    }

    /// Every thread id below `tids` marked, as if each had just had an event (tests).
    pub fn owned(tids: usize) -> Self {
        Self {
            bytes: Bytes::Owned((0..tids).map(|_| AtomicU8::new(1)).collect()),
            tids,
        }
    }

    fn byte(&self, tid: u32) -> Option<&AtomicU8> {
        let i = tid as usize;
        if i >= self.tids {
            return None;
        }
        match &self.bytes {
            // SAFETY: i < len, the mapping lives as long as self, and u8 and AtomicU8
            // have the same layout; the kernel side only stores whole bytes.
            Bytes::Mapped { ptr, .. } => Some(unsafe { &*(ptr.cast::<AtomicU8>().add(i)) }),
            Bytes::Owned(b) => b.get(i),
        }
    }

    /// Whether `tid` may have changed since the last call for it (always true for an
    /// id beyond the map); clears its mark.
    pub fn take(&self, tid: u32) -> bool {
        match self.byte(tid) {
            None => true,
            // Load first: most threads are unmarked, and a load does not dirty the line
            // the BPF programs write to.
            Some(b) => b.load(Ordering::Relaxed) != 0 && b.swap(0, Ordering::SeqCst) != 0,
        }
    }

    /// Whether `tid` is marked, leaving the mark in place: for a decision made from the
    /// marks of several threads before any of them is read (always true beyond the map).
    pub fn peek(&self, tid: u32) -> bool {
        self.byte(tid)
            .is_none_or(|b| b.load(Ordering::Relaxed) != 0)
    }

    /// Mark `tid` as the BPF programs do (tests).
    #[cfg(test)]
    pub fn mark(&self, tid: u32) {
        if let Some(b) = self.byte(tid) {
            b.store(1, Ordering::SeqCst);
        }
    }
}

/// Entries of 8 thread ids the map needs for every id up to kernel.pid_max (4,194,304,
/// the kernel's limit, when it cannot be read; a larger id later is simply always read).
pub fn entries_for_pid_max() -> u32 {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(4 << 20)
        .clamp(1, 4 << 20);
    max.div_ceil(8)
}

/// Whether the kernel can mmap a BPF array (BPF_F_MMAPABLE, Linux 5.5): try a tiny one.
pub fn kernel_can_map() -> bool {
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        map_flags: libbpf_rs::libbpf_sys::BPF_F_MMAPABLE,
        ..Default::default()
    };
    // SAFETY: a plain map creation; the name is a C string; the fd is closed below.
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_map_create(
            libbpf_rs::libbpf_sys::BPF_MAP_TYPE_ARRAY,
            c"ttop_probe".as_ptr(),
            4,
            8,
            1,
            &opts,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    true
}

impl Drop for DirtyTids {
    fn drop(&mut self) {
        if let Bytes::Mapped { ptr, len } = self.bytes {
            // SAFETY: unmapping exactly what map() mapped.
            unsafe { libc::munmap(ptr, len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_clears_and_reports_marks() {
        let d = DirtyTids::owned(16);
        assert!(d.take(3), "marked at start");
        assert!(!d.take(3), "cleared by the first take");
        d.mark(3);
        assert!(d.take(3));
        assert!(d.take(16), "beyond the map: always read");
        assert!(d.take(u32::MAX));
    }
}
