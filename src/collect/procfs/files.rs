//! /proc files kept open from tick to tick and read again with pread(2) at offset 0.
//!
//! A proc file regenerates its text whenever it is read from offset 0 (seq_file resets
//! at position 0), so reading a kept descriptor gives exactly what opening the path
//! again would, for about half the cost: no path walk, no open, no close. Measured on
//! the 2-vCPU VM: 4.0-6.2 µs per /proc/PID/stat with open/read/close, 1.8-2.8 µs with
//! pread on a kept descriptor.
//!
//! A kept /proc/PID/stat names the process (its struct pid), not the number: once the
//! process is gone the read fails with ESRCH and the entry is dropped, so a PID reused
//! by a new process is opened again by path and never read through the old
//! descriptor. Each kept file pins a seq_file buffer (one page) in the kernel, so the
//! number kept is capped ([`MAX_KEPT`], and a quarter of the descriptor limit).

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// At most this many per-process/per-thread files stay open: 5.2 KB of kernel memory
/// each once read (measured: a page of seq_file buffer and the open file), 10.6 MB at
/// worst. Beyond it files are opened by path each tick.
pub const MAX_KEPT: usize = 2048;

/// openat(dir, name) read-only; None if it failed (the process may have exited).
pub fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: a valid NUL-terminated path; the fd returned is owned by the OwnedFd.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: fd is a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Read a whole proc file from offset 0 into `buf` (cleared first): raw preads, no
/// allocation once the buffer has grown to fit. Like top, a read that does not fill the
/// space offered is the end (proc files produce their text in one go). False on an
/// error (ESRCH: a process that is gone).
pub fn read_whole(fd: RawFd, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let spare = buf.capacity() - buf.len();
        // SAFETY: reads into the vector's spare capacity, then extends its length by
        // exactly what the kernel wrote.
        let n = unsafe {
            libc::pread(
                fd,
                buf.as_mut_ptr().add(buf.len()).cast(),
                spare,
                buf.len() as libc::off_t,
            )
        };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        let n = n as usize;
        // SAFETY: the kernel initialised these n bytes.
        unsafe { buf.set_len(buf.len() + n) };
        if n < spare {
            return true;
        }
        buf.reserve(buf.capacity());
    }
}

/// Open `name` relative to `dir`, read it whole into `buf`, close it.
pub fn read_at(dir: RawFd, name: &CStr, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    open_at(dir, name, 0).is_some_and(|fd| read_whole(fd.as_raw_fd(), buf))
}

/// The soft limit on open descriptors (RLIMIT_NOFILE), 1024 if it cannot be read.
fn fd_limit() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        usize::try_from(r.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    }
}

/// Per-process and per-thread files kept open across ticks, keyed by (pid, tid), tid 0
/// for the process's own file. One scan is one tick: files not read during it belong to
/// processes or threads that are gone, and are closed by [`KeptFiles::end_tick`].
pub struct KeptFiles {
    files: HashMap<(u32, u32), (OwnedFd, u64), foldhash::fast::RandomState>,
    tick: u64,
    cap: usize,
}

impl Default for KeptFiles {
    fn default() -> Self {
        Self::with_cap(MAX_KEPT.min(fd_limit() / 4))
    }
}

impl KeptFiles {
    /// At most `cap` files kept (0: none, every read opens by path).
    pub fn with_cap(cap: usize) -> Self {
        Self {
            files: HashMap::default(),
            tick: 1,
            cap,
        }
    }

    /// How many files are open now.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// How many files may be kept.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Whether the file of (pid, tid) is kept open.
    pub fn holds(&self, key: (u32, u32)) -> bool {
        self.files.contains_key(&key)
    }

    /// Read the file of (pid, tid) into `buf`: through the kept descriptor if there is
    /// one and it still reads, otherwise by opening `path` relative to `dir` (and
    /// keeping it, while under the cap).
    pub fn read(&mut self, key: (u32, u32), dir: RawFd, path: &CStr, buf: &mut Vec<u8>) -> bool {
        if let Some((fd, seen)) = self.files.get_mut(&key) {
            // A stat file is never empty: empty means gone, as an error does.
            if read_whole(fd.as_raw_fd(), buf) && !buf.is_empty() {
                *seen = self.tick;
                return true;
            }
            // Gone (ESRCH): that number may already name someone else; open it again.
            self.files.remove(&key);
        }
        let Some(fd) = open_at(dir, path, 0) else {
            buf.clear();
            return false;
        };
        if !read_whole(fd.as_raw_fd(), buf) || buf.is_empty() {
            return false;
        }
        if self.files.len() < self.cap {
            self.files.insert(key, (fd, self.tick));
        }
        true
    }

