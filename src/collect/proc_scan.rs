//! The "top view": what a /proc scan sees, taken once per tick exactly as top does it
//! (/proc/PID/stat and /proc/PID/task/TID/stat).
//!
//! It must be cheap and harmless to the processes it looks at: it never reads
//! /proc/PID/environ, maps or smaps (they take the target's mmap_lock: seed 002),
//! it reads cmdline once per new process, and every file of a process is opened
//! relative to the process directory it opened once (procfs keeps a dirfd).

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::model::sample::{CpuTimes, ProcScan, ProcStat, TaskScan};

#[derive(Default)]
pub struct ProcScanner {
    /// cmdline by (pid, starttime), read once per process lifetime.
    cmdlines: HashMap<(u32, u64), Arc<str>>,
    /// When set, only these processes are scanned (ttop -p).
    pub only_pids: Option<Vec<u32>>,
    /// Reused every tick: file contents, directory entries, ids found.
    buf: Vec<u8>,
    dents: Vec<u8>,
    pids: Vec<u32>,
    tids: Vec<u32>,
}

/// The fields of /proc/PID/stat (or task/TID/stat) the scan keeps. Field numbers as in
/// proc(5); everything after the comm is counted from the LAST ')' (a comm may hold
/// spaces and parentheses).
#[derive(Debug, Clone, PartialEq)]
struct StatFields {
    pid: u32,
    comm: Arc<str>,
    state: char,
    ppid: u32,
    utime: u64,
    stime: u64,
    num_threads: u32,
    starttime: u64,
    rss: u64,
}

/// Parse one stat line by hand: no allocation but the comm. Same results as the procfs
/// crate's parser (which the scan used before): the comm is the bytes between the first
/// '(' and the last ')', lossily decoded; None where that parser failed.
fn parse_pid_stat(buf: &[u8]) -> Option<StatFields> {
    parse_stat_upto(buf, 21)
}

/// `parse_pid_stat` reading the fields after the comm only up to `last` (a thread needs
/// nothing past stime, 12); the fields not read are 0.
fn parse_stat_upto(buf: &[u8], last: usize) -> Option<StatFields> {
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    if close < open || open == 0 {
        return None;
    }
    let pid: i32 = std::str::from_utf8(&buf[..open - 1]).ok()?.parse().ok()?;
    // After ") ": state is field 0 here, ppid 1, utime 11, stime 12, num_threads 17,
    // starttime 19, rss 21 (proc(5) fields 3, 4, 14, 15, 20, 22, 24).
    let mut rest = buf.get(close + 2..)?.split(|&b| b == b' ');
    let state = *rest.next()?.first()? as char;
    let mut f = [0i64; 22];
    let mut u = [0u64; 22];
    for i in 1..=last.min(21) {
        let field = rest.next()?;
        match i {
            1 | 17 => f[i] = parse_int(field)?,
            11 | 12 | 19 | 21 => u[i] = parse_uint(field)?,
            _ => {}
        }
    }
    Some(StatFields {
        pid: pid as u32,
        comm: String::from_utf8_lossy(&buf[open + 1..close]).into(),
        state,
        ppid: f[1] as u32,
        utime: u[11],
        stime: u[12],
        num_threads: f[17].max(0) as u32,
        starttime: u[19],
        rss: u[21],
    })
}

fn parse_uint(s: &[u8]) -> Option<u64> {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit()
            .then_some(())
            .and_then(|_| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
    })
}

