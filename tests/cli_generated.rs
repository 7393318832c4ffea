//! `ttop completions SHELL` and `ttop man` come from the clap definitions: the bash
//! script parses (`bash -n`), every subcommand and its flags are offered, and the man
//! page has a section for each subcommand and says what the keys and the mouse do.
//! Also: record takes --comm as live mode does.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;

fn ttop_out(args: &[&str]) -> String {
    let o = Command::new(ttop_bin()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Run `shell -n` on `script` when the shell is installed; false when it is not.
fn parses(shell: &str, script: &str) -> Option<bool> {
    let mut child = Command::new(shell)
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    if !o.status.success() {
        eprintln!("{shell} -n: {}", String::from_utf8_lossy(&o.stderr));
    }
    Some(o.status.success())
}

#[test]
fn completions_parse_and_offer_every_subcommand() {
    let bash = ttop_out(&["completions", "bash"]);
    assert_eq!(
        parses("bash", &bash),
        Some(true),
        "bash -n rejects the completions"
    );
    for word in [
        "record",
        "replay",
        "serve",
        "completions",
        "man",
        "--rotate",
        "--keep",
        "--metrics",
        "--listen",
        "--comm",
    ] {
        assert!(bash.contains(word), "bash completions lack {word}");
    }
    // zsh and fish: generated, and checked by their own parser where installed.
    let zsh = ttop_out(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef ttop"));
    if let Some(ok) = parses("zsh", &zsh) {
        assert!(ok, "zsh -n rejects the completions");
    }
    let fish = ttop_out(&["completions", "fish"]);
    assert!(fish.contains("complete -c ttop"));
    if let Some(ok) = parses("fish", &fish) {
        assert!(ok, "fish -n rejects the completions");
    }
    // Replay is not offered flags that mean nothing for a recording.
    let replay_help = ttop_out(&["replay", "--help"]);
    for f in ["--no-bpf", "--rt", "--delay"] {
        assert!(!replay_help.contains(f), "replay --help offers {f}");
    }
}

#[test]
fn man_page_covers_every_subcommand() {
    let man = ttop_out(&["man"]);
    assert!(
        man.starts_with(".ie") || man.starts_with(".TH"),
        "not roff: {}",
        &man[..40.min(man.len())]
    );
    for sub in ["PROBE", "RECORD", "REPLAY", "SERVE", "COMPLETIONS", "MAN"] {
        assert!(
            man.contains(&format!(".SH \"TTOP {sub}\"")),
            "no section for {sub}"
        );
    }
    assert!(man.contains("\\fB--keep\\fR \\fIAGE\\fR"));
    // A flag takes no value in the page.
    assert!(man.contains("\\fB--no-bpf\\fR\n"));
    // The keys, then the mouse: what a click and the wheel do, and Shift to select text.
    let keys = man.find(".SH KEYS").expect("a KEYS section");
    let mouse = man
        .find("The mouse, live and in replay")
        .expect("the mouse");
    assert!(keys < mouse && mouse < man.find(".SH ENVIRONMENT").unwrap());
    for what in ["\\fBclick\\fR", "\\fBwheel\\fR", "\\fBShift\\fR"] {
        assert!(man[mouse..].contains(what), "no {what} in the mouse's part");
    }
}

#[test]
fn record_takes_comm_like_live_mode() {
    let f = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("comm-{}.ttop", std::process::id()));
    let _ = std::fs::remove_file(&f);
    let o = Command::new(ttop_bin())
        .args([
            "record",
            "-o",
            f.to_str().unwrap(),
            "--no-bpf",
            "--comm",
            "cargo",
            "-d",
            "0.2",
            "--duration",
            "0.6",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(ttop_bin())
        .args(["replay", f.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    let frames: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!frames.is_empty());
    for fr in &frames {
        assert_eq!(fr["filter"], "comm cargo", "{}", fr["filter"]);
        for p in fr["procs"].as_array().unwrap() {
            assert_eq!(p["comm"], "cargo");
        }
    }
    let _ = std::fs::remove_file(&f);
}
