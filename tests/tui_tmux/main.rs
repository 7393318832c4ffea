//! The dashboard as a person meets it: started in a real pseudo-terminal (tmux), driven
//! with keys, and left with q, SIGTERM and SIGHUP. Checks what is on the screen.

#[path = "../common/mod.rs"]
mod common;
mod mouse;
mod tmux;

use std::process::Command;
use std::time::{Duration, Instant};

use common::watch::pid_of;
use common::*;
use tmux::*;

#[test]
fn drive_the_dashboard_and_quit_cleanly() {
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 100, 30) else {
        return;
    };
    t.wait_for("Runnable threads");
    t.wait_for("Processes");
    t.keys(&["?"]);
    t.wait_for("ttop keys");
    t.keys(&["z"]); // any key closes help (z does nothing else)
    t.keys(&["s"]);
    t.wait_for("sorted by");
    t.keys(&["p", "1", "Enter"]);
    t.wait_for("watching pid 1");
    t.keys(&["Enter"]);
    t.wait_for("Threads of 1");
    t.keys(&["Escape"]);
    t.wait_for("Processes");
    t.keys(&["/", "Enter"]); // empty filter clears
    t.keys(&["q"]);
    let s = t.wait_for("TTOP-EXITED 0");
    assert!(
        !s.contains("Runnable threads"),
        "the dashboard was left on screen:\n{s}"
    );
}

#[test]
fn resize_and_tiny_terminal() {
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 40, 12) else {
        return;
    };
    t.wait_for("Processes");
    tmux(&t.name)
        .args(["resize-window", "-t", &t.name, "-x", "200", "-y", "60"])
        .status()
        .unwrap();
    t.wait_for("COMMAND");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
}

#[test]
fn sigterm_restores_the_terminal() {
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 100, 30) else {
        return;
    };
    t.wait_for("Runnable threads");
    let pid = ttop_pid(&t);
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let s = t.wait_for("TTOP-EXITED 0");
    assert!(
        !s.contains("Runnable threads"),
        "the dashboard was left on screen:\n{s}"
    );
}

#[test]
fn sighup_from_a_dropped_session_ends_ttop() {
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 100, 30) else {
        return;
    };
    t.wait_for("Runnable threads");
    let pid = ttop_pid(&t);
    Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    let t0 = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "ttop still running 5 s after SIGHUP"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.wait_for("TTOP-EXITED 0");
}

/// Voluntary context switches of all of `pid`'s threads: how often it went to sleep.
fn sleeps(pid: u32) -> u64 {
    task_status_sum(pid, &["voluntary_ctxt_switches"])
}

/// An idle dashboard at `-d 1` sleeps until the next Sample (the collector thread) and
/// until that Sample or a key (the UI thread): about two wake-ups a second in all. It
/// used to wake each thread four times a second to look at the stop flag (eight in
/// all), which is CPU a monitor should not burn on an idle machine.
#[test]
fn an_idle_dashboard_wakes_once_per_interval_per_thread() {
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 100, 30) else {
        return;
    };
    t.wait_for("Processes");
    let pid = ttop_pid(&t);
    std::thread::sleep(Duration::from_secs(1));
    let (n0, t0) = (sleeps(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(6));
    let (n, secs) = (sleeps(pid) - n0, t0.elapsed().as_secs_f64());
    eprintln!("{n} sleeps in {secs:.1} s");
    // Two a second, plus slack for a page fault or a lock wait; eight a second before.
    assert!(
        (n as f64) <= 3.0 * secs + 2.0,
        "{n} voluntary context switches in {secs:.1} s"
    );
    // Still stops at once on a signal, though nothing polls the flag any more.
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(
        exited_within(pid, Duration::from_secs(5)),
        "ttop ignored SIGTERM"
    );
}

