//! The profile view (6) as insta snapshots of a fixed-size TestBackend, from fixture
//! stacks: the flame graph at 80x24 and 160x50, zoomed, searched, and as a table; the
//! cues that do not need colour; and the keys.

mod common;
use common::screen::screen;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Modifier;

use ttop::app::{Action, App, View};
use ttop::collect::Request;
use ttop::model::profile::{ProfileFrame, ProfileSample, ProfileStack};
use ttop::model::{derive, fixtures};

macro_rules! snap {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

fn stack(pid: u32, thread: &str, frames: &[&str], count: u64) -> ProfileStack {
    ProfileStack {
        pid,
        process: if pid == 4242 { "dbengine" } else { "logger" }.into(),
        thread: thread.into(),
        frames: frames.iter().map(|s| s.to_string()).collect(),
        count,
        lines: Vec::new(),
    }
}

/// One interval's stacks: a database engine whose workers burn CPU 3:1 in two
/// functions and take a lock, and a logger writing.
fn interval() -> ProfileSample {
    let w = ["clone3", "start_thread", "worker_main"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        w.iter().copied().chain(extra.iter().copied()).collect()
    };
    ProfileSample {
        hz: 99,
        stacks: vec![
            stack(4242, "worker-1", &with(&["execute_query", "scan_rows"]), 45),
            stack(4242, "worker-2", &with(&["execute_query", "sort_rows"]), 15),
            stack(
                4242,
                "worker-3",
                &with(&[
                    "commit",
                    "pthread_mutex_lock",
                    "__lll_lock_wait",
                    "entry_SYSCALL_64_[k]",
                    "do_futex_[k]",
                ]),
                12,
            ),
            stack(
                4242,
                "dbengine",
                &["_start", "main", "accept_loop", "epoll_wait"],
                3,
            ),
            stack(
                777,
                "logger",
                &[
                    "_start",
                    "main",
                    "flush_log",
                    "write",
                    "ksys_write_[k]",
                    "ext4_file_write_iter_[k]",
                ],
                9,
            ),
        ],
        lost: 0,
        lost_kstacks: 0,
        off_cpu: false,
        off_waits: None,
        off_waits_kept: None,
    }
}

/// One interval of off-CPU stacks of the engine (microseconds off the CPU, by why):
/// workers waiting on the commit mutex, one preempted, the acceptor in epoll.
fn off_cpu_interval() -> ProfileSample {
    let w = ["clone3", "start_thread", "worker_main"];
    let with = |why: &'static str, extra: &[&'static str]| -> Vec<&'static str> {
        std::iter::once(why)
            .chain(w.iter().copied())
            .chain(extra.iter().copied())
            .collect()
    };
    let futex = [
        "commit",
        "pthread_mutex_lock",
        "__lll_lock_wait",
        "do_futex_[k]",
        "schedule_[k]",
    ];
    ProfileSample {
        hz: 99,
        stacks: vec![
            stack(4242, "worker-1", &with("[off-cpu: futex]", &futex), 620_000),
            stack(4242, "worker-2", &with("[off-cpu: futex]", &futex), 580_000),
            stack(
                4242,
                "worker-3",
                &with("[off-cpu: runnable]", &["execute_query", "scan_rows"]),
                40_000,
            ),
            stack(
                4242,
                "dbengine",
                &[
                    "[off-cpu: wait]",
                    "_start",
                    "main",
                    "accept_loop",
                    "epoll_wait",
                    "schedule_[k]",
                ],
                900_000,
            ),
        ],
        lost: 0,
        lost_kstacks: 0,
        off_cpu: true,
        // Faster than the reader unwinds: one wait in 8 kept, each counting 8.
        off_waits: Some(24_000),
        off_waits_kept: Some(3_000),
    }
}

/// An App that has seen `n` intervals of the incident fixture, each with the stacks.
fn app_with_stacks(n: u64) -> App {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut prev = fixtures::incident(0, true);
    for i in 1..=n {
        let cur = fixtures::incident(i, true);
        let mut f = derive(&sys, Some(&prev), &cur);
        f.profile = Some(ProfileFrame::of(&interval()));
        app.push_frame(f);
        prev = cur;
    }
    app.handle(Action::GoTo(View::Profile));
    app
}

fn key(app: &mut App, c: KeyCode) {
    let k = KeyEvent::new(c, KeyModifiers::NONE);
    if app.typing() {
        app.typing_key(&k);
    } else if let Some(a) = ttop::app::keymap::action_for(&k, app.view) {
        app.handle(a);
    }
}