fn parse_int(s: &[u8]) -> Option<i64> {
    match s.strip_prefix(b"-") {
        Some(d) => parse_uint(d)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_uint(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// openat(dir, name) read-only; None if it failed (the process may have exited).
fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: a valid NUL-terminated path; the fd returned is owned by the OwnedFd.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: fd is a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Read a whole /proc file relative to `dir` into `buf` (cleared first): raw reads, no
/// allocation once the buffer has grown to fit. Like top, a read that does not fill the
/// space offered is the end (proc files produce their text in one go).
fn read_at(dir: RawFd, name: &CStr, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    let Some(fd) = open_at(dir, name, 0) else {
        return false;
    };
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let spare = buf.capacity() - buf.len();
        // SAFETY: reads into the vector's spare capacity, then extends its length by
        // exactly what the kernel wrote.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().add(buf.len()).cast(),
                spare,
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

/// The numeric entries of a directory (PIDs in /proc, TIDs in task/), in the order
/// the kernel lists them, appended to `out`; `dents` is the reused getdents buffer.
fn numeric_entries(dir: &OwnedFd, dents: &mut Vec<u8>, out: &mut Vec<u32>) {
    if dents.len() < 65536 {
        dents.resize(65536, 0);
    }
    loop {
        // SAFETY: getdents64 writes at most dents.len() bytes into the buffer.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                dents.as_mut_ptr(),
                dents.len(),
            )
        };
        if n <= 0 {
            return;
        }
        let mut off = 0usize;
        while off + 19 < n as usize {
            // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
            let reclen = u16::from_ne_bytes([dents[off + 16], dents[off + 17]]) as usize;
            if reclen == 0 {
                return;
            }
            let name = &dents[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(id) = parse_uint(name).and_then(|v| u32::try_from(v).ok()) {
                out.push(id);
            }
            off += reclen;
        }
    }
}

/// "N" or "N/stat" as a C string, in a stack buffer.
fn id_path<'a>(id: u32, suffix: &[u8], out: &'a mut [u8; 32]) -> &'a CStr {
    let mut digits = [0u8; 10];
    let mut n = id;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let d = &digits[i..];
    out[..d.len()].copy_from_slice(d);
    out[d.len()..d.len() + suffix.len()].copy_from_slice(suffix);
    out[d.len() + suffix.len()] = 0;
    CStr::from_bytes_until_nul(&out[..]).expect("NUL written above")
}

/// "PID/NAME" or "PID/task/TID/NAME" as a C string, in a stack buffer.
fn pid_path<'a>(out: &'a mut [u8; 48], pid: u32, tid: Option<u32>, name: &[u8]) -> &'a CStr {
    let mut n = 0;
    let mut put = |b: &[u8], out: &mut [u8; 48]| {
        out[n..n + b.len()].copy_from_slice(b);
        n += b.len();
    };
    let mut id = [0u8; 32];
    put(id_path(pid, b"/", &mut id).to_bytes(), out);
    if let Some(tid) = tid {
        put(b"task/", out);
        put(id_path(tid, b"/", &mut id).to_bytes(), out);
    }
    put(name, out);
    out[n] = 0;
    CStr::from_bytes_until_nul(&out[..]).expect("NUL written above")
}

/// cmdline as the procfs crate returned it, joined by spaces: the NUL-separated
/// arguments, empty ones dropped; empty when not UTF-8.
fn parse_cmdline(buf: &[u8]) -> String {
    std::str::from_utf8(buf)
        .map(|t| {
            t.split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Parse /proc/stat: per-CPU times and the scheduler counters.
pub fn parse_stat(text: &str) -> ProcStat {
    let mut st = ProcStat::default();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        let num = |s: Option<&str>| s.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if let Some(n) = key.strip_prefix("cpu") {
            let Ok(cpu) = n.parse::<u32>() else { continue }; // skip the aggregate "cpu" line
            let v: Vec<u64> = it.map(|x| x.parse().unwrap_or(0)).collect();
            let g = |i: usize| v.get(i).copied().unwrap_or(0);
            st.cpus.push(CpuTimes {
                cpu,
                user: g(0),
                nice: g(1),
                system: g(2),
                idle: g(3),
                iowait: g(4),
                irq: g(5),
                softirq: g(6),
                steal: g(7),
            });
        } else {
            match key {
                "ctxt" => st.ctxt = num(it.next()),
                "processes" => st.forks = num(it.next()),
                "procs_running" => st.procs_running = num(it.next()) as u32,
                "procs_blocked" => st.procs_blocked = num(it.next()) as u32,
                _ => {}
            }
        }
    }
    st
}

/// Read /proc/stat, /proc/loadavg and /proc/uptime.
pub fn read_system() -> ProcStat {
    let mut st = std::fs::read_to_string("/proc/stat")
        .map(|t| parse_stat(&t))
        .unwrap_or_default();
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        for (i, v) in l.split_ascii_whitespace().take(3).enumerate() {
            st.loadavg[i] = v.parse().unwrap_or(0.0);
        }
    }
    if let Ok(u) = std::fs::read_to_string("/proc/uptime") {
        st.uptime_s = u
            .split_ascii_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
    }
    st
}

/// /proc/stat procs_running alone, cheaply (for tests and reference sampling).
pub fn procs_running() -> Option<u32> {
    let t = std::fs::read_to_string("/proc/stat").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("procs_running ")?.trim().parse().ok())
}

