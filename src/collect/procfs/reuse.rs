//! A process's own stat line (/proc/PID/stat), reused while nothing it shows can have
//! changed: the same rule as for threads (dirty.rs), one level up.
//!
//! Every field the scan keeps from that line moves only with an event the scheduler
//! probes mark: CPU times while a thread runs (switch in and out), the state at a wakeup
//! or a switch, num_threads at a birth or an exit, the name at a rename or exec. The two
//! exceptions are handled here: the RSS moves without the process running (reclaim,
//! swap, KSM), so it comes from /proc/PID/statm, read every scan for every process
//! (exact, where 6.x kernels give an approximate count in stat: the two differ by tens
//! of pages); and the parent changes when the parent dies, so a process whose parent is
//! no longer listed is read whole.
//!
//! A reused line keeps its priority and nice too: a renice of a sleeping process from
//! outside marks no thread, so the new nice shows when the process next runs, or at its
//! periodic re-read (REFRESH_TICKS scans) at the latest.
//!
//! /proc/PID/stat costs the kernel far more than statm: 2.7-3.4 us against 0.9 us a read
//! of a single-threaded process here, and for a process with 10,000 threads it walks all
//! of them (thread_group_cputime and the fault counters): that one read was a quarter of
//! ttop's CPU with 10,000 sleeping threads, and it is what top pays every second.

use std::os::fd::RawFd;

use super::Dirty;
use super::{ProcScanner, StatFields, parse_pid_stat, pid_path, settled};
use crate::model::sample::ProcScan;
use foldhash::HashMap;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The kept-files key of a process's statm: (pid, STATM). No thread has this id.
const STATM: u32 = u32::MAX;

/// Resident pages, the second field of /proc/PID/statm.
pub(super) fn parse_statm_resident(buf: &[u8]) -> Option<u64> {
    let field = buf.split(|&b| b == b' ').nth(1)?;
    let field = field.strip_suffix(b"\n").unwrap_or(field);
    std::str::from_utf8(field).ok()?.parse().ok()
}

impl StatFields {
    /// The last scan's reading of a process, with its RSS as read now.
    pub(super) fn again(old: &ProcScan, rss: u64) -> Self {
        Self {
            pid: old.pid,
            comm: old.comm.clone(),
            state: old.state,
            ppid: old.ppid,
            majflt: old.majflt.unwrap_or(0),
            utime: old.utime,
            stime: old.stime,
            priority: old.priority.map_or(0, i64::from),
            nice: old.nice.map_or(0, i64::from),
            num_threads: old.num_threads,
            starttime: old.starttime,
            rss,
        }
    }
}

impl ProcScanner {
    /// Whether the last scan's stat line of `old` still holds: no thread of it marked
    /// since (the caller took the process's own mark), every thread asleep or stopped (a
    /// running one's times move with no event), the threads all known, and neither a
    /// full read nor the process's periodic re-read due.
    pub(super) fn stat_unchanged(&self, old: &ProcScan, dirty: Option<&Dirty>) -> bool {
        let Some(d) = dirty else {
            return false;
        };
        !self.read_all
            && !self.due(old.pid)
            && settled(old.state)
            && !old.tasks.is_empty()
            && old.tasks.len() == old.num_threads as usize
            && !d.tids.peek(old.pid)
            && old
                .tasks
                .iter()
                .all(|t| settled(t.state) && !d.tids.peek(t.tid))
    }

    /// The resident pages of `pid` now; None if it is gone.
    pub(super) fn read_rss(&mut self, proc_dir: RawFd, pid: u32) -> Option<u64> {
        let mut path = [0u8; 48];
        let name = pid_path(&mut path, pid, None, b"statm");
        if !self.stats.read((pid, STATM), proc_dir, name, &mut self.buf) {
            return None;
        }
        parse_statm_resident(&self.buf)
    }

