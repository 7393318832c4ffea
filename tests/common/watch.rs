//! `ttop --json` watched around a workload run, and the helpers the user-stack tests
//! share to read its futex rows.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::*;

/// `ttop --json -d 1 -n N` started before `workload ARGS`; returns ttop's frames.
pub fn watch(n: usize, start: impl FnMut() -> Child) -> Vec<Value> {
    watch_env(n, &[], start)
}

pub fn watch_env(n: usize, env: &[(&str, &str)], mut start: impl FnMut() -> Child) -> Vec<Value> {
    let mut tt = Command::new(ttop_bin())
        .args(super::live_args(&[
            "--json",
            "-d",
            "1",
            "-n",
            &n.to_string(),
        ]))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ttop");
    let mut lines = BufReader::new(tt.stdout.take().unwrap()).lines();
    // The first frame: probes attached, a baseline taken.
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    // The rest are read as they come: unread, ~8 frames fill the pipe and ttop stops
    // sampling until the workload has ended.
    let reader = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .map(|l| serde_json::from_str::<Value>(&l).unwrap())
            .collect::<Vec<Value>>()
    });
    let mut w = start();
    assert!(
        wait_timeout(&mut w, Duration::from_secs(30)),
        "workload hung"
    );
    let mut frames = vec![first];
    frames.extend(reader.join().expect("frame reader"));
    assert!(tt.wait().unwrap().success(), "ttop failed");
    frames
}

/// `watch_env` around the child `start` spawns; returns the frames and the child's pid
/// (its first line's `pid=`).
pub fn watch_child(
    n: usize,
    env: &[(&str, &str)],
    mut start: impl FnMut() -> Child,
) -> (Vec<Value>, u64) {
    let mut pid = 0;
    let frames = watch_env(n, env, || {
        let mut w = start();
        pid = pid_of(&mut w);
        w
    });
    (frames, pid)
}

/// Start the program `bin` (a workload built or altered by the test) with its stdout
/// piped, for `watch_child`.
pub fn run_piped(bin: &Path, args: &[&str]) -> Child {
    Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn pid_of(w: &mut Child) -> u64 {
    let mut line = String::new();
    BufReader::new(w.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    parse_kv(&line)["pid"].parse().unwrap()
}

/// The row's stack (empty when it has none: the key is left out).
pub fn names(w: &Value) -> Vec<String> {
    w["stack"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// The most contended futex row of `pid` over the frames (the mutex).
pub fn hottest(frames: &[Value], pid: u64) -> Value {
    frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid && w["stack"].as_array().is_some_and(|s| !s.is_empty()))
        .max_by_key(|w| w["contended"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no futex row with a stack for {pid}"))
        .clone()
}

/// The chain `want` appears in `stack` in order, each frame right after the one before.
pub fn has_chain(stack: &[String], want: &[&str]) -> bool {
    let base = |f: &String| f.split('+').next().unwrap_or("").to_string();
    stack
        .windows(want.len())
        .any(|w| w.iter().zip(want).all(|(f, n)| base(f) == *n))
}

/// `user_frames.KEY` summed over the frames.
pub fn user_frames(frames: &[Value], key: &str) -> u64 {
    frames
        .iter()
        .map(|f| f["user_frames"][key].as_u64().unwrap_or(0))
        .sum()
}

/// Whether this glibc's debug file (libc6-dbg) is installed; without it a test that
/// needs glibc's names is skipped, never under CI (`.ci/deps` installs it).
pub fn require_glibc_debug() -> bool {
    if glibc_debug_installed() {
        return true;
    }
    assert!(!is_ci(), "CI installs libc6-dbg (.ci/deps)");
    eprintln!("skipped: no debug file for this glibc (apt-get install libc6-dbg)");
    false
}

fn glibc_debug_installed() -> bool {
    let o = Command::new("readelf")
        .args(["-n", "/lib/x86_64-linux-gnu/libc.so.6"])
        .output();
    let Ok(o) = o else { return false };
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .is_some_and(|id| {
            std::path::Path::new(&format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &id[..2],
                &id[2..]
            ))
            .exists()
        })
}