impl ProcScanner {
    pub fn new(only_pids: Option<Vec<u32>>) -> Self {
        Self {
            only_pids,
            ..Self::default()
        }
    }

    /// Scan every process and thread once: /proc opened once, each process directory
    /// once, and its files and threads read relative to it into one reused buffer.
    pub fn scan(&mut self) -> Vec<ProcScan> {
        let Some(proc_fd) = open_at(libc::AT_FDCWD, c"/proc", libc::O_DIRECTORY) else {
            return Vec::new();
        };
        let mut pids = std::mem::take(&mut self.pids);
        pids.clear();
        match &self.only_pids {
            Some(only) => pids.extend_from_slice(only),
            None => numeric_entries(&proc_fd, &mut self.dents, &mut pids),
        }
        let mut out = Vec::with_capacity(pids.len());
        let mut live = HashMap::with_capacity(pids.len());
        let mut path = [0u8; 48];
        let proc_dir = proc_fd.as_raw_fd();
        for &pid in &pids {
            // A process can vanish at any point of the scan; whatever failed is skipped.
            // Files are opened by path from /proc ("PID/stat"), not through an opened
            // PID directory: that was one open and close more per process, per tick.
            if !read_at(
                proc_dir,
                pid_path(&mut path, pid, None, b"stat"),
                &mut self.buf,
            ) {
                continue;
            }
            let Some(st) = parse_pid_stat(&self.buf) else {
                continue;
            };
            let key = (st.pid, st.starttime);
            let cmdline = match self.cmdlines.remove(&key) {
                Some(c) => c,
                None if read_at(
                    proc_dir,
                    pid_path(&mut path, pid, None, b"cmdline"),
                    &mut self.buf,
                ) =>
                {
                    parse_cmdline(&self.buf).into()
                }
                None => Arc::default(),
            };
            live.insert(key, cmdline.clone());
            // A single-threaded process's one thread is the process itself: read its
            // task/PID/stat directly instead of listing task/ (three syscalls fewer per
            // process, most processes on most machines). If that fails (the process
            // just exec'd or exited), list task/ as for any other process.
            let tasks = match st.num_threads {
                1 => self.read_task(proc_dir, pid).map(|t| vec![t]),
                _ => None,
            }
            .unwrap_or_else(|| self.scan_tasks(proc_dir, pid));
            out.push(ProcScan {
                pid: st.pid,
                ppid: st.ppid,
                comm: st.comm,
                cmdline,
                state: st.state,
                num_threads: st.num_threads,
                utime: st.utime,
                stime: st.stime,
                rss_pages: st.rss,
                starttime: st.starttime,
                tasks,
            });
        }
        self.pids = pids;
        // Only processes still alive keep their cached cmdline.
        self.cmdlines = live;
        out
    }

    /// The one thread of a single-threaded process: /proc/PID/task/PID/stat.
    fn read_task(&mut self, proc_dir: RawFd, pid: u32) -> Option<TaskScan> {
        let mut path = [0u8; 48];
        if !read_at(
            proc_dir,
            pid_path(&mut path, pid, Some(pid), b"stat"),
            &mut self.buf,
        ) {
            return None;
        }
        let ts = parse_stat_upto(&self.buf, 12)?;
        (ts.pid == pid).then_some(TaskScan {
            tid: ts.pid,
            comm: ts.comm,
            state: ts.state,
            utime: ts.utime,
            stime: ts.stime,
        })
    }