    /// Read again the stat lines of reused processes (`out[i]` for i in `reused`) whose
    /// parent is not in `listed`: it died, and they were handed to a reaper. A process
    /// gone meanwhile keeps what it showed.
    pub(super) fn reparented(
        &mut self,
        proc_dir: RawFd,
        out: &mut [ProcScan],
        reused: &[usize],
        listed: &[u32],
        seen: &mut HashMap<u32, ProcScan>,
    ) {
        if reused.is_empty() {
            return;
        }
        // A whole scan lists every process (/proc lists them in ascending order). Under
        // -p the parent is usually not watched: ask the kernel (signal 0 checks that the
        // process exists, and sends nothing).
        let whole = self.only_pids.is_none();
        let sorted;
        let listed = match listed.is_sorted() {
            true => listed,
            false => {
                sorted = {
                    let mut v = listed.to_vec();
                    v.sort_unstable();
                    v
                };
                &sorted
            }
        };
        let alive = |pid: u32| match whole {
            true => listed.binary_search(&pid).is_ok(),
            false => {
                // SAFETY: signal 0 sends nothing.
                let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
                r == 0 || errno() == libc::EPERM
            }
        };
        let mut path = [0u8; 48];
        for &i in reused {
            let p = &mut out[i];
            if p.ppid == 0 || alive(p.ppid) {
                continue;
            }
            let name = pid_path(&mut path, p.pid, None, b"stat");
            if !self.stats.read((p.pid, 0), proc_dir, name, &mut self.buf) {
                continue;
            }
            let Some(st) = parse_pid_stat(&self.buf) else {
                continue;
            };
            if st.starttime != p.starttime {
                continue;
            }
            p.ppid = st.ppid;
            p.comm = st.comm;
            p.state = st.state;
            p.utime = st.utime;
            p.stime = st.stime;
            if let Some(s) = seen.get_mut(&p.pid) {
                s.clone_from(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::procfs::scan::REFRESH_TICKS;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// A forked child asleep in read() on a pipe. Each byte sent (`poke`) makes it
    /// rename itself "ttop-poked" and touch `mb` MB of fresh memory, then answer with a
    /// byte; closing the pipe ends it. Nothing marks it: the marks are the test's.
    struct Child {
        pid: u32,
        go: Option<OwnedFd>,
        done: OwnedFd,
    }

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut p = [0; 2];
        // SAFETY: pipe writes two fds, owned below.
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        // SAFETY: fresh fds nobody else owns.
        unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) }
    }

    /// The child's loop: only async-signal-safe calls (the test harness has threads).
    /// SAFETY: call in a freshly forked child only; it never returns.
    unsafe fn serve(go: i32, done: i32, mb: usize) -> ! {
        let mut c = 0u8;
        // SAFETY: plain syscalls on this child's own fds and memory.
        unsafe {
            while libc::read(go, (&raw mut c).cast(), 1) == 1 {
                libc::prctl(libc::PR_SET_NAME, c"ttop-poked".as_ptr());
                let len = mb << 20;
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p != libc::MAP_FAILED {
                    for i in (0..len).step_by(4096) {
                        *p.cast::<u8>().add(i) = 1;
                    }
                }
                libc::write(done, (&raw const c).cast(), 1);
            }
            libc::_exit(0)
        }
    }

    fn fork_child(mb: usize) -> Child {
        let (go_r, go_w) = pipe();
        let (done_r, done_w) = pipe();
        // SAFETY: the child runs only `serve`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            drop(go_w);
            drop(done_r);
            // SAFETY: a freshly forked child.
            unsafe { serve(go_r.as_raw_fd(), done_w.as_raw_fd(), mb) }
        }
        let c = Child {
            pid: pid as u32,
            go: Some(go_w),
            done: done_r,
        };
        wait_asleep(c.pid);
        c
    }

    impl Child {
        fn poke(&self) {
            let fd = self.go.as_ref().unwrap().as_raw_fd();
            let mut c = 1u8;
            // SAFETY: one byte to and from our own pipes.
            unsafe {
                assert_eq!(libc::write(fd, (&raw const c).cast(), 1), 1);
                assert_eq!(libc::read(self.done.as_raw_fd(), (&raw mut c).cast(), 1), 1);
            }
            wait_asleep(self.pid);
        }

