//! Tests of the /proc scanner: the hand parser against the procfs crate, and a real scan
//! against what procfs reads.
use super::*;

/// What the procfs crate made of a stat line (the scan's parser before).
fn with_procfs(line: &[u8]) -> Option<StatFields> {
    use procfs::FromRead;
    let st = procfs::process::Stat::from_read(line).ok()?;
    Some(StatFields {
        pid: st.pid as u32,
        comm: st.comm.into(),
        state: st.state,
        ppid: st.ppid as u32,
        majflt: st.majflt,
        utime: st.utime,
        stime: st.stime,
        priority: st.priority,
        nice: st.nice,
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
    let own_tids = || -> Vec<u32> {
        procfs::process::Process::myself()
            .unwrap()
            .tasks()
            .unwrap()
            .filter_map(Result::ok)
            .map(|t| t.tid as u32)
            .collect()
    };
    let before = own_tids();
    let mut sc = ProcScanner::new(None);
    // Other tests' threads come and go in this process; this test is not about that.
    sc.keep_past_vanished = true;
    let all = sc.scan();
    let after = own_tids();
    let p = all.iter().find(|p| p.pid == me).expect("own process");
    let cmd = procfs::process::Process::myself()
        .unwrap()
        .cmdline()
        .unwrap()
        .join(" ");
    assert_eq!(*p.cmdline, *cmd);
    // Every thread that lived through the scan is in it (other tests' threads may come
    // and go meanwhile, so the lists need not be equal).
    let ours: Vec<u32> = p.tasks.iter().map(|t| t.tid).collect();
    for tid in before.iter().filter(|t| after.contains(t)) {
        assert!(ours.contains(tid), "{tid} lived through the scan: {ours:?}");
    }
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

/// Scans after the first read kept stat files: they see what changed (a child that
/// exited and was reaped is gone, and so are its kept files; a thread that exited is
/// gone from its process; CPU time moves), never a stale copy.
#[test]
fn later_scans_through_kept_files_see_changes() {
    let me = std::process::id();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let mut sc = ProcScanner::new(None);
    // Other tests' threads come and go in this process; this test is not about that.
    sc.keep_past_vanished = true;
    let first = sc.scan();
    let mine = |all: &[ProcScan]| all.iter().find(|p| p.pid == me).cloned().unwrap();
    assert!(first.iter().any(|p| p.pid == pid));
    assert!(mine(&first).tasks.iter().any(|t| t.tid == tid));
    let kept = sc.stats.len();
    if kept < sc.stats.cap() {
        assert!(sc.stats.holds((pid, 0)) && sc.stats.holds((me, tid)));
    }
    assert!(
        kept >= first.len(),
        "{kept} files kept for {} processes",
        first.len()
    );

    let _ = child.kill();
    let _ = child.wait();
    let _ = tx.send(());
    t.join().unwrap();
    crate::collect::procfs::files::tests::wait_thread_gone(tid);
    crate::collect::procfs::files::tests::spin_cpu_ms(100);
    let second = sc.scan();
    assert!(
        !second.iter().any(|p| p.pid == pid),
        "reaped child still scanned"
    );
    let now = mine(&second);
    assert!(
        !now.tasks.iter().any(|t| t.tid == tid),
        "exited thread still scanned"
    );
    let cpu = |p: &ProcScan| p.utime + p.stime;
    assert!(
        cpu(&now) > cpu(&mine(&first)),
        "CPU time did not move: stale stat"
    );
    assert!(
        !sc.stats.holds((pid, 0)) && !sc.stats.holds((pid, pid)) && !sc.stats.holds((me, tid)),
        "the gone child's and thread's files stay open"
    );
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

#[test]
fn paths_are_built_as_proc_names_them() {
    let mut b = [0u8; 48];
    assert_eq!(pid_path(&mut b, 0, None, b"stat").to_bytes(), b"0/stat");
    assert_eq!(
        pid_path(&mut b, 4242, None, b"task").to_bytes(),
        b"4242/task"
    );
    assert_eq!(
        pid_path(&mut b, u32::MAX, Some(u32::MAX), b"cmdline").to_bytes(),
        b"4294967295/task/4294967295/cmdline"
    );
}

/// A thread the dirty map does not mark is not read again: a rename done behind the
/// map's back (as if the task_rename probe had missed it) stays unseen until the thread
/// is marked, or until its periodic re-read. A marked one is read at once.
#[test]
fn unmarked_sleeping_threads_are_not_read_again() {
    use crate::collect::sched::dirty::Dirty;
    let me = std::process::id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let t = std::thread::Builder::new()
        .name("ttop-before".into())
        .spawn(move || {
            // SAFETY: gettid has no preconditions.
            tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let _ = rx.recv();
        })
        .unwrap();
    let tid = tid_rx.recv().unwrap();
    let name_of = |sc: &mut ProcScanner, d: &Dirty| -> (String, char) {
        let all = sc.scan_with(Some(d));
        let p = all
            .iter()
            .find(|p| p.pid == me)
            .expect("own process scanned");
        let t = p
            .tasks
            .iter()
            .find(|t| t.tid == tid)
            .expect("thread scanned");
        (t.comm.to_string(), t.state)
    };
    // Wait until the thread sleeps in recv (S), so the scan may skip it.
    let t0 = std::time::Instant::now();
    loop {
        let st = std::fs::read_to_string(format!("/proc/{me}/task/{tid}/stat")).unwrap();
        if st.rsplit(')').next().unwrap().trim_start().starts_with('S') {
            break;
        }
        assert!(t0.elapsed().as_secs() < 5, "thread never slept");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let d = Dirty::owned(1 << 22); // every id marked: the first scan reads all
    let mut sc = ProcScanner::new(None);
    // Other tests' threads come and go in this process; this test is not about that.
    sc.keep_past_vanished = true;
    // Start right after a due re-read of this thread, so REFRESH_TICKS - 1 scans follow
    // in which it is not due.
    while !(u64::from(tid) + sc.ticks + 1).is_multiple_of(REFRESH_TICKS) {
        sc.ticks += 1;
    }
    assert_eq!(name_of(&mut sc, &d), ("ttop-before".into(), 'S'));
    std::fs::write(format!("/proc/{me}/task/{tid}/comm"), "ttop-after").unwrap();
    for _ in 0..REFRESH_TICKS - 2 {
        let (name, _) = name_of(&mut sc, &d);
        assert_eq!(
            name, "ttop-before",
            "an unmarked sleeping thread was read again"
        );
    }
    d.tids.mark(tid);
    assert_eq!(
        name_of(&mut sc, &d).0,
        "ttop-after",
        "a marked thread was not read"
    );

    // The periodic re-read, with no mark at all.
    std::fs::write(format!("/proc/{me}/task/{tid}/comm"), "ttop-later").unwrap();
    let mut seen = false;
    for _ in 0..REFRESH_TICKS {
        seen |= name_of(&mut sc, &d).0 == "ttop-later";
    }
    assert!(seen, "not read again within {REFRESH_TICKS} scans");

    // The scanning thread itself runs (R when it reads its own file): read every time,
    // unmarked, so the CPU it burns between scans shows.
    // SAFETY: gettid has no preconditions.
    let me_tid = unsafe { libc::gettid() } as u32;
    // Other tests' threads come and go in this process: as top does, a scan stops
    // reading a process's threads at one that vanished, so look again until it is seen.
    let cpu = |sc: &mut ProcScanner| {
        for _ in 0..50 {
            let all = sc.scan_with(Some(&d));
            let p = all.iter().find(|p| p.pid == me).unwrap();
            if let Some(t) = p.tasks.iter().find(|t| t.tid == me_tid) {
                assert_eq!(t.state, 'R');
                return t.utime + t.stime;
            }
        }
        panic!("the scanning thread was never listed before a vanished one");
    };
    let before = cpu(&mut sc);
    crate::collect::procfs::files::tests::spin_cpu_ms(100);
    assert!(cpu(&mut sc) > before, "a running thread was not read again");
    let _ = tx.send(());
    t.join().unwrap();
}

/// /proc is listed again only when `Dirty::births` moved (or `read_all` is set, or the
/// periodic re-list is due): a process started behind the count's back is not scanned
/// until then, and one that exited leaves the next scan without a new listing.
#[test]
fn the_proc_listing_is_kept_until_a_process_starts() {
    use crate::collect::sched::dirty::Dirty;
    let mut d = Dirty::owned(1 << 22);
    let mut sc = ProcScanner::new(None);
    // Other tests' threads come and go in this process; this test is not about that.
    sc.keep_past_vanished = true;
    sc.ticks = 1; // the next scans are not a periodic re-list
    let has = |sc: &mut ProcScanner, d: &Dirty, pid: u32| {
        sc.scan_with(Some(d)).iter().any(|p| p.pid == pid)
    };
    sc.scan_with(Some(&d));
    let spawn = || {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    };
    let mut a = spawn();
    assert!(
        !has(&mut sc, &d, a.id()),
        "listed again with no birth counted"
    );
    d.births += 1;
    assert!(
        has(&mut sc, &d, a.id()),
        "a counted birth did not list /proc again"
    );

    let mut b = spawn();
    assert!(
        !has(&mut sc, &d, b.id()),
        "listed again with no birth counted"
    );
    d.read_all = true;
    assert!(
        has(&mut sc, &d, b.id()),
        "read_all did not list /proc again"
    );
    d.read_all = false;

    a.kill().unwrap();
    a.wait().unwrap();
    assert!(
        !has(&mut sc, &d, a.id()),
        "a reaped process is still scanned"
    );
    assert!(has(&mut sc, &d, b.id()));
    b.kill().unwrap();
    b.wait().unwrap();
}

/// top's rule, at top's pace: a thread that exits before the scan reaches it ends the
/// process's list, and the threads listed after it are left out (and counted).
#[test]
fn a_thread_gone_before_its_turn_ends_the_list_as_in_top() {
    use std::sync::mpsc::channel;
    use std::time::Duration;
    let me = std::process::id();
    // `early` exits 150 ms into the scan; `late`, listed after it, lives on.
    let (tx_early, rx_early) = channel::<u32>();
    let early = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx_early.send(unsafe { libc::gettid() } as u32).unwrap();
        std::thread::sleep(Duration::from_millis(150));
    });
    let (tx_late, rx_late) = channel::<u32>();
    let (tx_stop, rx_stop) = channel::<()>();
    let late = std::thread::spawn(move || {
        // SAFETY: as above.
        tx_late.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = rx_stop.recv();
    });
    let (e, l) = (rx_early.recv().unwrap(), rx_late.recv().unwrap());
    let mut sc = ProcScanner::new(Some(vec![me]));
    // A top so slow that the scan reaches `early` well after it exited: 60 ms a thread
    // (this process has at least the main test thread listed before it).
    sc.top_cost = Some(TopCost {
        thread_ns: 60_000_000,
        proc_ns: 0,
    });
    sc.pace = Some(PaceSetup {
        ncpus: 2,
        others_per_cpu: 0.0,
        cap: Duration::from_secs(5),
        churning: None,
    });
    let all = sc.scan();
    let tids: Vec<u32> = all[0].tasks.iter().map(|t| t.tid).collect();
    early.join().unwrap();
    assert!(!tids.contains(&e), "{e} was gone when its turn came");
    assert!(
        !tids.contains(&l),
        "{l}, listed after a vanished thread, was shown"
    );
    assert!(sc.top_scan.vanished >= 1, "{:?}", sc.top_scan);
    assert!(sc.top_scan.skipped >= 1, "{:?}", sc.top_scan);
    assert!(sc.top_scan.paced_ns >= 100_000_000, "{:?}", sc.top_scan);
    // Unpaced, nothing vanishes meanwhile and `late` is listed (other tests' threads
    // may still vanish: look a few times).
    sc.pace = None;
    let seen = (0..20).any(|_| sc.scan()[0].tasks.iter().any(|t| t.tid == l));
    assert!(seen, "{l} was never listed by an unpaced scan");
    tx_stop.send(()).unwrap();
    late.join().unwrap();
}
