//! The IPI/TLB and latency views, as insta
//! snapshots at 80x24 and 160x50, fed from fixture Samples.

mod common;
use common::screen::screen_text as screen;

use ttop::app::{Action, App, View};
use ttop::model::{derive, fixtures, irq};

fn sample(secs: u64) -> ttop::model::Sample {
    let mut s = fixtures::incident(secs, true);
    fixtures::irq_into(&mut s, secs);
    fixtures::latency_into(&mut s, secs);
    s
}

fn app(view: View) -> App {
    let sys = fixtures::system();
    let mut app = App::new();
    app.color = false;
    let mut prev = sample(0);
    for i in 1..=5 {
        let cur = sample(i);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    app.handle(Action::GoTo(view));
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
fn ipi_view_80x24() {
    let text = screen(&app(View::Ipi), 80, 24);
    assert!(text.contains("flush_tlb_func"), "{text}");
    snap!("ipi_80x24", text);
}

#[test]
fn ipi_view_160x50() {
    snap!("ipi_160x50", screen(&app(View::Ipi), 160, 50));
}

/// Linux 6.1: IPIs sent are not measured ('-', never 0), shootdowns come from a kprobe,
/// and the view's footer says so; the banner sums the kernel's gaps up in one line.
#[test]
fn ipi_view_on_linux_6_1() {
    let sys = fixtures::system();
    let mut app = App::new();
    app.color = false;
    let sample = |secs| {
        let mut s = fixtures::incident(secs, true);
        irq::fixture_6_1_into(&mut s, secs);
        s
    };
    let mut prev = sample(0);
    for i in 1..=5 {
        let cur = sample(i);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    app.handle(Action::GoTo(View::Ipi));
    let text = screen(&app, 100, 30);
    assert!(
        text.contains("IPIs sent, by purpose and sender: - not measured"),
        "{text}"
    );
    assert!(text.contains("through kprobe/flush_tlb_func"), "{text}");
    assert!(
        text.contains("this kernel: 1 figure not measured, 2 by older hooks (ttop probe says why)"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .unwrap();
    assert!(
        row.trim_end().ends_with("-       -       -"),
        "sent columns: {row}"
    );
    snap!("ipi_linux_6_1_100x30", text);
}

/// x86 by default: IPIs received are the kernel's /proc/interrupts counts; the
/// call/call-single split is counted only while the IPI view is open, so an interval
/// without it shows '-' in CALL1/s (never 0) and the total in CALL/s. The live view
/// asks for the split once when opened and lets it go once when left.
#[test]
fn the_ipi_view_asks_for_the_split_and_shows_its_absence() {
    use ttop::collect::Request;
    let sys = fixtures::system();
    let mut app = App::new();
    app.color = false;
    let sample = |secs| {
        let mut s = fixtures::incident(secs, true);
        irq::fixture_into(&mut s, secs);
        // The split not attached.
        s.irq.as_mut().unwrap().measured.recv = false;
        s
    };
    let mut prev = sample(0);
    for i in 1..=3 {
        let cur = sample(i);
        app.push_frame(derive(&sys, Some(&prev), &cur));
        prev = cur;
    }
    app.handle(Action::GoTo(View::Ipi));
    app.handle(Action::SortNext);
    let text = screen(&app, 160, 50);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .unwrap_or_else(|| panic!("CPU 0's row:\n{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    // CPU, CALL/s (the kernel's CAL: 2440 + 100 a CPU), CALL1/s.
    assert_eq!(&cols[..3], ["0", "2540", "-"], "{row}");
    let asked: Vec<bool> = app
        .requests
        .iter()
        .filter_map(|r| match r {
            Request::IpiSplit(on) => Some(*on),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [true], "opened, once");
    app.handle(Action::GoTo(View::Latency));
    app.handle(Action::GoTo(View::Main));
    let asked = app
        .requests
        .iter()
        .filter(|r| matches!(r, Request::IpiSplit(false)))
        .count();
    assert_eq!(asked, 1, "left, once");
}

#[test]
fn latency_view_80x24() {
    let text = screen(&app(View::Latency), 80, 24);
    // The worst thread comes first, with its 48 ms wait.
    assert!(text.contains("48.00ms"), "{text}");
    snap!("latency_80x24", text);
}

#[test]
fn latency_view_160x50() {
    snap!("latency_160x50", screen(&app(View::Latency), 160, 50));
}

#[test]
fn latency_view_sorts_by_p99() {
    let mut a = app(View::Latency);
    a.handle(Action::SortNext);
    snap!("latency_by_p99_80x24", screen(&a, 80, 24));
}
