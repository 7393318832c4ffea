//! The futex and kernel-lock views and the overview's findings lines, as insta
//! snapshots at 80x24 and 160x50, from the fixture Samples (model::contention::fixture
//! on top of model::fixtures::incident). Stored in the top-level snapshots/ folder.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use ttop::app::{Action, App, View};
use ttop::model::{contention, derive, fixtures};

fn app_in(view: View) -> App {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        x.contention = Some(contention::fixture(s));
        x
    };
    let mut app = App::new();
    app.push_frame(derive(&sys, Some(&sample(9)), &sample(10)));
    app.handle(Action::GoTo(view));
    app
}

fn text(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| ttop::ui::render(f, app)).unwrap();
    let buf = term.backend().buffer();
    (0..h)
        .map(|y| {
            let row: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            format!("{}\n", row.trim_end())
        })
        .collect()
}

macro_rules! snap {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn futexes_80x24() {
    let t = text(&app_in(View::Futexes), 80, 24);
    assert!(t.contains("CONT/s▼") && t.contains("EAGAIN/s"), "{t}");
    assert!(
        t.contains("runtime.stop"),
        "the caller column is on screen:\n{t}"
    );
    snap!("futexes_80x24", t);
}

/// `--no-futex` (or a kernel without the futex hooks): the futex view says the figures
/// are not measured, not that nothing happened, and the process table's futex column
/// shows no zeros.
#[test]
fn futexes_not_measured_80x24() {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        let mut c = contention::fixture(s);
        c.futex_ok = false;
        (c.futexes, c.futex_threads, c.futex_procs) = (Vec::new(), Vec::new(), Vec::new());
        x.contention = Some(c);
        x
    };
    let fr = derive(&sys, Some(&sample(9)), &sample(10));
    assert!(!fr.contention.contention_measured.futex);
    assert!(fr.contention.contention_measured.locks);
    assert!(fr.procs.iter().all(|p| p.futex_calls.get().is_none()));
    let mut app = App::new();
    app.push_frame(fr);
    app.handle(Action::GoTo(View::Futexes));
    let t = text(&app, 80, 24);
    assert!(t.contains("not measured"), "{t}");
    assert!(!t.contains("no futex calls this interval"), "{t}");
    snap!("futexes_not_measured_80x24", t);
}

/// The default: waits that slept, from the scheduler, without the per-call hooks. The
/// words and their waits are there; the EAGAIN, wake and call columns show "-" (not
/// measured), never 0, and the header ranks processes by waits that slept and says calls
/// were not counted in this interval.
#[test]
fn futexes_slept_only_160x50() {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        let mut c = contention::fixture(s);
        c.futex_calls_ok = false;
        // The scheduler programs say who woke the waits: postgres's shared word is
        // woken by another process (named inertly), tiflash's mutex by its own threads.
        c.futex_wakers_ok = true;
        let pg = c.futexes.iter_mut().find(|f| f.tgid == 1817).unwrap();
        pg.woken_other = 100 * s;
        pg.waker_tgid = 31337;
        x.contention = Some(c);
        x
    };
    let fr = derive(&sys, Some(&sample(9)), &sample(10));
    assert!(fr.contention.contention_measured.futex);
    assert!(!fr.contention.contention_measured.futex_calls);
    assert!(fr.contention.contention_measured.futex_wakers);
    let mut app = App::new();
    app.push_frame(fr);
    app.handle(Action::GoTo(View::Futexes));
    let t = text(&app, 160, 50);
    assert!(
        t.contains("slept/s: ") && t.contains("calls not counted"),
        "{t}"
    );
    assert!(!t.contains("futex calls/s"), "{t}");
    let row = t
        .lines()
        .find(|l| l.contains("7f3a2c001040"))
        .unwrap_or_else(|| panic!("the mutex row:\n{t}"));
    assert!(row.contains(" - "), "unmeasured columns show '-': {row}");
    assert!(row.contains(" own "), "woken by its own threads: {row}");
    let pg = t
        .lines()
        .find(|l| l.contains("7f11c8a2e0d8"))
        .unwrap_or_else(|| panic!("the postgres row:\n{t}"));
    assert!(
        pg.contains(" 31337 \\x1b[2Jevil"),
        "another process, inert: {pg}"
    );
    snap!("futexes_slept_only_160x50", t);
}

