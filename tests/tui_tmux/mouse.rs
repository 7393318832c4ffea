//! The mouse as tmux reports it (SGR mode), live and in replay: a click on a column's
//! title sorts by it and a second one reverses it, as in htop; and mouse reporting is on
//! only while the dashboard is, off again after q, Ctrl-Z and SIGTERM, so the shell gets
//! no reports.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::tmux::*;

/// Where `title` is in the process table's header (column, row), counted from 0.
fn header_cell(screen: &str, title: &str) -> (usize, usize) {
    screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("PID "))
        .and_then(|(y, l)| l.find(title).map(|b| (l[..b].chars().count(), y)))
        .unwrap_or_else(|| panic!("no {title} in the header:\n{screen}"))
}

/// Wait until the pane's program has turned mouse reporting on (or off).
fn wait_mouse(t: &Tmux, on: bool) {
    let t0 = Instant::now();
    while t.mouse_on() != on {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "mouse reporting not {}; screen:\n{}",
            if on { "on" } else { "off" },
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_header_click_sorts_and_mouse_reporting_ends_with_the_dashboard() {
    let Some(t) = Tmux::shell(100, 30) else {
        return;
    };
    assert!(!t.mouse_on(), "the shell itself asked for the mouse");
    t.line(&ttop_ui_cmd());
    let s = t.wait_for("Processes");
    wait_mouse(&t, true);
    // Clicks and the wheel, not every motion of the pointer (it would wake ttop).
    assert!(!t.mouse_motion(), "ttop asked for pointer motion reports");
    // Without eBPF the table starts sorted by SCAN%.
    assert!(s.contains("SCAN%▼"), "{s}");
    let (x, y) = header_cell(&s, "COMM");
    t.click(x + 1, y);
    let s = t.wait_for("sorted by COMM ▼");
    assert!(s.contains("COMM▼") && !s.contains("SCAN%▼"), "{s}");
    // The same title again: the other way.
    t.click(x, y);
    t.wait_for("COMM▲");

    // Ctrl-Z gives the shell a terminal without mouse reports; fg takes them again.
    t.keys(&["C-z"]);
    t.wait_for("Stopped");
    wait_mouse(&t, false);
    t.line("fg");
    t.wait_for("Processes");
    wait_mouse(&t, true);
    t.keys(&["q"]);
    t.wait_without("Processes");
    wait_mouse(&t, false);
    t.line("echo RESULT $?");
    t.wait_for("RESULT 0");

    // A signal's stop restores the terminal the same way.
    t.line("clear");
    t.line(&ttop_ui_cmd());
    t.wait_for("Processes");
    wait_mouse(&t, true);
    Command::new("kill")
        .args(["-TERM", &ttop_pid(&t).to_string()])
        .status()
        .unwrap();
    t.wait_without("Processes");
    wait_mouse(&t, false);
}

/// Replay takes the same clicks: the recording's table sorts by the title clicked.
#[test]
fn a_header_click_sorts_a_replay() {
    let file = std::env::temp_dir().join(format!("ttop-tmux-mouse-{}.ttop", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let ok = Command::new(crate::common::ttop_bin())
        .args(["--no-bpf", "-d", "0.2", "record", "--duration", "1", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let cmd = format!(
        "{} replay {}",
        crate::common::ttop_bin().display(),
        file.display()
    );
    let Some(t) = Tmux::start(&cmd, 100, 30) else {
        return;
    };
    let s = t.wait_for("Processes");
    wait_mouse(&t, true);
    let (x, y) = header_cell(&s, "PID");
    t.click(x, y);
    t.wait_for("sorted by PID ▼");
    t.click(x + 1, y);
    t.wait_for("PID▲");
    t.keys(&["q"]);
    t.wait_for("TTOP-EXITED 0");
    wait_mouse(&t, false);
    let _ = std::fs::remove_file(&file);
}
