//! The dashboard's behaviour over several frames, as a person sees it: the App fed with
//! fixture Samples and keys, the screen drawn on a fixed-size TestBackend.

mod common;
use common::screen::screen_text as screen;

use ttop::app::{Action, App, View};
use ttop::model::sample::{FilterSpec, Sample};
use ttop::model::{derive, fixtures};

/// The incident fixture at `secs`, watching only `pids` when given (as the collector
/// narrows the scan to the filter's processes).
fn sample(secs: u64, pids: Option<&[u32]>) -> Sample {
    let mut s = fixtures::incident(secs, true);
    if let Some(pids) = pids {
        s.filter = Some(FilterSpec {
            pids: pids.to_vec(),
            matched: pids.to_vec(),
            ..Default::default()
        });
        s.procs.retain(|p| pids.contains(&p.pid));
    }
    s
}

fn key(c: char) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(c))
}

/// Issue 34, defect 1: a filter typed in the UI narrows the table to its processes;
/// the processes it leaves out are not listed as exited, and a watched process that
/// really exits is marked, with its last live figures.
#[test]
fn a_ui_filter_marks_only_watched_processes_that_exit() {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut prev = sample(0, None);
    let mut push = |app: &mut App, cur: Sample| {
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    };
    for i in 1..=2 {
        push(&mut app, sample(i, None));
    }
    app.handle(Action::Filter);
    for c in "post".chars() {
        app.prompt_key(&key(c));
    }
    app.prompt_key(&ratatui::crossterm::event::KeyEvent::from(
        ratatui::crossterm::event::KeyCode::Enter,
    ));
    // The collector narrows the scan from the next Sample on.
    for i in 3..=5 {
        push(&mut app, sample(i, Some(&[1817])));
    }
    assert!(app.exited.is_empty(), "{:?}", app.exited.keys());
    let text = screen(&app, 120, 30);
    assert!(!text.contains("exited"), "{text}");
    assert!(text.contains("Processes 1 "), "{text}");
    // postgres exits: the next frame has eBPF's row for it, the one after none.
    let mut gone = sample(6, Some(&[1817]));
    gone.procs.clear();
    push(&mut app, gone);
    let mut after = sample(7, Some(&[1817]));
    after.procs.clear();
    push(&mut app, after);
    assert_eq!(app.exited.keys().copied().collect::<Vec<_>>(), vec![1817]);
    let text = screen(&app, 160, 30);
    let row = text
        .lines()
        .find(|l| l.starts_with("1817 "))
        .unwrap_or_else(|| panic!("no row for the exited process:\n{text}"));
    // Its last live figures (as the frame before it exited showed them), not zeros.
    for want in [
        "postgres",
        " X ",
        "12.0",
        "11.8",
        "63M",
        "exited",
        "last figures",
    ] {
        assert!(row.contains(want), "{want:?} missing from {row:?}");
    }
}

/// Issue 34, defect 2: the row of a process gone at the scan shows the scan's figures
/// as not measured ("-"), not as 0, and no figure anywhere reads -0.0.
#[test]
fn a_gone_process_shows_no_scan_figures_and_nothing_reads_negative_zero() {
    let sys = fixtures::system();
    let mut app = App::new();
    let (a, mut b) = (sample(1, Some(&[1817])), sample(2, Some(&[1817])));
    b.procs.clear();
    app.push_frame(derive(&sys, Some(&a), &b));
    let text = screen(&app, 160, 40);
    let row = text.lines().find(|l| l.starts_with("1817 ")).unwrap();
    let head = text.lines().find(|l| l.starts_with("PID ")).unwrap();
    let cell = |name: &str| {
        let i = head
            .split_whitespace()
            .position(|h| h.trim_end_matches(['▼', '▲']) == name)
            .unwrap_or_else(|| panic!("no {name} in {head}"));
        row.split_whitespace().nth(i).unwrap().to_string()
    };
    for (name, want) in [
        ("S", "X"),
        ("THR", "-"),
        ("R", "-"),
        ("SCAN%", "-"),
        ("RSS", "-"),
    ] {
        assert_eq!(cell(name), want, "{name}: {row}");
    }
    assert_ne!(cell("TRUE%"), "-", "TRUE% was measured: {row}");
    // Every figure of every view at -0.0 or a hair below zero.
    let f = app.frame.as_mut().unwrap();
    f.runnable.true_avg = Some(-0.0);
    f.runnable.undercount = None;
    for c in &mut f.cpus {
        (c.util, c.user, c.system, c.iowait) = (-0.0, -0.2, -1e-9, -0.0);
        c.runq_avg = Some(-0.0);
    }
    for p in &mut f.procs {
        p.cpu_pct_true = Some(-0.0);
        p.cpu_pct_scan = ttop::model::opt::Opt::some(-1e-12);
        p.scan_miss = ttop::model::opt::Opt::some(-0.0);
        p.runq_wait_ms = Some(-0.0001);
    }
    for &view in View::ALL {
        app.handle(Action::GoTo(view));
        for (w, h) in [(80, 24), (160, 50)] {
            let text = screen(&app, w, h);
            assert!(!has_negative_zero(&text), "{view:?} {w}x{h}:\n{text}");
        }
    }
}