        fn end(&mut self) {
            self.go = None;
            let mut st = 0;
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(self.pid as i32, &mut st, 0) };
        }
    }

    impl Drop for Child {
        fn drop(&mut self) {
            if self.go.is_some() {
                self.end();
            }
        }
    }

    fn wait_asleep(pid: u32) {
        let t0 = std::time::Instant::now();
        loop {
            let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if st.rsplit(')').next().unwrap().trim_start().starts_with('S') {
                return;
            }
            assert!(t0.elapsed().as_secs() < 5, "{pid} never slept");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Scanner ticks set so that `pid`'s periodic re-read is not due for the next
    /// REFRESH_TICKS - 1 scans.
    fn not_due_for_a_while(sc: &mut ProcScanner, pid: u32) {
        while !(u64::from(pid) + sc.ticks + 1).is_multiple_of(REFRESH_TICKS) {
            sc.ticks += 1;
        }
    }

    fn scan_one(sc: &mut ProcScanner, d: &Dirty, pid: u32) -> ProcScan {
        sc.scan_with(Some(d))
            .into_iter()
            .find(|p| p.pid == pid)
            .expect("process scanned")
    }

    /// While no thread of a sleeping process is marked, its stat line is not read again
    /// (a rename behind the marks' back stays unseen), but its RSS is, every scan; a
    /// mark reads the line again.
    #[test]
    fn an_unmarked_process_keeps_its_stat_line_but_not_its_rss() {
        let c = fork_child(64);
        let d = Dirty::owned(1 << 22); // all marked: the first scan reads everything
        let mut sc = ProcScanner::new(Some(vec![c.pid]));
        not_due_for_a_while(&mut sc, c.pid);
        let first = scan_one(&mut sc, &d, c.pid);
        assert!(sc.stats.holds((c.pid, 0)), "stat read whole at first");
        let again = scan_one(&mut sc, &d, c.pid);
        assert_eq!(again, first);
        assert!(
            !sc.stats.holds((c.pid, 0)),
            "an unmarked stat line was read again"
        );
        assert!(sc.stats.holds((c.pid, STATM)), "statm not read");

        c.poke(); // renamed, 64 MB touched: behind the marks' back
        let grown = scan_one(&mut sc, &d, c.pid);
        assert_eq!(
            grown.comm, first.comm,
            "an unmarked stat line was read again"
        );
        let pages = (64 << 20) / 4096;
        assert!(
            grown.rss_pages >= first.rss_pages + pages * 9 / 10,
            "RSS not read again: {} -> {} pages",
            first.rss_pages,
            grown.rss_pages
        );

        d.tids.mark(c.pid);
        assert_eq!(&*scan_one(&mut sc, &d, c.pid).comm, "ttop-poked");
    }

    /// A reused process whose parent died is read again: its new parent shows at once.
    #[test]
    fn an_orphan_shows_its_new_parent() {
        // The parent forks the orphan-to-be (which sleeps in `serve` until `go` closes),
        // sends its pid, and exits when `quit` is written to.
        let (pid_r, pid_w) = pipe();
        let (quit_r, quit_w) = pipe();
        let (go_r, go_w) = pipe();
        let (done_r, done_w) = pipe();
        // SAFETY: the child runs only async-signal-safe calls.
        let parent = unsafe { libc::fork() };
        assert!(parent >= 0);
        if parent == 0 {
            // SAFETY: a freshly forked child; the grandchild only runs `serve`.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(quit_w.as_raw_fd());
                let g = libc::fork();
                if g == 0 {
                    serve(go_r.as_raw_fd(), done_w.as_raw_fd(), 0)
                }
                libc::write(pid_w.as_raw_fd(), (&raw const g).cast(), 4);
                let mut c = 0u8;
                libc::read(quit_r.as_raw_fd(), (&raw mut c).cast(), 1);
                libc::_exit(0)
            }
        }
        drop((pid_w, quit_r, go_r, done_w));
        let parent = parent as u32;
        let mut g: i32 = 0;
        // SAFETY: four bytes from our own pipe.
        assert_eq!(
            unsafe { libc::read(pid_r.as_raw_fd(), (&raw mut g).cast(), 4) },
            4
        );
        let orphan = g as u32;
        wait_asleep(orphan);
        wait_asleep(parent);

        let d = Dirty::owned(1 << 22);
        let mut sc = ProcScanner::new(None);
        not_due_for_a_while(&mut sc, orphan);
        assert_eq!(scan_one(&mut sc, &d, orphan).ppid, parent);
        let mut c = 0u8;
        // SAFETY: one byte to and from our own pipes: the orphan renames itself.
        unsafe {
            libc::write(go_w.as_raw_fd(), (&raw const c).cast(), 1);
            libc::read(done_r.as_raw_fd(), (&raw mut c).cast(), 1);
        }
        wait_asleep(orphan);
        assert_ne!(
            &*scan_one(&mut sc, &d, orphan).comm,
            "ttop-poked",
            "not reused: the test proves nothing"
        );

        // SAFETY: one byte to our own pipe: the parent exits; then reap it.
        unsafe {
            libc::write(quit_w.as_raw_fd(), (&raw const g).cast(), 1);
            libc::waitpid(parent as i32, std::ptr::null_mut(), 0);
        }
        let p = scan_one(&mut sc, &d, orphan);
        assert_ne!(p.ppid, parent, "the dead parent still shows");
        assert_ne!(p.ppid, 0);
        assert_eq!(&*p.comm, "ttop-poked", "read again whole");
        // The orphan reads EOF on `go` and exits; its new parent (init or a subreaper)
        // reaps it.
        drop((go_w, done_r));
    }

    #[test]
    fn statm_resident_is_the_second_field() {
        assert_eq!(
            parse_statm_resident(b"5012 1234 567 89 0 890 0\n"),
            Some(1234)
        );
        assert_eq!(parse_statm_resident(b"0 0 0 0 0 0 0\n"), Some(0));
        assert_eq!(parse_statm_resident(b"12\n"), None);
        assert_eq!(parse_statm_resident(b""), None);
    }
}
