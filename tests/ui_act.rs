//! Acting on a process from the dashboard (issue 34): F9 sends a signal, F7/F8 renice,
//! `a` sets the CPU affinity, each confirmed with y. The keys go through the App as a
//! person presses them; the confirmed request is performed on a real child the test
//! owns, and the result is read back from the kernel (the child's wait status,
//! /proc/PID/task/TID/stat's nice, Cpus_allowed_list). Refusals are real too: the same
//! acts from a thread that dropped to nobody's uid.

mod common;
use common::screen::screen_text as screen;
use common::{require_root, spawn_workload};

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ttop::app::act::{ActRequest, ProcAct};
use ttop::app::act_exec::perform;
use ttop::app::{Action, App};
use ttop::model::{derive, fixtures};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::from(c)
}

/// An App showing the incident fixture, with its first process row standing for
/// `pid` (named `comm`) and selected.
fn app_on(pid: u32, comm: &str) -> App {
    let sys = fixtures::system();
    let (a, b) = (fixtures::incident(1, true), fixtures::incident(2, true));
    let mut fr = derive(&sys, Some(&a), &b);
    let row = fr.procs.iter_mut().find(|p| !p.gone).unwrap();
    row.pid = pid;
    row.comm = comm.into();
    let mut app = App::new();
    app.push_frame(fr);
    app.selected_pid = Some(pid);
    app
}

/// Press `keys` and hand back what the App asks the live loop to do.
fn confirmed(app: &mut App, open: Action, keys: &[KeyCode]) -> Vec<ActRequest> {
    app.handle(open);
    for k in keys {
        app.key(&key(*k));
    }
    std::mem::take(&mut app.act_requests)
}

fn pid_of(c: &mut Child) -> u32 {
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().strip_prefix("pid=").unwrap().parse().unwrap()
}

fn tids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
        .collect()
}

/// Field 19 of /proc/PID/task/TID/stat.
fn nice(pid: u32, tid: u32) -> i32 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(16).unwrap().parse().unwrap()
}

fn cpus_allowed(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn f9_sends_the_chosen_signal_after_y_and_nothing_on_n() {
    let mut child = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id();
    let mut app = app_on(pid, "sleep");
    // n cancels: nothing asked, the child lives.
    assert!(
        confirmed(
            &mut app,
            Action::Kill,
            &[KeyCode::Enter, KeyCode::Char('n')]
        )
        .is_empty()
    );
    assert!(app.act.is_none());
    assert!(child.try_wait().unwrap().is_none());
    // → once: KILL; Enter; the confirmation is on screen; y.
    app.handle(Action::Kill);
    app.key(&key(KeyCode::Right));
    app.key(&key(KeyCode::Enter));
    let text = screen(&app, 80, 24);
    assert!(
        text.contains(&format!("SIGKILL to sleep({pid})?")),
        "{text}"
    );
    app.key(&key(KeyCode::Char('y')));
    let reqs = std::mem::take(&mut app.act_requests);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].act, ProcAct::Signal(libc::SIGKILL));
    let said = perform(&reqs[0]).unwrap();
    assert_eq!(said, format!("sent SIGKILL to sleep({pid})"));
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    // Once reaped it is gone, and the act says so.
    let again = perform(&reqs[0]).unwrap_err();
    assert_eq!(again, format!("sleep({pid}) is gone"));
}

#[test]
fn renice_and_affinity_reach_every_thread() {
    if !require_root("renice_and_affinity_reach_every_thread") {
        return;
    }
    // Four threads waking every 50 ms for 30 s.
    let mut w = spawn_workload("many", &["4", "30", "50"]);
    let pid = pid_of(&mut w);
    while tids(pid).len() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut app = app_on(pid, "many");
    let before: Vec<i32> = tids(pid).iter().map(|&t| nice(pid, t)).collect();
    assert!(before.iter().all(|&n| n == 0), "{before:?}");
    // F8 (nice +1), then F7 twice (nice -1 each): every thread ends at -1.
    for (a, times) in [(Action::NiceBy(1), 1), (Action::NiceBy(-1), 2)] {
        for _ in 0..times {
            let r = confirmed(&mut app, a, &[KeyCode::Char('y')]);
            assert_eq!(r.len(), 1);
            let said = perform(&r[0]).unwrap();
            assert!(said.contains("5 thread(s) of many"), "{said}");
        }
    }
    let after: Vec<i32> = tids(pid).iter().map(|&t| nice(pid, t)).collect();
    assert_eq!(after, vec![-1; 5]);
    // a, "0", Enter, y: every thread on CPU 0 alone.
    let keys = [KeyCode::Char('0'), KeyCode::Enter, KeyCode::Char('y')];
    let r = confirmed(&mut app, Action::Affinity, &keys);
    let said = perform(&r[0]).unwrap();
    assert_eq!(
        said,
        format!("5 thread(s) of many({pid}) now run on CPUs 0")
    );
    for t in tids(pid) {
        assert_eq!(cpus_allowed(pid, t), "0", "thread {t}");
    }
    // A CPU that does not exist is refused by the kernel, and said so.
    let bad = ActRequest {
        pid,
        comm: "many".into(),
        act: ProcAct::Affinity(vec![1000]),
    };
    let why = perform(&bad).unwrap_err();
    assert!(why.starts_with("refused: CPUs 1000"), "{why}");
    let _ = w.kill();
    let _ = w.wait();
}

