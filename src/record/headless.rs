//! `ttop record -o FILE`: collect without a dashboard (nohup, tmux, systemd) until the
//! duration is up or a signal (SIGINT, SIGTERM, SIGHUP) arrives, then close the file
//! cleanly. A one-line status goes to stderr every few seconds when it is a terminal.

use std::io::Write;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::writer::{Writer, header_for};
use crate::cli::{Cli, RecordArgs};
use crate::collect::{Collector, Config, collector};
use crate::model::Sample;

const STATUS_EVERY: Duration = Duration::from_secs(5);

pub fn record(cli: &Cli, cfg: &Config, args: &RecordArgs) -> Result<()> {
    let mut cfg = cfg.clone();
    if !args.pids.is_empty() {
        crate::collect::filter::check_pids(&args.pids).map_err(anyhow::Error::msg)?;
        cfg.pids = Some(args.pids.clone());
    }
    let pids = cfg.pids.clone();
    let sys = collector::system_info();
    let mut writer = Writer::create(&args.output, &header_for(&sys, cli.delay, pids))?;
    let c = Collector::new(&cfg);
    for p in &c.mode().problems {
        eprintln!("ttop: {p}");
    }
    let stop = crate::stop::Stop::on_signals()?;
    let (tx, rx) = sync_channel::<Sample>(4);
    let handle = collector::spawn(c, cli.delay, cli.rt, tx, stop.clone());
    // SAFETY: isatty only inspects the descriptor.
    let tty = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
    let t0 = Instant::now();
    let mut last_status = t0;
    let mut first: Option<Sample> = None;
    let mut result = Ok(());
    while let Ok(s) = rx.recv() {
        if let Err(e) = writer.append(&s) {
            result = Err(e);
            break;
        }
        let base = first.get_or_insert_with(|| s.clone());
        let done = args
            .duration
            .is_some_and(|d| s.mono_ns.saturating_sub(base.mono_ns) >= d.as_nanos() as u64);
        if tty && last_status.elapsed() >= STATUS_EVERY {
            last_status = Instant::now();
            status_line(&writer, t0.elapsed(), drops(base, &s));
        }
        if done || stop.is_set() {
            break;
        }
    }
    stop.set();
    drop(rx);
    let _ = handle.join();
    if tty {
        eprintln!();
    }
    let (frames, path) = (writer.frames(), writer.path().to_path_buf());
    result.and(writer.finish())?;
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    eprintln!(
        "ttop: recorded {frames} samples ({}) to {}",
        human_bytes(bytes),
        path.display()
    );
    Ok(())
}

/// Events lost to full BPF maps since recording started.
fn drops(first: &Sample, s: &Sample) -> u64 {
    let total = |s: &Sample| {
        s.bpf
            .as_ref()
            .map_or(0, |b| b.drops.threads + b.drops.procs + b.drops.sched_gaps)
    };
    total(s).saturating_sub(total(first))
}

fn status_line(w: &Writer, elapsed: Duration, drops: u64) {
    let t = elapsed.as_secs();
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2Krecording {}: {}:{:02}:{:02} elapsed, {} frames, {}, {} drops",
        w.path().display(),
        t / 3600,
        t / 60 % 60,
        t % 60,
        w.frames(),
        human_bytes(w.bytes()),
        drops
    );
    let _ = err.flush();
}

pub fn human_bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        _ => format!("{:.1} MB", b as f64 / 1e6),
    }
}