    /// Close the files nobody read during this tick: their processes or threads are gone
    /// (or no longer scanned).
    pub fn end_tick(&mut self) {
        let tick = self.tick;
        self.files.retain(|_, (_, seen)| *seen == tick);
        self.tick += 1;
    }
}

/// A system-wide proc file (/proc/stat, /proc/loadavg...) kept open and read again each
/// tick; reopened if a read ever fails.
pub struct SysFile {
    path: &'static CStr,
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
}

impl SysFile {
    pub const fn new(path: &'static CStr) -> Self {
        Self {
            path,
            fd: None,
            buf: Vec::new(),
        }
    }

    /// The file's text now; empty if it cannot be read (or is not UTF-8).
    pub fn read(&mut self) -> &str {
        let ok = match &self.fd {
            Some(fd) => read_whole(fd.as_raw_fd(), &mut self.buf),
            None => false,
        };
        if !ok {
            self.fd = open_at(libc::AT_FDCWD, self.path, 0);
            let read = self
                .fd
                .as_ref()
                .is_some_and(|fd| read_whole(fd.as_raw_fd(), &mut self.buf));
            if !read {
                self.buf.clear();
            }
        }
        std::str::from_utf8(&self.buf).unwrap_or_default()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// utime + stime of /proc/self/task/TID/stat (fields 14 and 15), read through `files`.
    fn cpu_ticks(files: &mut KeptFiles, tid: u32, buf: &mut Vec<u8>) -> u64 {
        let path = std::ffi::CString::new(format!("/proc/self/task/{tid}/stat")).unwrap();
        assert!(files.read((0, tid), libc::AT_FDCWD, &path, buf));
        let text = std::str::from_utf8(buf).unwrap();
        let after = &text[text.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = after
            .split(' ')
            .skip(11)
            .take(2)
            .map(|v| v.parse().unwrap())
            .collect();
        f[0] + f[1]
    }

    /// Burn `ms` of this thread's own CPU time (not wall time: a loaded machine may give
    /// it little of a wall-clock window).
    pub(crate) fn spin_cpu_ms(ms: u64) {
        let cpu = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes one timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let end = cpu() + ms * 1_000_000;
        let mut x = 0u64;
        while cpu() < end {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
    }

    /// Wait until /proc no longer lists thread `tid` of this process: a pthread join
    /// returns when the thread clears its tid, a little before the kernel releases it.
    pub(crate) fn wait_thread_gone(tid: u32) {
        let dir = format!("/proc/self/task/{tid}");
        let t0 = std::time::Instant::now();
        while std::path::Path::new(&dir).exists() {
            assert!(t0.elapsed().as_secs() < 5, "thread {tid} never went away");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// A kept descriptor reads fresh text: the thread's CPU time moves after it spins.
    #[test]
    fn a_kept_file_reads_fresh_text() {
        let tid = unsafe { libc::gettid() } as u32;
        let mut files = KeptFiles::with_cap(8);
        let mut buf = Vec::new();
        let before = cpu_ticks(&mut files, tid, &mut buf);
        assert_eq!(files.len(), 1);
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(150) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        files.end_tick();
        let after = cpu_ticks(&mut files, tid, &mut buf);
        assert_eq!(files.len(), 1, "the same descriptor, not a second one");
        assert!(
            after > before,
            "utime {before} -> {after}: the kept file was stale"
        );
    }

    /// A thread that exits: its kept file fails, is dropped, and the read reports it gone;
    /// files not read during a tick are closed at its end; the cap is kept.
    #[test]
    fn gone_threads_and_unread_files_are_dropped() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let me = unsafe { libc::gettid() } as u32;
        let mut files = KeptFiles::with_cap(1);
        let mut buf = Vec::new();
        cpu_ticks(&mut files, tid, &mut buf);
        cpu_ticks(&mut files, me, &mut buf);
        assert_eq!(files.len(), 1, "capped at one");
        done_tx.send(()).unwrap();
        h.join().unwrap();
        wait_thread_gone(tid);
        let path = std::ffi::CString::new(format!("/proc/self/task/{tid}/stat")).unwrap();
        assert!(!files.read((0, tid), libc::AT_FDCWD, &path, &mut buf));
        assert!(buf.is_empty());
        assert!(files.is_empty(), "the dead thread's descriptor was closed");
        cpu_ticks(&mut files, me, &mut buf);
        files.end_tick();
        assert_eq!(files.len(), 1);
        files.end_tick();
        assert!(files.is_empty(), "a file unread for a tick is closed");
    }

    #[test]
    fn a_system_file_reads_again() {
        let mut f = SysFile::new(c"/proc/uptime");
        let a: f64 = f.read().split(' ').next().unwrap().parse().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b: f64 = f.read().split(' ').next().unwrap().parse().unwrap();
        assert!(b > a, "uptime {a} -> {b}");
        assert!(SysFile::new(c"/proc/no-such-file").read().is_empty());
    }
}
