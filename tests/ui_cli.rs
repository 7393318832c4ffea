//! The command line as a person meets it: the real binary started the ways people start
//! it by mistake, and what it says back.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::ttop_bin;

/// Run ttop with `args`, stdin from /dev/null and stdout and stderr captured (no
/// terminal anywhere, as `ssh HOST ttop` without -t, or `ttop | less`).
fn run(args: &[&str]) -> Output {
    Command::new(ttop_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A recording of `n` fixture Samples in a file of its own.
fn recording(name: &str, n: u64) -> std::path::PathBuf {
    use ttop::model::fixtures;
    use ttop::record::Writer;
    use ttop::record::writer::header_for;
    let p = std::env::temp_dir().join(format!("ttop-ui-cli-{name}-{}.ttop", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let header = header_for(&fixtures::system(), Duration::from_secs(1), None);
    let mut w = Writer::create(&p, &header).unwrap();
    for i in 0..n {
        w.append(&fixtures::incident(i, true)).unwrap();
    }
    w.finish().unwrap();
    p
}

/// Issue 34, defect 5: without a terminal the dashboard says it needs one and what to
/// use instead, not "No such device or address (os error 6)".
#[test]
fn the_dashboard_without_a_terminal_says_what_to_do() {
    let o = run(&["--no-bpf"]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    for want in ["needs a terminal", "ssh -t", "--json", "record"] {
        assert!(e.contains(want), "{want:?} missing: {e}");
    }
    assert!(!e.contains("os error"), "{e}");
    let p = recording("noterm", 3);
    let o = run(&["replay", p.to_str().unwrap()]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("needs a terminal") && e.contains("--json"),
        "{e}"
    );
    let _ = std::fs::remove_file(&p);
}

/// Issue 34, defect 6: `-n 0` and `-d -1` are refused with what is wrong with them
/// (`-n 0` printed a frame, `-d -1` was an "unexpected argument").
#[test]
fn a_zero_count_and_a_negative_interval_are_refused_clearly() {
    let o = run(&["--json", "-n", "0", "--no-bpf"]);
    let e = stderr(&o);
    assert!(!o.status.success() && o.stdout.is_empty(), "{e}");
    assert!(e.contains("COUNT is 1 or more"), "{e}");
    for args in [
        &["-d", "-1", "--json", "-n", "1", "--no-bpf"][..],
        &["record", "-o", "/nonexistent/x", "-d", "-1"],
    ] {
        let o = run(args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?}: {e}");
        assert!(
            e.contains("interval must be between 0.1 and 3600 seconds, got '-1'"),
            "{args:?}: {e}"
        );
    }
}

/// Issue 34, defect 6: `-p TID` of a thread is refused, naming its process (it was
/// watched as if it were a process).
#[test]
fn a_thread_id_is_refused_with_its_process() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (hold, wait) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = wait.recv();
    });
    let tid = rx.recv().unwrap().to_string();
    let o = run(&["--json", "-n", "1", "--no-bpf", "-p", &tid]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    let me = std::process::id();
    assert!(
        e.contains(&format!("{tid} is a thread of process {me}"))
            && e.contains(&format!("-p {me}")),
        "{e}"
    );
    drop(hold);
    t.join().unwrap();
}

/// Issue 34, defect 6: a --comm name longer than the kernel keeps (15 characters) is
/// cut as the kernel cuts it, so the process is found, and said so; a name no process
/// has is said too.
#[test]
fn comm_names_are_matched_as_the_kernel_keeps_them() {
    let dir = std::env::temp_dir().join(format!("ttop-ui-cli-comm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let long = "sleepy-long-name-for-ttop";
    let bin = dir.join(long);
    // A symlink, not a copy: the kernel names a process after the path it was exec'd
    // by, and a copy's write descriptor, inherited for an instant by a child another
    // test thread forks, made the exec fail with ETXTBSY.
    let _ = std::fs::remove_file(&bin);
    std::os::unix::fs::symlink("/bin/sleep", &bin).unwrap();
    let mut child = Command::new(&bin).arg("30").spawn().unwrap();
    // The parent runs on before exec has renamed the child (a vfork is released first).
    let comm = format!("/proc/{}/comm", child.id());
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&comm).unwrap_or_default().trim() != "sleepy-long-nam" {
        assert!(t0.elapsed() < Duration::from_secs(5), "never renamed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = run(&["--json", "-n", "1", "-d", "0.2", "--no-bpf", "--comm", long]);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("keeps 15 characters") && e.contains("'sleepy-long-nam'"),
        "{e}"
    );
    assert!(!e.contains("no process has this name"), "{e}");
    let frame: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    let pids: Vec<u64> = frame["procs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect();
    assert!(pids.contains(&u64::from(child.id())), "{pids:?}");
    let o = run(&[
        "--json",
        "-n",
        "1",
        "-d",
        "0.2",
        "--no-bpf",
        "--comm",
        "no-such-ttop",
    ]);
    let e = stderr(&o);
    assert!(
        o.status.success() && e.contains("no process has this name now"),
        "{e}"
    );
}

/// Issue 34, defect 7: `ttop profile` without the privileges eBPF needs says so in one
/// line of its own, without libbpf's raw messages before it: as an ordinary user (the
/// check before loading) and as root without capabilities (the load fails, libbpf's
/// messages are kept for the explanation).
#[test]
fn profile_without_privileges_says_so_in_one_line() {
    if Command::new("setpriv").arg("--help").output().is_err() {
        assert!(!common::is_ci(), "setpriv (util-linux) missing under CI");
        eprintln!("SKIPPED: setpriv not installed");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = ttop_bin();
    let ways: Vec<Vec<&str>> = if root {
        vec![
            vec!["--reuid=nobody", "--regid=nogroup", "--clear-groups"],
            vec!["--bounding-set=-all", "--inh-caps=-all"],
        ]
    } else {
        vec![vec!["--inh-caps=-all"]]
    };
    for way in ways {
        let o = Command::new("setpriv")
            .args(&way)
            .arg(&bin)
            .args(["profile", "--duration", "1", "-o", "/dev/null"])
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        let e = stderr(&o);
        assert!(!o.status.success(), "{way:?}: {e}");
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 1, "{way:?}: {e}");
        assert!(
            lines[0].starts_with("ttop: ") && lines[0].contains("root"),
            "{way:?}: {e}"
        );
    }
}

/// Issue 34, defect 13: `record` says how many frames it recorded as `replay --json`
/// prints them (it said 17 samples where the replay printed 16 frames).
#[test]
fn record_counts_the_frames_replay_prints() {
    let p = std::env::temp_dir().join(format!("ttop-ui-cli-rec-{}.ttop", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let file = p.to_str().unwrap();
    let o = run(&[
        "record",
        "-o",
        file,
        "--duration",
        "1.2",
        "-d",
        "0.3",
        "--no-bpf",
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    let said: usize = e
        .split("recorded ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {e:?}"));
    assert!(e.contains(" frames ("), "{e}");
    let o = run(&["replay", file, "--json"]);
    let printed = String::from_utf8_lossy(&o.stdout).lines().count();
    assert_eq!(said, printed, "{e}");
    assert!(printed >= 3, "{printed}");
    let _ = std::fs::remove_file(&p);
}

/// Issue 34, defect 10: the man page names no page that is not generated (it listed
/// ttop-record(1) and the like), writes optional values as [=VALUE], and has KEYS (every
/// key of the keymap), ENVIRONMENT (NO_COLOR and every TTOP_* variable the source
/// reads), EXIT STATUS and EXAMPLES; troff reads it without a warning.
#[test]
fn the_man_page_is_whole() {
    let o = run(&["man"]);
    assert!(o.status.success());
    let man = String::from_utf8(o.stdout).unwrap();
    assert!(man.is_ascii(), "troff without preconv warns on other bytes");
    assert!(
        !man.contains("(1)\n") && !man.contains("ttop\\-record"),
        "{man}"
    );
    for sec in [
        ".SH SUBCOMMANDS",
        ".SH KEYS",
        ".SH ENVIRONMENT",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
        ".SH \"TTOP RECORD\"",
    ] {
        let plain = sec.replace('"', "");
        assert!(man.contains(sec) || man.contains(&plain), "no {sec}");
    }
    assert!(
        man.contains("\\fB--profile\\fR[=\\fIHZ\\fR]"),
        "optional value"
    );
    assert!(
        !man.contains("\\fB--profile\\fR \\fIHZ"),
        "--profile HZ is wrong"
    );
    for b in ttop::app::keymap::KEYMAP
        .iter()
        .chain(ttop::app::replay_keys::REPLAY_KEYMAP)
    {
        let words: String = b.help.chars().take(20).collect();
        assert!(man.contains(&words), "KEYS lacks {:?}", b.help);
    }
    // Every TTOP_* variable ttop reads (collect::overrides, read once at start) is
    // documented.
    let vars = ttop::collect::overrides::Overrides::NAMES;
    for v in vars.iter().copied().chain(["NO_COLOR"]) {
        assert!(
            man.contains(&format!("\\fB{v}\\fR")),
            "ENVIRONMENT lacks {v}"
        );
    }
    // troff's own check, where groff is installed (.ci/deps does not install it).
    if let Ok(mut g) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        g.stdin.take().unwrap().write_all(man.as_bytes()).unwrap();
        let out = g.wait_with_output().unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(warnings.trim().is_empty(), "{warnings}");
    }
}
