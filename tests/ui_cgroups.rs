//! The cgroup view (key 7) as insta snapshots of a fixed-size TestBackend, fed from the
//! incident fixture with its cgroups (src/model/cgroup/fixtures.rs), findings judged as
//! live. Stored in the top-level snapshots/ folder.

mod common;
use common::screen::screen;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ttop::app::{Action, App, View};
use ttop::model::cgroup::cgroups_into;
use ttop::model::findings::Window;
use ttop::model::{derive, fixtures};

/// An App that has seen `n` intervals of the incident with its cgroups, on the cgroup view.
fn cgroup_app(bpf: bool, n: u64) -> App {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut window = Window::new();
    let sample = |i| {
        let mut s = fixtures::incident(i, bpf);
        cgroups_into(&mut s, i);
        s
    };
    let mut prev = sample(0);
    for i in 1..=n {
        let cur = sample(i);
        let mut f = derive(&sys, Some(&prev), &cur);
        window.push(&mut f);
        app.push_frame(f);
        prev = cur;
    }
    app.key(&KeyEvent::new(KeyCode::Char('7'), KeyModifiers::NONE));
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
fn cgroups_120x30() {
    let mut app = cgroup_app(true, 5);
    assert_eq!(app.view, View::Cgroups, "key 7 opens the cgroup view");
    // Select the container: its figures in full below the tree.
    app.handle(Action::Down);
    app.handle(Action::Down);
    let (text, _) = screen(&app, 120, 30);
    for want in [
        "docker 3f2a9c1b7d04",
        "postgresql.service",
        "session-3.scope",
        "tiflash(4242)",
        "RUN",
    ] {
        assert!(text.contains(want), "{want} on screen:\n{text}");
    }
    snap!("cgroups_120x30", text);
}

#[test]
fn cgroups_procfs_only_80x24() {
    let app = cgroup_app(false, 5);
    let (text, _) = screen(&app, 80, 24);
    assert!(text.contains("need eBPF"), "says what needs eBPF:\n{text}");
    assert!(text.contains("postgresql.service"));
    snap!("cgroups_procfs_only_80x24", text);
}
