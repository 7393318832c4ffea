//! Quitting without waiting for the kernel: closing the last reference to a syscall
//! tracepoint's perf event waits for RCU grace periods, one after another under the
//! kernel's event_mutex (~0.6 s for ttop's ten futex links on 6.18), and the process is
//! not gone (the shell prompt does not come back) until its files are closed.
//!
//! So on the way out a child process takes copies of the eBPF and perf files (anonymous
//! inodes: every other file it inherits, the terminal, pipes, sockets, /proc files, it
//! closes at once, so that nobody waits on it), waits for ttop to exit, and exits itself:
//! the last references, and the grace periods, are its. ttop's own closes are then not
//! the last ones and return at once.

/// Fork the child described above. Call it once, when quitting, before the collectors
/// are dropped. Any failure only means quitting waits as before.
pub fn detach_in_background() {
    if crate::collect::overrides::overrides().detach_inline {
        return; // for comparisons: quit the old way
    }
    let mut pipe = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [rd, wr] = pipe;
    // SAFETY: the child only calls async-signal-safe functions (fstat, close, read,
    // _exit) before it exits: safe in a copy of a multi-threaded process.
    match unsafe { libc::fork() } {
        0 => unsafe {
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 65536) as i32;
            for fd in 0..max {
                if fd == rd {
                    continue;
                }
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT != 0 {
                    libc::close(fd);
                }
            }
            // Returns (EOF) when ttop, the only writer left, has exited.
            let mut b = 0u8;
            while libc::read(rd, (&mut b as *mut u8).cast(), 1) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            libc::_exit(0);
        },
        -1 => unsafe {
            libc::close(rd);
            libc::close(wr);
        },
        _ => {
            // The write end stays open until ttop exits; the read end is the child's.
            // SAFETY: rd is ours and not used again.
            unsafe { libc::close(rd) };
        }
    }
}
