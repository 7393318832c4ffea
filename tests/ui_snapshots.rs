//! Screens as insta snapshots of a fixed-size TestBackend, fed from fixture Samples
//! (src/model/fixtures.rs). Stored in the top-level snapshots/ folder.

mod common;
use common::screen::screen;

use ratatui::style::Color;

use ttop::app::{Action, App};
use ttop::model::{derive, fixtures};

/// An App that has seen `n` intervals of the incident fixture.
fn incident_app(bpf: bool, n: u64) -> App {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut prev = fixtures::incident(0, bpf);
    for i in 1..=n {
        let cur = fixtures::incident(i, bpf);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    app
}

macro_rules! snap {
    ($name:expr, $text:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn overview_80x24_undercount() {
    let app = incident_app(true, 30);
    let (text, buf) = screen(&app, 80, 24);
    assert!(
        text.contains("undercount"),
        "the undercount line is on screen:\n{text}"
    );
    // The undercount line is highlighted (alert style), not plain text.
    let y = text.lines().position(|l| l.contains("undercount")).unwrap() as u16;
    let x = text
        .lines()
        .nth(y as usize)
        .unwrap()
        .find("undercount")
        .unwrap() as u16;
    assert_eq!(buf[(x, y)].bg, Color::Red);
    snap!("overview_80x24", text);
}

#[test]
fn overview_160x50() {
    let app = incident_app(true, 60);
    let (text, _) = screen(&app, 160, 50);
    snap!("overview_160x50", text);
}

#[test]
fn procfs_only_banner_80x24() {
    let app = incident_app(false, 5);
    let (text, _) = screen(&app, 80, 24);
    assert!(
        text.contains("eBPF off"),
        "banner says what failed:\n{text}"
    );
    assert!(text.contains("procfs-only"));
    snap!("procfs_only_80x24", text);
}

#[test]
fn procfs_only_banner_160x50() {
    let app = incident_app(false, 5);
    let (text, _) = screen(&app, 160, 50);
    snap!("procfs_only_160x50", text);
}

#[test]
fn help_screen_80x24() {
    let mut app = incident_app(true, 3);
    app.screen = (80, 24);
    app.handle(Action::Help);
    // More keys than two columns of 80x24 hold: pages, turned with PgDn.
    let pages = ttop::ui::help::pages(&app, 80, 24);
    assert!(pages > 1, "{pages}");
    let mut all = String::new();
    for page in 1..=pages {
        let (text, _) = screen(&app, 80, 24);
        assert!(text.contains(&format!("page {page}/{pages}")), "{text}");
        if page == 1 {
            snap!("help_80x24", text.clone());
        } else {
            snap!(format!("help_80x24_page{page}"), text.clone());
        }
        all.push_str(&text);
        app.handle(Action::PageDown);
        assert!(app.show_help, "PgDn turns the page, it does not close");
    }
    // Generated from the keymap: every binding of the view, its key and the start of
    // its text (the profile view's own keys are listed there).
    for b in ttop::app::keymap::bindings_for(app.view) {
        let words: String = b.help.chars().take(12).collect();
        assert!(
            all.contains(b.label) && all.contains(&words),
            "help lists '{}'\n{all}",
            b.help
        );
    }
    // Then what each column and word on the screen means (issue 34, defect 14: GHOST/s,
    // RQWAIT, lost and sched skips were not decodable on screen).
    assert!(
        all.contains("The columns and words on this screen:"),
        "{all}"
    );
    for (name, help) in ttop::ui::help::columns(&app) {
        // The name, then the first word of its meaning on the same row.
        let first = help.split_whitespace().next().unwrap();
        assert!(
            all.lines()
                .any(|l| l.contains(&format!("{name} ")) && l.contains(first)),
            "{name}: {help}\n{all}"
        );
    }
    for word in [
        "GHOST/s",
        "RQWAIT/s",
        "MISS%",
        "lost",
        "sched skips",
        "scan R",
    ] {
        assert!(
            ttop::ui::help::columns(&app)
                .iter()
                .any(|(n, _)| *n == word),
            "{word}"
        );
    }
    app.handle(Action::PageUp);
    assert!(app.show_help);
    app.handle(Action::Back);
    assert!(!app.show_help, "Esc closes it");
    // In the thread view, the thread table's columns.
    app.handle(Action::Open);
    app.handle(Action::Help);
    let cols = ttop::ui::help::columns(&app);
    assert!(cols.iter().any(|(n, _)| *n == "LATmax"), "{cols:?}");
}

#[test]
fn hostile_names_are_inert() {
    let app = incident_app(true, 3);
    let (text, buf) = screen(&app, 160, 50);
    assert!(
        text.contains("\\x1b[2Jevil\\x07"),
        "escaped comm shown:\n{text}"
    );
    for cell in buf.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "a control character reached the screen"
        );
    }
}

#[test]
fn sorted_by_scan_and_selection() {
    let mut app = incident_app(true, 3);
    app.handle(Action::SortBy(ttop::app::sort::ProcSort::CpuScan));
    app.handle(Action::Down);
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("SCAN%▼"));
    snap!("overview_sorted_scan_80x24", text);
}