/// Wait until `pid` has exited (gone, or a zombie nobody reaped yet).
fn exited_within(pid: u32, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// The terminal disappears under ttop (tmux pane killed, SSH connection dropped). crossterm
/// 0.29 would spin forever reading the dead tty (100% CPU, deaf to SIGTERM); ttop must
/// notice the hang-up and exit, well before its 5 s last-resort exit after a signal.
/// Run twice: as the pane's foreground job (the kernel also sends SIGHUP) and in a
/// session of its own (`setsid`: no SIGHUP, only the hang-up on the tty tells it).
#[test]
fn a_vanished_terminal_ends_ttop() {
    let _g = kernel_lock();
    for wrap in ["", "setsid -w "] {
        let Some(t) = Tmux::start(&format!("{wrap}{}", ttop_cmd()), 100, 30) else {
            return;
        };
        t.wait_for("Runnable threads");
        let out = Command::new("pgrep")
            .args(["-n", "-f", &ttop_bin().display().to_string()])
            .output()
            .unwrap();
        let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        // Not the setsid wrapper (its command line names ttop too): a wrapper killed by
        // SIGHUP would pass this test while ttop spun on.
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim(), "ttop", "pid {pid} is not ttop");
        drop(t); // kill-session: the pty's master side closes
        assert!(
            exited_within(pid, Duration::from_secs(3)),
            "ttop{} still running 3 s after its terminal vanished",
            if wrap.is_empty() { "" } else { " (setsid)" }
        );
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// `o` in the profile view of a live dashboard: the collector switches its sampler to
/// off-CPU stacks of the filter's process, and they appear with their reasons; `o` again
/// goes back to on-CPU samples.
#[test]
fn o_switches_the_live_profile_to_off_cpu_time() {
    if !require_root("o_switches_the_live_profile_to_off_cpu_time") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("offcpu", &["30"]);
    let pid = pid_of(&mut w);
    let cmd = format!(
        "{} --config {} -p {pid}",
        ttop_bin().display(),
        own_config().display()
    );
    let Some(t) = Tmux::start(&cmd, 160, 50) else {
        let _ = w.kill();
        let _ = w.wait();
        return;
    };
    t.wait_for("Processes");
    t.keys(&["6"]);
    t.wait_for("on-CPU");
    t.keys(&["o"]);
    t.wait_for("off-CPU time");
    // The sleeper's naps and the waiter's futex waits, by why.
    t.wait_for("[off-cpu: sleep]");
    let s = t.wait_for("[off-cpu: futex]");
    assert!(s.contains(&format!("offcpu-{pid}")), "{s}");
    t.keys(&["o"]);
    t.wait_for("on-CPU,");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    let _ = w.kill();
    let _ = w.wait();
}

/// The futex view counts every futex call while it is open: on the overview only the
/// waits that slept are counted (no futex syscall hooked), the view's header first says
/// calls are not counted, then, from its next interval, lists the 1 kHz ticker by futex
/// calls (about 2,000/s: a wake and a wait per tick); leaving the view unhooks them
/// again (the syscall tracepoints are gone from the kernel's list of BPF links).
#[test]
fn the_futex_view_counts_calls_while_it_is_open() {
    if !require_root("the_futex_view_counts_calls_while_it_is_open") {
        return;
    }
    let _g = kernel_lock();
    let Some(t) = Tmux::start(&ttop_cmd(), 160, 50) else {
        return;
    };
    t.wait_for("Processes");
    let ttop = ttop_pid(&t);
    let hooked = || syscall_links(ttop);
    assert_eq!(hooked(), 0, "futex syscalls hooked on the overview");
    let mut w = spawn_workload("ticker", &["30"]);
    let pid = pid_of(&mut w);
    t.keys(&["2"]);
    t.wait_for("Futexes:");
    let s = t.wait_for(&format!("futex calls/s: ticker({pid})"));
    assert!(hooked() > 0, "no futex syscall hooked in the futex view");
    let n: f64 = s
        .split(&format!("ticker({pid}) "))
        .nth(1)
        .and_then(|r| r.split([',', ' ']).next())
        .map(|v| {
            let k = if v.ends_with('k') { 1e3 } else { 1.0 };
            v.trim_end_matches('k').parse::<f64>().unwrap_or(0.0) * k
        })
        .unwrap_or(0.0);
    assert!((1500.0..=2500.0).contains(&n), "ticker calls/s {n}:\n{s}");
    t.keys(&["1"]);
    let t0 = Instant::now();
    while hooked() > 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still hooked after leaving the view"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    let _ = w.kill();
    let _ = w.wait();
}

/// ttop's BPF links attached through perf events: the futex syscalls' classic
/// tracepoints (every other program of ttop's is a raw or BTF tracepoint link, and the
/// profiler is not started here), from the kernel's fdinfo of each of its files.
fn syscall_links(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return 0;
    };
    dir.flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path())
                .is_ok_and(|s| s.lines().any(|l| l == "link_type:\tperf"))
        })
        .count()
}

/// Any key closes the help screen, as it says; a key that does something also does it
/// (issue 34, defect 4: an unbound key left it open, a bound one was swallowed).
#[test]
fn any_key_closes_help_and_a_bound_key_acts() {
    let Some(t) = Tmux::start(&ttop_ui_cmd(), 100, 30) else {
        return;
    };
    t.wait_for("Processes");
    t.keys(&["?"]);
    t.wait_for("ttop keys");
    t.keys(&["x"]);
    t.wait_without("ttop keys");
    t.keys(&["?"]);
    t.wait_for("ttop keys");
    t.keys(&["2"]);
    let s = t.wait_for("Futexes:");
    assert!(!s.contains("ttop keys"), "{s}");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
}