/// Without the right, each act is refused with the reason, and nothing changes. The
/// acts run on a thread whose credentials dropped to nobody's (the raw setresuid call
/// changes the calling thread only); the child stays root's.
#[test]
fn acts_without_the_right_are_refused_plainly() {
    if !require_root("acts_without_the_right_are_refused_plainly") {
        return;
    }
    let mut child = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id();
    let req = |act| ActRequest {
        pid,
        comm: "sleep".into(),
        act,
    };
    let reqs = [
        req(ProcAct::Signal(libc::SIGTERM)),
        req(ProcAct::NiceBy(-1)),
        req(ProcAct::NiceBy(1)),
        req(ProcAct::Affinity(vec![0])),
    ];
    let out = std::thread::spawn(move || {
        // SAFETY: raw syscall on this thread only; it ends right after.
        let r = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(r, 0);
        reqs.iter().map(perform).collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    for (r, o) in out.iter().enumerate() {
        let why = o.as_ref().unwrap_err();
        assert!(why.starts_with("not permitted: "), "act {r}: {why}");
    }
    assert!(out[1].as_ref().unwrap_err().contains("CAP_SYS_NICE"));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the child was signalled"
    );
    assert_eq!(nice(pid, pid), 0);
    let _ = child.kill();
    let _ = child.wait();
}

/// A replay cannot act on processes: the key says so and opens nothing.
#[test]
fn a_replay_refuses_to_act() {
    let mut app = app_on(4242, "tiflash");
    app.replay = Some(Default::default());
    app.handle(Action::Kill);
    assert!(app.act.is_none());
    let text = screen(&app, 100, 30);
    assert!(text.contains("a replay cannot act on processes"), "{text}");
}

#[test]
fn the_signal_chooser_at_80x24() {
    let mut app = app_on(4242, "tiflash");
    app.handle(Action::Kill);
    app.key(&key(KeyCode::Right));
    app.key(&key(KeyCode::Right));
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("act_signal_chooser_80x24", screen(&app, 80, 24));
    });
}

/// The tree is built from the kernel's parent PIDs: `ttop --json` gives a child of this
/// test its ppid, and kthreadd's children (kernel threads) name 2.
#[test]
fn json_rows_carry_the_parent_pid() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let out = Command::new(common::ttop_bin())
        .args(["--json", "--no-bpf", "-n", "1", "-d", "0.2"])
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let fr: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let procs = fr["procs"].as_array().unwrap();
    let row = procs.iter().find(|p| p["pid"] == child.id()).unwrap();
    assert_eq!(row["ppid"], std::process::id(), "{row}");
    let kthreads = procs
        .iter()
        .filter(|p| p["ppid"] == 2 && p["cmdline"] == "")
        .count();
    assert!(kthreads > 0, "no kernel thread has ppid 2");
}

/// An App showing the incident fixture's second frame.
fn incident_app() -> App {
    let mut app = App::new();
    let sys = fixtures::system();
    let (a, b) = (fixtures::incident(1, true), fixtures::incident(2, true));
    app.push_frame(derive(&sys, Some(&a), &b));
    app
}

/// `t` draws the table as a tree under systemd, `K` leaves the kernel worker out.
#[test]
fn tree_and_hidden_kernel_threads_at_120x30() {
    let mut app = incident_app();
    app.handle(Action::Tree);
    app.handle(Action::HideKernel);
    let text = screen(&app, 120, 30);
    assert!(!text.contains("kworker"), "{text}");
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("procs_tree_no_kernel_120x30", text);
    });
    app.handle(Action::HideKernel);
    assert!(screen(&app, 120, 30).contains("kworker"));
}

/// `H` lists each process's threads under it in the tree (and turns the tree on), with
/// the columns a thread has its own figure for (TID, name, state, CPU, run-queue wait)
/// and the others blank; a thread row selected acts on its process.
#[test]
fn threads_under_their_process_at_120x40() {
    let mut app = incident_app();
    app.handle(Action::SortBy(ttop::app::sort::ProcSort::Pid));
    app.handle(Action::HideKernel);
    let flat = screen(&app, 120, 40);
    app.handle(Action::ShowThreads);
    assert!(app.tree && app.show_threads && app.settings_touched);
    let text = screen(&app, 120, 40);
    assert_ne!(text, flat);
    assert!(text.contains("with 56 threads (t, H)"), "{text}");
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("procs_tree_threads_120x40", text);
    });
    // node_exporter (912) is systemd's first child; its first worker is the next row.
    for _ in 0..2 {
        app.handle(Action::Down);
    }
    assert_eq!(app.selected_pid, Some(912 + 1001));
    app.handle(Action::Open);
    assert_eq!(app.thread_pid, Some(912));
    app.handle(Action::Back);
    app.handle(Action::ShowThreads);
    assert!(app.tree && !app.show_threads);
    assert!(!screen(&app, 120, 40).contains("node_exporter-w"));
}