/// The column chooser over the overview, THR turned off: the table behind it lacks THR,
/// and the chooser marks it.
#[test]
fn column_chooser_turns_columns_off() {
    use ttop::model::procs::fields::ProcField;
    let mut app = incident_app(true, 3);
    app.hidden_cols = vec![ProcField::Threads];
    let (text, _) = screen(&app, 80, 24);
    assert!(!text.contains("THR ") && text.contains("NEW/s"), "{text}");
    app.handle(Action::Columns);
    app.col_chooser = Some(6);
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("[ ] THR"), "{text}");
    snap!("column_chooser_80x24", text);
}

#[test]
fn tiny_terminals_do_not_panic() {
    let app = incident_app(true, 3);
    for (w, h) in [(1, 1), (10, 3), (40, 12), (79, 23), (300, 100)] {
        let _ = screen(&app, w, h);
    }
}

#[test]
fn thread_view_80x24() {
    let mut app = incident_app(true, 3);
    app.handle(Action::Open); // the top row: tiflash
    assert_eq!(app.thread_pid, Some(4242));
    let (text, _) = screen(&app, 80, 24);
    assert!(
        text.contains("3000 short-lived threads named DeltaMerge-*"),
        "{text}"
    );
    snap!("threads_80x24", text);
    app.handle(Action::Back);
    assert_eq!(app.thread_pid, None);
}

#[test]
fn thread_view_160x50() {
    let mut app = incident_app(true, 3);
    // Per-thread figures from the latency and futex collectors.
    let f = app.frame.as_mut().unwrap();
    let lat = |tid, max_us| ttop::model::latency::LatThreadRow {
        tid,
        pid: 4242,
        max_us,
        ..Default::default()
    };
    f.latency = Some(ttop::model::latency::LatencyFrame {
        threads: vec![lat(4242, 1830.0), lat(5289, 12_000.0), lat(5288, 51_400.0)],
        ..Default::default()
    });
    let fut = |tid, total_wait_ms| ttop::model::contention::frame::FutexThreadFrame {
        tid,
        pid: 4242,
        total_wait_ms,
        ..Default::default()
    };
    f.contention.futex_threads = vec![fut(4242, 412.0), fut(5289, 12_500.0)];
    app.handle(Action::Open);
    let (text, _) = screen(&app, 160, 50);
    // Durations in the unit that reads (issue 34, defect 3: "12kus" before).
    for want in ["1.83ms", "12.00ms", "51.40ms", "412ms", "12.50s"] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(!text.contains("kus") && !text.contains("kms"), "{text}");
    snap!("threads_160x50", text);
}

#[test]
fn filter_prompt_narrows_as_you_type() {
    let mut app = incident_app(true, 3);
    app.handle(Action::Filter);
    for c in "post".chars() {
        app.prompt_key(&key(c));
    }
    let (text, _) = screen(&app, 80, 24);
    assert!(
        text.contains("postgres") && !text.contains("tiflash"),
        "{text}"
    );
    snap!("filter_prompt_80x24", text);
    app.prompt_key(&ratatui::crossterm::event::KeyEvent::from(
        ratatui::crossterm::event::KeyCode::Enter,
    ));
    assert_eq!(app.filter_text.as_deref(), Some("post"));
    let req = app
        .requests
        .pop()
        .expect("a filter request for the collector");
    let ttop::collect::Request::SetFilter(Some(spec)) = req else {
        panic!("{req:?}")
    };
    assert_eq!(spec.pids, vec![1817]);
    assert_eq!(spec.comm, None, "'post' is not an exact comm");
}

