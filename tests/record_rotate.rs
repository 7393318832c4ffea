//! `ttop record --dir`: rotation by the clock, files closed with their index, the oldest
//! deleted past --keep, replay of the directory gives every frame once and in order
//! across file boundaries; a second recorder, a retention that would delete the file
//! being written and an unwritable directory are refused; a full disk stops the
//! recording with a message and loses no finished file.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::*;
use serde_json::Value;
use ttop::record::Reader;
use ttop::record::rotate::{is_rotated_name, list};

fn tmpdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("rotate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn sigterm(child: &mut std::process::Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(
        wait_timeout(child, Duration::from_secs(10)),
        "recorder did not stop"
    );
}

fn replay_json(path: &Path) -> Vec<Value> {
    let o = Command::new(ttop_bin())
        .args(["replay", path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "replay {}: {err}", path.display());
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect()
}

fn one_line_error(o: &Output, what: &str, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{what}: exit 0");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err:?}");
    assert!(err.contains(needle), "{what}: {err:?}");
}

#[test]
fn rotates_closes_deletes_the_oldest_and_replays_across_files() {
    let dir = tmpdir("cycle");
    let started = SystemTime::now();
    let mut rec = Command::new(ttop_bin())
        .args([
            "record",
            "--dir",
            dir.to_str().unwrap(),
            "--rotate",
            "3s",
            "--keep",
            "10s",
            "-d",
            "0.5",
            "--no-bpf",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A second recorder on the same directory is refused, naming the first one's pid.
    std::thread::sleep(Duration::from_millis(1500));
    let o = Command::new(ttop_bin())
        .args(["record", "--dir", dir.to_str().unwrap(), "--no-bpf"])
        .output()
        .unwrap();
    one_line_error(&o, "second recorder", &format!("pid {}", rec.id()));
    // Every file but the one being written is finished with its index, at every moment.
    let t0 = Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    while t0.elapsed() < Duration::from_secs(17) {
        let files = list(&dir).unwrap();
        for f in files.iter().rev().skip(1) {
            let r = Reader::open(f).unwrap();
            assert!(r.indexed(), "{} was rotated but has no index", f.display());
        }
        seen.extend(files);
        std::thread::sleep(Duration::from_millis(500));
    }
    sigterm(&mut rec);
    let mut err = String::new();
    std::io::Read::read_to_string(rec.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(rec.wait().unwrap().success(), "{err}");
    let files = list(&dir).unwrap();
    assert!(
        seen.len() >= 5,
        "17 s at --rotate 3s made only {} files",
        seen.len()
    );
    // The oldest went: everything left ended within --keep (plus a rotation of slack).
    let gone: Vec<_> = seen.iter().filter(|f| !files.contains(f)).collect();
    assert!(
        !gone.is_empty(),
        "nothing deleted past --keep 10s: {seen:?}"
    );
    assert!(
        gone.iter().all(|g| g < &&files[0]),
        "a newer file was deleted before an older one"
    );
    assert!(
        files.len() <= 6,
        "kept {} files of 3 s under --keep 10s",
        files.len()
    );
    for f in &files {
        assert!(is_rotated_name(f.file_name().unwrap().to_str().unwrap()));
        let r = Reader::open(f).unwrap();
        assert!(r.indexed(), "{} not closed cleanly", f.display());
        let start = r.header().start_wall_ns;
        assert_eq!(
            r.entries()[0].wall_ns,
            start,
            "named and headed by its first Sample"
        );
        let m = std::fs::metadata(f).unwrap();
        assert!(m.modified().unwrap() >= started);
    }
    // Replay of the directory: every frame once, in order, across the boundaries.
    let total: usize = files.iter().map(|f| Reader::open(f).unwrap().len()).sum();
    let frames = replay_json(&dir);
    assert_eq!(frames.len(), total - 1, "the first Sample only primes");
    let s = seqs(&frames);
    assert!(
        s.windows(2).all(|w| w[1] == w[0] + 1),
        "not consecutive: {s:?}"
    );
    // Each boundary is crossed: the first frame of a later file is derived from the
    // last Sample of the file before, so its interval is one tick, not a gap.
    for f in &frames {
        let iv = f["interval_s"].as_f64().unwrap();
        assert!(
            (0.3..0.9).contains(&iv),
            "interval {iv} at seq {}",
            f["seq"]
        );
    }
    // A file in the directory plays from there on.
    let from_second = replay_json(&files[1]);
    assert_eq!(from_second.last(), frames.last());
    let skipped = Reader::open(&files[0]).unwrap().len();
    assert_eq!(from_second.len(), total - skipped - 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_directories_and_retention_are_refused() {
    let run = |args: &[&str]| Command::new(ttop_bin()).args(args).output().unwrap();
    let dir = tmpdir("bad");
    let d = dir.to_str().unwrap();
    one_line_error(
        &run(&[
            "record", "--dir", d, "--rotate", "1h", "--keep", "10m", "--no-bpf",
        ]),
        "keep < rotate",
        "would be deleted",
    );
    one_line_error(
        &run(&["record", "--dir", "/proc/ttop-cannot-be-here", "--no-bpf"]),
        "unwritable",
        "cannot",
    );
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("plain");
    std::fs::write(&file, b"x").unwrap();
    one_line_error(
        &run(&["record", "--dir", file.to_str().unwrap(), "--no-bpf"]),
        "a file",
        "cannot",
    );
    // A directory without recordings is not a recording.
    one_line_error(&run(&["replay", d, "--json"]), "empty dir", "directory");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A full disk (a 256 KB tmpfs) stops the recording with a message; every finished file
/// stays complete and indexed, and the one being written replays up to where it stopped.
#[test]
fn a_full_disk_stops_the_recording_and_keeps_finished_files() {
    if !require_root("a_full_disk_stops_the_recording_and_keeps_finished_files") {
        return;
    }
    let dir = tmpdir("full");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs", d])
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    let _mounted = Unmount(dir.clone());
    let o = Command::new(ttop_bin())
        .args([
            "record",
            "--dir",
            d,
            "--rotate",
            "1s",
            "--keep",
            "1h",
            "-d",
            "0.1",
            "--no-bpf",
            "--duration",
            "120",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success(), "a full disk exited 0: {err}");
    assert!(
        err.contains("No space left") && err.contains("recording stopped"),
        "{err}"
    );
    let files = list(&dir).unwrap();
    assert!(
        files.len() >= 2,
        "the disk filled before a rotation: {files:?}"
    );
    let mut total = 0;
    for (i, f) in files.iter().enumerate() {
        let r = Reader::open(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // Every finished file is complete; the one being written when the disk filled
        // keeps its complete frames.
        assert!(
            r.indexed() || i == files.len() - 1,
            "{} lost its index",
            f.display()
        );
        total += r.len();
    }
    let frames = replay_json(&dir);
    assert_eq!(frames.len(), total - 1);
    let s = seqs(&frames);
    assert!(
        s.windows(2).all(|w| w[1] == w[0] + 1),
        "not consecutive: {s:?}"
    );
}

/// Unmounts (and removes) the test's tmpfs however the test ends.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