    /// Every thread of one process: task/TID/stat, read relative to the task directory.
    fn scan_tasks(&mut self, proc_dir: RawFd, pid: u32) -> Vec<TaskScan> {
        let mut path = [0u8; 48];
        let Some(task_dir) = open_at(
            proc_dir,
            pid_path(&mut path, pid, None, b"task"),
            libc::O_DIRECTORY,
        ) else {
            return Vec::new();
        };
        let mut tids = std::mem::take(&mut self.tids);
        tids.clear();
        numeric_entries(&task_dir, &mut self.dents, &mut tids);
        let mut tasks = Vec::with_capacity(tids.len());
        let mut tid_path = [0u8; 32];
        for &tid in &tids {
            if !read_at(
                task_dir.as_raw_fd(),
                id_path(tid, b"/stat", &mut tid_path),
                &mut self.buf,
            ) {
                continue;
            }
            if let Some(ts) = parse_stat_upto(&self.buf, 12) {
                tasks.push(TaskScan {
                    tid: ts.pid,
                    comm: ts.comm,
                    state: ts.state,
                    utime: ts.utime,
                    stime: ts.stime,
                });
            }
        }
        self.tids = tids;
        tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let t = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 1 2 50 1 3 4 5 0 0\ncpu1 6 0 3 50 0 0 0 0 0 0\n\
                 intr 1 2 3\nctxt 123456\nbtime 1\nprocesses 789\nprocs_running 3\nprocs_blocked 1\n";
        let s = parse_stat(t);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            s.cpus[0],
            CpuTimes {
                cpu: 0,
                user: 4,
                nice: 1,
                system: 2,
                idle: 50,
                iowait: 1,
                irq: 3,
                softirq: 4,
                steal: 5
            }
        );
        assert_eq!(s.ctxt, 123456);
        assert_eq!(s.forks, 789);
        assert_eq!(s.procs_running, 3);
        assert_eq!(s.procs_blocked, 1);
    }

    /// What the procfs crate made of a stat line (the scan's parser before).
    fn with_procfs(line: &[u8]) -> Option<StatFields> {
        use procfs::FromRead;
        let st = procfs::process::Stat::from_read(line).ok()?;
        Some(StatFields {
            pid: st.pid as u32,
            comm: st.comm.into(),
            state: st.state,
            ppid: st.ppid as u32,
            utime: st.utime,
            stime: st.stime,
            num_threads: st.num_threads.max(0) as u32,
            starttime: st.starttime,
            rss: st.rss,
        })
    }

    #[test]
    fn stat_parser_agrees_with_procfs() {
        let tail = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 \
                    31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49\n";
        let lines: Vec<String> = [
            "123 (bash) S ",
            "7 (a b) R ",
            "8 (x) (y)) D ",
            "9 ((()) Z ",
            "10 () I ",
        ]
        .iter()
        .map(|h| format!("{h}{tail}"))
        .collect();
        for l in &lines {
            let ours = parse_pid_stat(l.as_bytes());
            assert!(ours.is_some(), "{l}");
            assert_eq!(ours, with_procfs(l.as_bytes()), "{l}");
        }
        let f = parse_pid_stat(lines[2].as_bytes()).unwrap();
        assert_eq!((&*f.comm, f.state, f.ppid), ("x) (y)", 'D', 1));
        assert_eq!(
            (f.utime, f.stime, f.num_threads, f.starttime, f.rss),
            (11, 12, 17, 19, 21)
        );
        // Invalid UTF-8 in a comm is replaced, as procfs did.
        let mut raw = b"11 (\xffz) S ".to_vec();
        raw.extend_from_slice(tail.as_bytes());
        assert_eq!(parse_pid_stat(&raw), with_procfs(&raw));
        // Real files of quiet processes: ours and procfs's read of the same bytes.
        for p in ["/proc/self/stat", "/proc/1/stat", "/proc/self/task/1/stat"] {
            if let Ok(b) = std::fs::read(p) {
                assert_eq!(parse_pid_stat(&b), with_procfs(&b), "{p}");
            }
        }
        assert_eq!(parse_pid_stat(b"12 (x S 1 2"), None);
        assert_eq!(parse_pid_stat(b"12 (x) S 1 2 3"), None);
        let t = parse_stat_upto(lines[1].as_bytes(), 12).unwrap();
        assert_eq!(
            (t.pid, &*t.comm, t.state, t.utime, t.stime),
            (7, "a b", 'R', 11, 12)
        );
    }

    #[test]
    fn cmdline_as_procfs_joined_it() {
        assert_eq!(parse_cmdline(b"/bin/sleep\x0010\x00"), "/bin/sleep 10");
        assert_eq!(parse_cmdline(b"a\x00\x00b c\x00"), "a b c");
        assert_eq!(parse_cmdline(b""), "");
        assert_eq!(parse_cmdline(b"bad\xff\x00"), "");
    }

    #[test]
    fn scan_finds_this_process_and_its_threads() {
        let me = std::process::id();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let mut sc = ProcScanner::new(None);
        let all = sc.scan();
        let p = all.iter().find(|p| p.pid == me).expect("own process");
        let cmd = procfs::process::Process::myself()
            .unwrap()
            .cmdline()
            .unwrap()
            .join(" ");
        assert_eq!(*p.cmdline, *cmd);
        let tids: Vec<u32> = procfs::process::Process::myself()
            .unwrap()
            .tasks()
            .unwrap()
            .filter_map(Result::ok)
            .map(|t| t.tid as u32)
            .collect();
        let ours: Vec<u32> = p.tasks.iter().map(|t| t.tid).collect();
        assert_eq!(ours, tids);
        assert!(p.num_threads >= 2);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        assert!(p.tasks.iter().any(|t| t.tid == tid && t.state == 'R'));
        assert!(all.iter().any(|p| p.pid == 1));
        // A second scan reuses the cached cmdline; -p scans only what it names.
        let again = ProcScanner::new(Some(vec![me, u32::MAX - 1])).scan();
        assert_eq!(again.len(), 1);
        assert_eq!(*again[0].cmdline, *cmd);
        let _ = tx.send(());
        t.join().unwrap();
    }

    #[test]
    fn single_threaded_process_has_its_one_task() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        // Wait until the child has exec'd sleep (comm changes from ours) and sleeps.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let p = loop {
            let all = ProcScanner::new(Some(vec![pid])).scan();
            match all.into_iter().next() {
                Some(p) if &*p.comm == "sleep" && p.state == 'S' => break p,
                _ if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                other => panic!("child not seen as sleep: {other:?}"),
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(p.num_threads, 1);
        assert_eq!(p.tasks.len(), 1);
        let t = &p.tasks[0];
        assert_eq!((t.tid, &*t.comm, t.state), (pid, "sleep", 'S'));
    }

    /// One process as the procfs crate saw it: (ppid, comm, cmdline, (tid, comm)s).
    type Seen = (u32, String, String, Vec<(u32, String)>);

    fn procfs_view(p: &procfs::process::Process) -> Option<(u64, Seen)> {
        let st = p.stat().ok()?;
        let cmd = p.cmdline().map(|v| v.join(" ")).unwrap_or_default();
        let tasks = p
            .tasks()
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|t| t.stat().ok())
            .map(|t| (t.pid as u32, t.comm))
            .collect();
        Some((st.starttime, (st.ppid as u32, st.comm, cmd, tasks)))
    }

    fn our_view(p: &ProcScan) -> Seen {
        let tasks = p
            .tasks
            .iter()
            .map(|t| (t.tid, t.comm.to_string()))
            .collect();
        (p.ppid, p.comm.to_string(), p.cmdline.to_string(), tasks)
    }

    /// The whole scan against the procfs crate (what the scan used before), on the live
    /// machine: for every process both saw (same pid and start time) the same identity,
    /// command line and threads. A process that changed between the two reads (exec,
    /// re-parented, a thread came or went) is read again by both, a few times.
    #[test]
    fn scan_agrees_with_procfs() {
        let ours = ProcScanner::new(None).scan();
        let theirs: HashMap<(u32, u64), Seen> = procfs::process::all_processes()
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|p| procfs_view(&p).map(|(start, v)| ((p.pid() as u32, start), v)))
            .collect();
        let mut compared = 0;
        for p in &ours {
            let Some(seen) = theirs.get(&(p.pid, p.starttime)) else {
                continue;
            };
            compared += 1;
            if our_view(p) == *seen {
                continue;
            }
            let agree = (0..5).any(|_| {
                let a = ProcScanner::new(Some(vec![p.pid])).scan();
                let b = procfs::process::Process::new(p.pid as i32)
                    .ok()
                    .and_then(|q| procfs_view(&q));
                match (a.first(), b) {
                    (Some(a), Some((start, b))) => a.starttime != start || our_view(a) == b,
                    _ => true, // gone
                }
            });
            assert!(agree, "{}: {:?} vs {:?}", p.pid, our_view(p), seen);
        }
        assert!(
            compared > 0 && compared + 50 >= ours.len(),
            "{compared} of {}",
            ours.len()
        );
    }
}