/// Issue 34, defect 12: without eBPF no view shows a figure it cannot measure as 0:
/// each says it needs eBPF.
#[test]
fn without_ebpf_the_views_say_not_measured() {
    let sys = fixtures::system();
    let mut app = App::new();
    app.push_frame(derive(
        &sys,
        Some(&fixtures::incident(1, false)),
        &fixtures::incident(2, false),
    ));
    // The cgroup view's figures come from cgroupfs, which procfs-only mode reads whole
    // (tests/ui_cgroups.rs: it shows them, and says which two columns need eBPF).
    for &view in View::ALL.iter().filter(|v| **v != View::Cgroups) {
        app.handle(Action::GoTo(view));
        let text = screen(&app, 100, 30);
        // Below the header and the banner: the view itself.
        let body: Vec<&str> = text.lines().skip(2).collect();
        let body = body.join("\n");
        assert!(body.contains("eBPF"), "{view:?} does not say why:\n{text}");
        assert!(!has_negative_zero(&body), "{view:?}:\n{text}");
        if view != View::Main {
            assert!(
                !body.contains(" 0 ") && !body.contains(" 0/s") && !body.contains(" 0 contended"),
                "{view:?} shows a zero it did not measure:\n{text}"
            );
        }
    }
}

/// Whether `text` shows a negative zero: "-0", "-0.0", "-0.00" not followed by a digit.
fn has_negative_zero(text: &str) -> bool {
    text.match_indices("-0").any(|(i, _)| {
        let rest = text[i + 2..].trim_start_matches(['.', '0']);
        !rest.starts_with(|c: char| c.is_ascii_digit())
            && !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric())
    })
}

/// Issue 34, defect 15: x hides the rows of processes that exited (an apt run makes
/// dozens), and says how many are hidden; x again shows them.
#[test]
fn x_hides_the_rows_of_exited_processes() {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut b = sample(2, None);
    b.procs.retain(|p| p.pid != 912); // node_exporter exits too
    app.push_frame(derive(&sys, Some(&sample(1, None)), &b));
    let gone: Vec<u32> = app
        .frame
        .as_ref()
        .unwrap()
        .procs
        .iter()
        .filter(|p| p.gone)
        .map(|p| p.pid)
        .collect();
    assert_eq!(
        gone.len(),
        2,
        "sh (born and dead) and node_exporter: {gone:?}"
    );
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.parse::<u32>().is_ok())
            .map(str::to_string)
            .collect()
    };
    let before = screen(&app, 100, 30);
    for pid in &gone {
        assert!(rows(&before).contains(&pid.to_string()), "{before}");
    }
    app.key(&key('x'));
    let hidden = screen(&app, 100, 30);
    assert!(hidden.contains("(2 exited hidden: x)"), "{hidden}");
    for pid in &gone {
        assert!(!rows(&hidden).contains(&pid.to_string()), "{hidden}");
    }
    assert_eq!(rows(&hidden).len(), rows(&before).len() - 2);
    // The selection moves over the rows shown only.
    app.handle(Action::End);
    assert!(!gone.contains(&app.selected_pid.unwrap()));
    app.key(&key('x'));
    assert_eq!(rows(&screen(&app, 100, 30)), rows(&before));
}

/// Issue 34, defect 14: the column the table is sorted by is on screen however narrow
/// (X sorted by a MISS column that no screen showed), in place of one that wants a
/// wider screen.
#[test]
fn the_sorted_column_is_always_shown() {
    let sys = fixtures::system();
    let mut app = App::new();
    app.push_frame(derive(&sys, Some(&sample(1, None)), &sample(2, None)));
    for (k, title) in [
        ('X', "MISS%▼"),
        ('M', "RSS▼"),
        ('G', "GHOST/s▼"),
        ('W', "RQWAIT/s▼"),
    ] {
        app.key(&key(k));
        for w in [60, 80, 100] {
            let text = screen(&app, w, 24);
            let head = text.lines().find(|l| l.starts_with("PID ")).unwrap();
            assert!(head.contains(title), "{k} at {w}: {head}");
            assert!(head.chars().count() <= usize::from(w), "{head}");
        }
    }
}

/// The header keeps what matters now (the mode, losses, the filter) on a narrow screen:
/// the machine's description gives way first (the filter was cut off at 100 columns
/// once losses were shown).
#[test]
fn the_header_keeps_the_filter_on_narrow_screens() {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut f = derive(
        &sys,
        Some(&sample(1, Some(&[1817]))),
        &sample(2, Some(&[1817])),
    );
    f.drops_by_map.threads = 58;
    f.drops = 58;
    f.drops_by_map.sched_gaps = 2;
    app.push_frame(f);
    app.handle(Action::TogglePause);
    for w in [60, 80, 100, 200] {
        let text = screen(&app, w, 24);
        let head = text.lines().next().unwrap();
        for want in ["live eBPF", "lost 58", "watching pid 1817", "PAUSED"] {
            assert!(head.contains(want), "{want} at {w}: {head}");
        }
        if w == 200 {
            assert!(
                head.contains("db-prod-7") && head.contains("6.18.0-ttop"),
                "{head}"
            );
        }
    }
}
