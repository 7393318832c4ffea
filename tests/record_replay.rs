//! Recording and replay through the real binary: live `--json` and `replay --json` give
//! the same frames, a killed or signalled recorder leaves a readable file, and bad input
//! is a one-line error with a non-zero exit (never a panic).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("record-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn ttop(args: &[&str]) -> Output {
    Command::new(ttop_bin())
        .args(args)
        .output()
        .expect("run ttop")
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `ttop replay FILE --json`: must succeed; returns frames and stderr.
fn replay(file: &Path) -> (Vec<Value>, String) {
    let o = ttop(&["replay", file.to_str().unwrap(), "--json"]);
    let err = stderr_of(&o);
    assert!(o.status.success(), "replay failed: {err}");
    assert!(!err.contains("panicked"), "{err}");
    (lines(&o), err)
}

/// A failing command: non-zero exit and exactly one line on stderr.
fn assert_one_line_error(o: &Output, what: &str, needle: &str) {
    let err = stderr_of(o);
    assert!(!o.status.success(), "{what}: exit 0; stderr {err:?}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: not one line: {err:?}"
    );
    assert!(err.starts_with("ttop: "), "{what}: {err:?}");
    assert!(
        err.contains(needle),
        "{what}: expected {needle:?} in {err:?}"
    );
}

fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect()
}