#[test]
fn flame_graph_80x24_and_160x50() {
    let app = app_with_stacks(3);
    assert!(
        app.requests
            .iter()
            .any(|r| matches!(r, Request::StartProfile)),
        "opening the view asks the collector to sample stacks"
    );
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("252 samples"), "3 intervals x 84:\n{text}");
    snap!("profile_80x24", text);
    let (text, _) = screen(&app, 160, 50);
    assert!(text.contains("scan_rows"), "{text}");
    snap!("profile_160x50", text);
}

#[test]
fn zoom_and_search() {
    let mut app = app_with_stacks(3);
    app.profile.grid = (80, 24);
    // Up from the root: the widest child each time (dbengine, worker-*, clone3, ...).
    for _ in 0..5 {
        key(&mut app, KeyCode::Up);
    }
    assert_eq!(
        app.profile.sel,
        [
            "dbengine-4242",
            "worker-*",
            "clone3",
            "start_thread",
            "worker_main"
        ]
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.profile.zoom, app.profile.sel);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Right);
    assert_eq!(
        app.profile.sel.last().unwrap(),
        "execute_query",
        "commit < execute_query"
    );
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("zoom: worker_main (depth 5)"), "{text}");
    snap!("profile_zoomed_80x24", text);
    key(&mut app, KeyCode::Char('/'));
    for c in "rows".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.profile.search.as_deref(), Some("rows"));
    let (text, buf) = screen(&app, 160, 50);
    // scan_rows (45) and sort_rows (15) of 84 a interval: 71.4%.
    assert!(
        text.contains("search \"rows\": 180 samples, 71.4% of shown"),
        "{text}"
    );
    snap!("profile_zoomed_searched_160x50", text);
    // Matches are bold and underlined: a cue without colour.
    let (y, x) = text
        .lines()
        .enumerate()
        .find_map(|(y, l)| l.find("scan_rows").map(|x| (y, l[..x].chars().count())))
        .unwrap();
    let m = buf[(x as u16, y as u16)].modifier;
    assert!(m.contains(Modifier::UNDERLINED | Modifier::BOLD), "{m:?}");
    // Esc clears the search, then zooms out one frame at a time.
    key(&mut app, KeyCode::Esc);
    assert!(app.profile.search.is_none());
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.profile.zoom.len(), 4);
    assert_eq!(
        app.profile.sel.last().unwrap(),
        "execute_query",
        "zooming out keeps the selection"
    );
}

#[test]
fn table_and_no_colour_cues() {
    let mut app = app_with_stacks(2);
    app.color = false;
    key(&mut app, KeyCode::Char('t'));
    let (text, _) = screen(&app, 80, 24);
    let first = text
        .lines()
        .find(|l| l.contains('%') && l.contains("scan_rows"));
    assert!(first.is_some(), "{text}");
    snap!("profile_table_80x24", text);
    key(&mut app, KeyCode::Char('t'));
    app.profile.grid = (80, 24);
    key(&mut app, KeyCode::Up);
    let (text, buf) = screen(&app, 80, 24);
    // The selected frame is reversed; the plateau (scan_rows: 54% self) carries ▲.
    let (y, x) = text
        .lines()
        .enumerate()
        .find_map(|(y, l)| l.find("dbengine-4242").map(|x| (y, l[..x].chars().count())))
        .unwrap();
    assert!(
        buf[(x as u16, y as u16)]
            .modifier
            .contains(Modifier::REVERSED)
    );
    assert!(text.contains("scan_rows▲"), "{text}");
}

#[test]
fn f_on_a_process_scopes_the_view_and_a_recording_without_stacks_says_so() {
    let mut app = app_with_stacks(2);
    app.handle(Action::GoTo(View::Main));
    // F acts on the selected row of the process table: the fixture's first process.
    let rows: Vec<u32> = app
        .visible_procs(app.frame.as_ref().unwrap())
        .iter()
        .map(|p| p.pid)
        .collect();
    let pid = rows[0];
    app.selected_pid = Some(pid);
    app.handle(Action::ProfileOf);
    assert_eq!(app.view, View::Profile);
    assert_eq!(app.profile.pid, Some(pid));
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains(&format!("pid {pid}")), "{text}");
    // A replay of a recording made without --profile.
    let sys = fixtures::system();
    let mut plain = App::new();
    plain.replay = Some(Default::default());
    plain.push_frame(derive(
        &sys,
        Some(&fixtures::incident(0, true)),
        &fixtures::incident(1, true),
    ));
    plain.handle(Action::GoTo(View::Profile));
    assert!(plain.requests.is_empty(), "no collector to ask in a replay");
    let (text, _) = screen(&plain, 80, 24);
    assert!(text.contains("this recording has no stacks"), "{text}");
}