/// The live futex view asks the collector to hook every futex call while it is open,
/// once, and to unhook them when it is left.
#[test]
fn the_futex_view_asks_for_calls_while_open() {
    use ttop::collect::Request;
    let asked = |app: &App| -> Vec<bool> {
        app.requests
            .iter()
            .filter_map(|r| match r {
                Request::FutexCalls(on) => Some(*on),
                _ => None,
            })
            .collect()
    };
    let mut app = App::new();
    app.handle(Action::GoTo(View::Futexes));
    app.handle(Action::SortNext);
    assert_eq!(asked(&app), [true], "opened, once");
    app.handle(Action::GoTo(View::Locks));
    app.handle(Action::GoTo(View::Main));
    assert_eq!(asked(&app), [true, false], "left, once");
}

#[test]
fn futexes_160x50_sorted_by_wait() {
    let mut app = app_in(View::Futexes);
    app.handle(Action::SortNext);
    let t = text(&app, 160, 50);
    assert!(t.contains("WAIT/s▼"), "{t}");
    snap!("futexes_160x50", t);
}

#[test]
fn locks_80x24() {
    let t = text(&app_in(View::Locks), 80, 24);
    assert!(t.contains("rwsem:W*") && t.contains("__vm_munmap"), "{t}");
    assert!(t.contains("31999 secagent held 4242 tiflash"), "{t}");
    snap!("locks_80x24", t);
}

#[test]
fn locks_160x50() {
    let t = text(&app_in(View::Locks), 160, 50);
    assert!(
        t.contains("pid 31999 (secagent) held pid 4242 (tiflash)'s mmap_lock 640ms; 3 threads of 4242 waited 1.04s"),
        "{t}"
    );
    snap!("locks_160x50", t);
}

/// Thread churn beside the fixture: 80 page-table locks of another process, one wait a
/// second each. The table keeps its 64 rows with the most wait and its title counts the
/// rest (summed by caller in the JSON's locks_rest).
#[test]
fn locks_cut_from_the_table_are_counted_160x50() {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        let mut c = contention::fixture(s);
        c.locks.extend((0..80u64).map(|i| contention::LockSample {
            lock: 0xffff_8880_1000_0000 + i * 0x1000,
            tgid: 7001,
            flags: 1,
            contended: s,
            wait_ns: 2_000 * s,
            max_wait_ns: 2_000,
            comm: "churn".into(),
            caller: "__pte_offset_map_lock+0xa0".into(),
            kstack: Some(1000 + i as i64),
            ..Default::default()
        }));
        x.contention = Some(c);
        x
    };
    let mut app = App::new();
    let f = derive(&sys, Some(&sample(9)), &sample(10));
    let rest = &f.contention.locks_rest;
    assert_eq!(rest.len(), 1, "{rest:?}");
    let (shown, cut) = (f.contention.locks.len() as u64, rest[0].locks);
    assert_eq!(shown, 64);
    app.push_frame(f);
    app.handle(Action::GoTo(View::Locks));
    let t = text(&app, 160, 50);
    assert!(
        t.contains(&format!("Kernel locks: 64 +{cut} not listed ({cut} waits)")),
        "{t}"
    );
    snap!("locks_churn_160x50", t);
}

/// The overview after `n` intervals judged by a findings Window, as live does.
fn judged_app(n: u64) -> App {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        x.contention = Some(contention::fixture(s));
        x
    };
    let mut app = App::new();
    let mut w = ttop::model::findings::Window::new();
    for s in 1..=n {
        let mut f = derive(&sys, Some(&sample(s - 1)), &sample(s));
        w.push(&mut f);
        app.push_frame(f);
    }
    app
}

#[test]
fn overview_findings_80x24() {
    let app = judged_app(10);
    let fr = app.frame.as_ref().unwrap();
    let kinds: Vec<_> = fr.findings.iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&"mmap_lock_stall"), "{kinds:?}");
    let t = text(&app, 80, 24);
    // Two lines at 80x24, the most severe first, marked for the evidence key.
    let first = t.lines().nth(1).unwrap();
    assert!(
        first.starts_with("›[") && first.contains(fr.findings[0].kind),
        "{t}"
    );
    let n = fr.findings.len();
    assert!(
        t.lines()
            .nth(2)
            .unwrap()
            .starts_with(&format!(" +{} [", n - 2)),
        "{t}"
    );
    // No more "contention" for a futex that nobody queues on.
    assert!(!t.contains("contention: futex"), "{t}");
    snap!("overview_findings_80x24", t);
}

