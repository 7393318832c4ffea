//! Item 7: recording size per frame, idle and busy, and seek time in a long recording.

use std::process::{Command, Stdio};

use super::micro::{self, Shape};
use super::procs::{Workload, median, ttop_bin};
use super::{Opts, Row, mb, say, secs, tmp};

/// `ttop record` for `secs` at -d 1 into a fresh file; (keyframe sizes, delta sizes).
fn record_for(name: &str, rec_secs: f64) -> (Vec<u64>, Vec<u64>) {
    let path = tmp(name);
    let _ = std::fs::remove_file(&path);
    let st = Command::new(ttop_bin())
        .args(["record", "-d", "1", "--duration"])
        .arg(format!("{rec_secs}"))
        .arg("-o")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !st.is_ok_and(|s| s.success()) {
        return (vec![], vec![]);
    }
    micro::record_sizes(&path)
}

fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<u64>() as f64 / v.len() as f64
    }
}

fn bytes_row(key: &str, what: String, sizes: &(Vec<u64>, Vec<u64>)) -> Row {
    let every = ttop::record::format::KEYFRAME_EVERY as f64;
    let (k, d) = (mean(&sizes.0), mean(&sizes.1));
    let per = (k + (every - 1.0) * d) / every;
    Row::new(7, key, what).ttop(format!(
        "{:.1} KB/frame (keyframe {:.1} KB, delta {:.1} KB; 1 keyframe in {every:.0}) ≈ {:.1} MB/hour",
        per / 1e3,
        k / 1e3,
        d / 1e3,
        per * 3600.0 / 1e6
    ))
}

/// Item 7: recording size per frame and seek time in a long recording.
pub fn recording(o: &Opts) -> Vec<Row> {
    say("7: recording size and seek");
    let r = o.record_secs;
    let idle = record_for("idle.ttop", r);
    let mut w = Workload::spawn(
        "bench_threads",
        &[
            "2000".into(),
            format!("{}", r + 40.0),
            "100".into(),
            "32".into(),
        ],
    );
    w.wait_for("started=", secs(60.0));
    let busy = record_for("busy.ttop", r);
    w.kill();
    let path = tmp("hour.ttop");
    let shape = Shape {
        procs: 200,
        threads_per: 5,
    };
    let bytes = micro::write_recording(&path, o.seek_frames, shape);
    let reps = if o.quick { 1 } else { 5 };
    let (mut opens, mut seeks) = (vec![], vec![]);
    for _ in 0..reps {
        let (a, b) = micro::seek_middle(&path);
        opens.push(a.as_secs_f64() * 1e3);
        seeks.push(b.as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_file(&path);
    let hours = o.seek_frames as f64 / 3600.0;
    vec![
        bytes_row(
            "rec-idle",
            format!("`ttop record -d 1` for {r:.0} s on this machine with no workload (eBPF on)"),
            &idle,
        ),
        bytes_row(
            "rec-2000",
            format!(
                "`ttop record -d 1` for {r:.0} s with 2,000 more threads, each waking every 100 ms"
            ),
            &busy,
        ),
        Row::new(
            7,
            "rec-seek",
            format!(
                "replay: open a {hours:.2}-hour recording ({} Samples at 1 s of a synthetic \
                 1,000-thread machine, {}) and seek to its middle: decode two Samples and derive \
                 the Frame (median of {reps})",
                o.seek_frames,
                mb(bytes / 1024)
            ),
        )
        .ttop(format!(
            "open {:.1} ms + seek {:.1} ms",
            median(&opens),
            median(&seeks)
        )),
    ]
}