/// The state letter of a process (/proc/PID/stat), or None when it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')').next()?.trim_start().chars().next()
}

/// Ctrl-Z suspends ttop to the shell as it does any job, the terminal given back; `fg`
/// resumes it with the dashboard redrawn (issue 34, defect 13: the key was swallowed).
#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_resumes() {
    let Some(t) = Tmux::shell(100, 30) else {
        return;
    };
    t.line(&ttop_ui_cmd());
    t.wait_for("Runnable threads");
    let ttop = ttop_pid(&t);
    t.keys(&["C-z"]);
    let s = t.wait_for("Stopped");
    assert!(
        !s.contains("Runnable threads"),
        "the dashboard left on screen:\n{s}"
    );
    let t0 = Instant::now();
    while proc_state(ttop) != Some('T') {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "ttop {ttop} not stopped"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.line("fg");
    t.wait_for("Runnable threads");
    t.wait_for("Processes");
    assert!(matches!(proc_state(ttop), Some('S' | 'R')));
    t.keys(&["q"]);
    t.wait_without("Runnable threads");
    t.line("echo RESULT $?");
    t.wait_for("RESULT 0");
}

/// The record key's files are named as `record --dir` names its own, so `ttop replay
/// DIR` plays them (issue 34, defect 13: it skipped them).
#[test]
fn the_record_key_writes_files_replay_dir_plays() {
    let dir = std::env::temp_dir().join(format!("ttop-tmux-rec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cmd = format!("cd {} && {} -d 0.3", dir.display(), ttop_ui_cmd());
    let Some(t) = Tmux::start(&cmd, 120, 30) else {
        return;
    };
    t.wait_for("Processes");
    t.keys(&["R"]);
    t.wait_for("● REC ttop-");
    std::thread::sleep(Duration::from_millis(1500));
    t.keys(&["R"]);
    t.wait_for("saved ttop-");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let n = &names[0];
    let stamp = n
        .strip_prefix("ttop-")
        .and_then(|s| s.strip_suffix("Z.ttop"));
    assert!(
        stamp.is_some_and(|s| s.len() == 15 && s.as_bytes()[8] == b'T'),
        "{n}: not ttop-YYYYMMDDTHHMMSSZ.ttop"
    );
    let out = Command::new(ttop_bin())
        .args(["replay", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    let frames = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(
        out.status.success() && frames >= 2,
        "{frames} frames: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The settings file: the dashboard opens as it says (the locks view, a tree, threads), writes
/// back what the user changed when it ends, and a file with an error is named with its
/// line in the banner, not used, and left byte for byte as it was.
#[test]
fn settings_file_opens_saves_and_survives_errors() {
    let path = own_config();
    std::fs::write(&path, "# mine\nview = \"locks\"\nsort = \"RSS\"\n").unwrap();
    let cmd = format!(
        "{} --no-bpf --config {}",
        ttop_bin().display(),
        path.display()
    );
    let Some(t) = Tmux::start(&cmd, 120, 30) else {
        return;
    };
    t.wait_for("Locks");
    t.keys(&["1"]);
    t.wait_for("sorted by RSS");
    t.keys(&["t"]);
    t.wait_for("as a tree");
    // H: each process's threads under it (ttop's own collector thread among them).
    t.keys(&["H"]);
    t.wait_for("threads (t, H)");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    drop(t);
    let saved = std::fs::read_to_string(&path).unwrap();
    let s = ttop::app::config_file::parse(&saved).unwrap();
    assert_eq!(s.view.as_deref(), Some("overview"), "{saved}");
    assert_eq!(
        (s.sort.as_deref(), s.tree, s.show_threads),
        (Some("RSS"), Some(true), Some(true)),
        "{saved}"
    );
    // Started again, it opens as it was left.
    let Some(t) = Tmux::start(&cmd, 120, 30) else {
        return;
    };
    t.wait_for("as a tree");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    drop(t);
    // A mistake on line 3: said, not used, the file untouched after changes and quit.
    let bad = "view = \"overview\"\ntree = true\nsort = 3\n";
    std::fs::write(&path, bad).unwrap();
    let Some(t) = Tmux::start(&cmd, 160, 30) else {
        return;
    };
    // The dashboard's banner ("settings not used (FILE:3:8 ...)"), not the line printed to
    // stderr before it: that line is written in pieces, and a screen read between them
    // saw "settings not used:" without the position.
    t.wait_for("settings not used (");
    let s = t.wait_for(":3:8");
    assert!(s.contains("settings not used ("), "{s}");
    assert!(!s.contains("as a tree"), "the bad file was used:\n{s}");
    t.keys(&["t", "2"]);
    t.wait_for("Futexes");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
}