#[test]
fn overview_findings_160x50() {
    let app = judged_app(10);
    let t = text(&app, 160, 50);
    let n = app.frame.as_ref().unwrap().findings.len().min(5);
    let shown = t
        .lines()
        .filter(|l| ttop::ui::findings::is_finding_line(l))
        .count();
    assert_eq!(shown, n, "{t}");
    snap!("overview_findings_160x50", t);
}

#[test]
fn the_evidence_key_opens_the_marked_findings_view() {
    let mut app = judged_app(10);
    let fr = app.frame.clone().unwrap();
    for f in fr.findings.iter().take(3) {
        app.handle(Action::Evidence);
        assert_eq!(app.view, ttop::app::View::from(f.view), "{}", f.kind);
    }
}

/// Issue 34, defect 8: a futex word of a process the scan did not list (it exited
/// during the interval) is named as the summary line and the findings name it, from
/// eBPF's row for the process, not left blank.
#[test]
fn futex_words_of_exited_processes_are_named() {
    let sys = fixtures::system();
    let sample = |s: u64| {
        let mut x = fixtures::incident(s, true);
        x.contention = Some(contention::fixture(s));
        x
    };
    let (a, mut b) = (sample(9), sample(10));
    b.procs.retain(|p| p.pid != 912); // node_exporter exited: eBPF's row names it
    let fr = derive(&sys, Some(&a), &b);
    let row = |fr: &ttop::model::Frame| {
        fr.contention
            .futexes
            .iter()
            .find(|r| r.pid == 912)
            .map(|r| r.comm.clone())
    };
    // The scan has no row for it; the frame names it from the previous scan.
    assert_eq!(row(&fr).as_deref(), Some("node_exporter"));
    let mut app = App::new();
    app.push_frame(fr);
    app.handle(Action::GoTo(View::Futexes));
    let t = text(&app, 160, 50);
    let line = t.lines().find(|l| l.starts_with("912 ")).unwrap();
    assert!(line.contains("node_exporter"), "{t}");
}

/// Issue 34, defect 11: at 80 columns a finding is cut before its advice; the cut
/// line says so (…f), and f shows every finding whole, with its figures, scrolling with
/// the arrows; any other key closes it and does what it does.
#[test]
fn f_reads_every_finding_whole() {
    let mut app = judged_app(10);
    let fr = app.frame.clone().unwrap();
    let t = text(&app, 80, 24);
    let cut: Vec<&str> = t
        .lines()
        .filter(|l| ttop::ui::findings::is_finding_line(l))
        .collect();
    assert!(!cut.is_empty());
    assert!(
        cut.iter().all(|l| l.ends_with(ttop::ui::findings::CUT)),
        "{t}"
    );
    app.handle(Action::Findings);
    assert!(app.show_findings);
    let t = text(&app, 80, 24);
    assert!(
        t.contains(&format!("findings ({})", fr.findings.len())),
        "{t}"
    );
    snap!("findings_overlay_80x24", t.clone());
    // Tall enough for all of it: every sentence is there whole, and its figures.
    let tall = text(&app, 80, 200);
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let body: String = tall
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ");
    let body = flat(&body);
    for f in &fr.findings {
        assert!(body.contains(&flat(&f.summary)), "{}:\n{tall}", f.kind);
        let (k, _) = f.figures.iter().next().unwrap();
        assert!(body.contains(k), "{k}");
    }
    // Arrows scroll (no further than the end), another key closes and acts.
    app.screen = (80, 24);
    app.handle(Action::Down);
    app.handle(Action::Down);
    assert_eq!(app.findings_scroll, 2);
    let scrolled = text(&app, 80, 24);
    assert_ne!(scrolled, t);
    for _ in 0..50 {
        app.handle(Action::PageDown);
    }
    let (rows, shown) = ttop::ui::findings::overlay_rows(&app, 80, 24);
    assert_eq!(app.findings_scroll, rows - shown, "stops at the end");
    app.handle(Action::GoTo(View::Locks));
    assert!(!app.show_findings);
    assert_eq!(app.view, View::Locks);
}