fn record_no_bpf(name: &str, n: &str) -> PathBuf {
    let f = tmp(name);
    let o = ttop(&[
        "--no-bpf",
        "--json",
        "-n",
        n,
        "-d",
        "0.2",
        "--record",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    f
}

/// The acceptance test: a workload under real eBPF, printed live as JSON while the same
/// Samples are recorded; the replay prints the same frames, value for value.
#[test]
fn live_json_and_replay_json_agree_under_ebpf() {
    if !require_root("live_json_and_replay_json_agree_under_ebpf") {
        return;
    }
    let _g = kernel_lock();
    let f = tmp("roundtrip-bpf");
    let mut w = spawn_workload("churn", &["400", "2", "200"]);
    let live = ttop_spawn(&[
        "--json",
        "-n",
        "6",
        "-d",
        "0.5",
        "--record",
        f.to_str().unwrap(),
    ]);
    let live = live.frames(Duration::from_secs(30));
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(live.len(), 6);
    assert!(
        live.iter().all(|fr| fr["mode"] == "bpf"),
        "eBPF did not load: {:?}",
        live[0]["problems"]
    );
    let (replayed, err) = replay(&f);
    assert!(err.is_empty(), "warnings on a clean file: {err}");
    assert_eq!(seqs(&replayed), seqs(&live));
    for (a, b) in live.iter().zip(&replayed) {
        assert_eq!(a, b, "frame {} differs", a["seq"]);
    }
    let _ = std::fs::remove_file(&f);
}

#[test]
fn live_json_and_replay_json_agree_without_ebpf() {
    let f = tmp("roundtrip-procfs");
    let live = ttop_spawn(&[
        "--no-bpf",
        "--json",
        "-n",
        "4",
        "-d",
        "0.3",
        "--record",
        f.to_str().unwrap(),
    ]);
    let live = live.frames(Duration::from_secs(20));
    assert_eq!(live.len(), 4);
    let (replayed, err) = replay(&f);
    assert!(err.is_empty(), "warnings on a clean file: {err}");
    assert_eq!(live, replayed);
    let _ = std::fs::remove_file(&f);
}

/// kill -9 mid-run: every complete frame replays; a tail cut inside a frame is reported.
#[test]
fn killed_recorder_leaves_every_complete_frame() {
    let f = tmp("killed");
    let mut rec = Command::new(ttop_bin())
        .args(["record", "--no-bpf", "-d", "0.1", "-o", f.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    rec.kill().unwrap(); // SIGKILL
    rec.wait().unwrap();
    let (frames, err) = replay(&f);
    assert!(
        !err.contains("skipped") && !err.contains("damaged"),
        "{err}"
    );
    assert!(
        frames.len() >= 5,
        "only {} frames after 2 s at 0.1 s",
        frames.len()
    );
    let s = seqs(&frames);
    assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "gaps in {s:?}");

    // The same file cut in the middle of its last frame, as if killed mid-write.
    let bytes = std::fs::read(&f).unwrap();
    let cut = tmp("killed-cut");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let (cut_frames, err) = replay(&cut);
    assert!(err.contains("cut short"), "no cut warning: {err:?}");
    assert_eq!(cut_frames.len(), frames.len() - 1);
    assert_eq!(cut_frames[..], frames[..frames.len() - 1]);
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_file(&cut);
}

/// SIGINT, SIGTERM and SIGHUP each close the file cleanly (index and footer written),
/// and the file is private (0600).
#[test]
fn signals_finish_the_file_cleanly() {
    for (sig, name) in [
        (libc::SIGINT, "int"),
        (libc::SIGTERM, "term"),
        (libc::SIGHUP, "hup"),
    ] {
        let f = tmp(&format!("signal-{name}"));
        let mut rec = Command::new(ttop_bin())
            .args(["record", "--no-bpf", "-d", "0.2", "-o", f.to_str().unwrap()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(rec.id() as i32, sig) };
        assert!(
            wait_timeout(&mut rec, Duration::from_secs(5)),
            "SIG{name} did not stop it"
        );
        let out = rec.wait_with_output().unwrap();
        assert!(out.status.success(), "SIG{name}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("recorded"), "{}", stderr_of(&out));
        let bytes = std::fs::read(&f).unwrap();
        assert_eq!(
            &bytes[bytes.len() - 24..bytes.len() - 16],
            b"TTOPIDX\x89",
            "SIG{name}: no footer"
        );
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "recording mode {mode:o}");
        let (frames, err) = replay(&f);
        assert!(err.is_empty(), "SIG{name}: {err}");
        assert!(frames.len() >= 2, "SIG{name}: {} frames", frames.len());
        let _ = std::fs::remove_file(&f);
    }
}

#[test]
fn duration_stops_the_recorder() {
    let f = tmp("duration");
    let mut rec = Command::new(ttop_bin())
        .args([
            "record",
            "--no-bpf",
            "-d",
            "0.25",
            "--duration",
            "1s",
            "-o",
            f.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_timeout(&mut rec, Duration::from_secs(10)),
        "--duration 1s did not stop"
    );
    let (frames, _) = replay(&f);
    assert!(
        (3..=5).contains(&frames.len()),
        "{} frames in 1 s at 0.25 s",
        frames.len()
    );
    let _ = std::fs::remove_file(&f);
}

#[test]
fn record_never_overwrites() {
    let f = tmp("exists");
    std::fs::write(&f, b"precious").unwrap();
    let o = ttop(&[
        "record",
        "--no-bpf",
        "-o",
        f.to_str().unwrap(),
        "--duration",
        "1",
    ]);
    assert_one_line_error(&o, "existing file", "cannot create");
    assert_eq!(std::fs::read(&f).unwrap(), b"precious");
    let _ = std::fs::remove_file(&f);
}

#[test]
fn bad_files_are_one_line_errors() {
    let good = record_no_bpf("bad-src", "2");
    let bytes = std::fs::read(&good).unwrap();
    let case = |name: &str, content: &[u8]| {
        let p = tmp(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let mut newer = bytes.clone();
    newer[8] = 2;
    let mut noise = vec![0u8; 4096];
    let mut x: u32 = 12345;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        ("empty", case("bad-empty", b""), "empty file"),
        ("random", case("bad-random", &noise), "not a ttop recording"),
        ("text", case("bad-text", b"hello\n"), "not a ttop recording"),
        ("newer", case("bad-newer", &newer), "newer ttop"),
        ("header cut", case("bad-header", &bytes[..30]), "truncated"),
        ("directory", dir.to_path_buf(), "directory"),
        ("missing", dir.join("no-such-recording"), "No such file"),
    ];
    for (what, path, needle) in &cases {
        let o = ttop(&["replay", path.to_str().unwrap(), "--json"]);
        assert_one_line_error(&o, what, needle);
        assert!(o.stdout.is_empty(), "{what}: printed frames");
    }
    for (_, p, _) in &cases[..5] {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_file(&good);
}

/// A damaged record is reported and skipped; the frames around it still replay.
#[test]
fn damaged_frame_is_skipped_with_a_warning() {
    let f = record_no_bpf("damaged-src", "5");
    let (clean, _) = replay(&f);
    assert_eq!(clean.len(), 5);
    let mut bytes = std::fs::read(&f).unwrap();
    // Damage the payload of the last Sample record: it sits just before the index.
    let footer = bytes.len() - 24;
    let index_at = u64::from_le_bytes(bytes[footer + 8..footer + 16].try_into().unwrap()) as usize;
    bytes[index_at - 3] ^= 0x55;
    let d = tmp("damaged");
    std::fs::write(&d, &bytes).unwrap();
    let (frames, err) = replay(&d);
    assert!(
        err.contains("skipped") && err.contains("checksum"),
        "{err:?}"
    );
    assert_eq!(frames[..], clean[..4]);
    // Damage the file header's host name instead: the whole file is refused.
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[25] ^= 0x01;
    std::fs::write(&d, &bytes).unwrap();
    let o = ttop(&["replay", d.to_str().unwrap(), "--json"]);
    assert_one_line_error(&o, "damaged header", "damaged file header");
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_file(&d);
}