#[test]
fn o_switches_to_off_cpu_time_for_a_chosen_process() {
    let mut app = app_with_stacks(2);
    app.requests.clear();
    // The whole machine: refused, with what to do instead, and nothing asked.
    key(&mut app, KeyCode::Char('o'));
    assert!(!app.profile.off_cpu);
    assert!(app.requests.is_empty());
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("off-CPU stacks need processes"), "{text}");
    // Scoped to the engine (F on it): off-CPU stacks of that process are asked for, and
    // the on-CPU window is dropped rather than mixed in.
    app.profile.pid = Some(4242);
    key(&mut app, KeyCode::Char('o'));
    assert!(app.profile.off_cpu);
    assert!(
        app.requests.iter().any(|r| matches!(
            r,
            Request::ProfileMode { off_cpu: true, pids: Some(p) } if p == &vec![4242]
        )),
        "{:?}",
        app.requests
    );
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("timing off-CPU stacks"), "{text}");
    // Frames of the old kind still in flight are not shown; off-CPU ones are.
    let sys = fixtures::system();
    let mut prev = fixtures::incident(2, true);
    for i in 3..=4 {
        let cur = fixtures::incident(i, true);
        let mut f = derive(&sys, Some(&prev), &cur);
        let p = if i == 3 {
            interval()
        } else {
            off_cpu_interval()
        };
        f.profile = Some(ProfileFrame::of(&p));
        app.push_frame(f);
        prev = cur;
    }
    let (text, _) = screen(&app, 80, 24);
    // 2.14 s off the CPU in one interval: 620+580+40+900 ms.
    assert!(
        text.contains("off-CPU time") && text.contains("2140.0 ms"),
        "{text}"
    );
    assert!(
        !text.contains("scan_rows▲"),
        "an on-CPU plateau leaked in:\n{text}"
    );
    snap!("profile_off_cpu_80x24", text);
    key(&mut app, KeyCode::Char('t'));
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("SELF ms") && text.contains("900.0"), "{text}");
    snap!("profile_off_cpu_table_80x24", text);
    // And back: on-CPU, for the whole machine again.
    key(&mut app, KeyCode::Char('t'));
    key(&mut app, KeyCode::Char('o'));
    assert!(!app.profile.off_cpu);
    assert!(app.requests.iter().any(|r| matches!(
        r,
        Request::ProfileMode {
            off_cpu: false,
            pids: None
        }
    )));
}

/// Issue 34, defect 9: `E` writes the stacks the view shows: zoomed into a frame, the
/// stacks through it (whole, so the file draws that subtree), not every stack; in the
/// table, every stack it lists. Named as every ttop file is, ttop-<UTC>.folded.
#[test]
fn export_writes_the_zoomed_subtree() {
    let dir = std::env::temp_dir().join(format!("ttop-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut app = app_with_stacks(3);
    app.profile.grid = (80, 24);
    for _ in 0..5 {
        key(&mut app, KeyCode::Up);
    }
    key(&mut app, KeyCode::Enter); // zoom: dbengine-4242;worker-*;clone3;start_thread;worker_main
    key(&mut app, KeyCode::Char('E'));
    assert!(app.profile.export);
    let t = 1_795_000_000.0; // 2026-11-18 11:06:40 UTC
    app.profile.export_to(&dir, t);
    let file = dir.join("ttop-20261118T110640Z.folded");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let zoom = "dbengine-4242;worker-*;clone3;start_thread;worker_main;";
    assert!(lines.iter().all(|l| l.starts_with(zoom)), "{text}");
    let total: u64 = lines
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total,
        3 * (45 + 15 + 12),
        "the workers' samples, all of them"
    );
    let msg = app.profile.message.clone().unwrap();
    assert!(msg.contains("through worker_main"), "{msg}");
    // The same stacks as pprof beside it (the format is checked by go tool pprof in
    // kernel_pprof): every frame name of the folded file is in its string table.
    let pb = std::fs::read(dir.join("ttop-20261118T110640Z.pb")).unwrap();
    for name in zoom.trim_end_matches(';').split(';') {
        assert!(
            pb.windows(name.len()).any(|w| w == name.as_bytes()),
            "{name} not in the pprof file"
        );
    }
    // In the table every stack is shown, and written (a second file that second: -1).
    key(&mut app, KeyCode::Char('t'));
    app.profile.export_to(&dir, t);
    let text = std::fs::read_to_string(dir.join("ttop-20261118T110640Z-1.folded")).unwrap();
    assert_eq!(text.lines().count(), 5, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
