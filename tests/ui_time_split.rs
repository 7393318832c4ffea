//! The time view (8): one bar per process of where its threads' interval went, from
//! fixture Samples whose threads' parts differ; a procfs-only session says why it is
//! empty instead of drawing zeros. Under the bars, the threads blocked at the tick.

mod common;
use common::screen::screen;

use ttop::app::view::View;
use ttop::app::{Action, App};
use ttop::model::{derive, fixtures};

fn app(bpf: bool, n: u64) -> App {
    let sys = fixtures::system();
    let mut app = App::new();
    let mut prev = fixtures::incident(0, bpf);
    for i in 1..=n {
        let cur = fixtures::incident(i, bpf);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    app.handle(Action::GoTo(View::Time));
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
fn time_view_120x30() {
    let app = app(true, 5);
    let (text, _) = screen(&app, 120, 30);
    // Every process row's bar fills its width with the parts' letters, and the rows
    // come busiest-or-blocked first.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains('%')
                && l.split_whitespace()
                    .next()
                    .is_some_and(|w| w.trim_start_matches('│').parse::<u32>().is_ok())
        })
        .collect();
    assert!(rows.len() >= 3, "process rows:\n{text}");
    let busy: Vec<f64> = rows
        .iter()
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert!(
        busy.windows(2).all(|w| w[0] >= w[1]),
        "sorted by BUSY: {busy:?}\n{text}"
    );
    // Blocked now: longest first, each with the frame that says why and its callers.
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s}:\n{text}"));
    assert!(at("Blocked now") < at("5289") && at("5289") < at("2820") && at("2820") < at("5288"));
    assert!(
        text.contains("folio_wait_bit_common      filemap_fault < __do_fault"),
        "{text}"
    );
    snap!("time_view_120x30", text);
}

#[test]
fn time_view_without_ebpf_says_why() {
    let app = app(false, 5);
    let (text, _) = screen(&app, 100, 20);
    assert!(text.contains("needs eBPF"), "{text}");
    assert!(
        !text.contains("Blocked now"),
        "not measured, so not listed: {text}"
    );
    snap!("time_view_procfs_100x20", text);
}