fn key(c: char) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(c))
}

#[test]
fn small_and_wide_terminals() {
    let app = incident_app(true, 10);
    let (small, _) = screen(&app, 40, 12);
    assert!(
        small.contains("tiflash"),
        "the process table survives at 40x12:\n{small}"
    );
    snap!("overview_40x12", small);
    let (wide, _) = screen(&app, 200, 60);
    snap!("overview_200x60", wide);
}

#[test]
fn no_color_uses_no_colours() {
    let mut app = incident_app(true, 10);
    app.color = false;
    let (text, buf) = screen(&app, 80, 24);
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            Color::Reset,
            "a colour reached the screen with NO_COLOR"
        );
        assert_eq!(cell.bg, Color::Reset);
    }
    snap!("overview_no_color_80x24", text);
}

#[test]
fn exited_process_keeps_its_last_figures() {
    let sys = fixtures::system();
    let mut app = App::new();
    let spec = ttop::model::sample::FilterSpec {
        pids: vec![1817],
        matched: vec![1817],
        ..Default::default()
    };
    let mut prev = fixtures::incident(0, true);
    prev.filter = Some(spec.clone());
    for i in 1..=3u64 {
        let mut cur = fixtures::incident(i, true);
        cur.filter = Some(spec.clone());
        if i == 3 {
            cur.procs.retain(|p| p.pid != 1817); // it exited
        }
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    // Remembered with its last live row (the scan's figures too), not eBPF's row of
    // the interval it exited in (tests/ui_app.rs follows it on screen).
    let last = &app.exited[&1817].1;
    assert!(
        !last.gone && last.rss_kb > 0 && last.cpu_pct_scan.get().is_some_and(|v| v > 0.0),
        "{last:?}"
    );
    let (text, _) = screen(&app, 120, 30);
    assert!(text.contains("exited this interval"), "{text}");
}

/// The footer lists as many keys as fit, and always `? help` (the way to the rest): on
/// every view, at 80 and 40 columns.
#[test]
fn the_footer_keeps_help_on_narrow_screens() {
    for &view in ttop::app::View::ALL {
        let mut app = incident_app(true, 3);
        app.handle(Action::GoTo(view));
        for (w, h) in [(80, 24), (40, 12)] {
            let (text, _) = screen(&app, w, h);
            let last = text.lines().last().unwrap();
            assert!(last.ends_with("? help"), "{view:?} at {w}x{h}: {last:?}");
        }
    }
}

/// The ceiling on ttop's own eBPF cost has shed kernel-lock stacks to 1 in 8 and the
/// futex user stacks: the header says so, beside ttop's own figures.
#[test]
fn header_says_what_the_cost_ceiling_shed() {
    use ttop::model::own::{BpfWindow, OwnSample, ProgRun};
    use ttop::model::shed::Shed;
    let sys = fixtures::system();
    let with_own = |i: u64| {
        let mut s = fixtures::incident(i, true);
        s.own = Some(OwnSample {
            cpu_ns: i * 4_000_000,
            rss_bytes: 31 << 20,
            bpf: Some(BpfWindow {
                end_mono_ns: s.mono_ns,
                window_ns: 1_000_000_000,
                progs: vec![ProgRun {
                    name: "ttop_contention_begin".into(),
                    run_time_ns: 21_000_000,
                    run_cnt: 90_000,
                }],
            }),
            bpf_why: None,
            shed: Some(Shed {
                budget_pct: 3.0,
                kernel_stacks_1_in: Some(8),
                user_stacks_off: true,
                since_mono_ns: Some(s.mono_ns - 6_000_000_000),
                decided_at_pct: 4.2,
            }),
        });
        s
    };
    let mut app = App::new();
    let mut prev = with_own(0);
    for i in 1..=3 {
        let cur = with_own(i);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    let (text, _) = screen(&app, 120, 24);
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("shed: kernel stacks 1/8, user stacks off"),
        "{head}"
    );
    snap!("header_cost_ceiling_120x24", text);
}
