//! `ttop record -o FILE` / `ttop record --dir DIR`: collect without a dashboard (nohup,
//! tmux, systemd) until the duration is up or a signal (SIGINT, SIGTERM, SIGHUP)
//! arrives, then close the file cleanly. A one-line status goes to stderr every few
//! seconds when it is a terminal. With `--metrics ADDR` the same process serves the
//! current frame as OpenMetrics (see `crate::serve`).

use std::io::Write;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::continuous::Rotating;
use super::rotate::Retention;
use super::writer::{Writer, header_for};
use crate::cli::{RecordArgs, Settings};
use crate::collect::Collector;
use crate::model::{Sample, derive};
use crate::serve::{Exporter, Publisher, http};

const STATUS_EVERY: Duration = Duration::from_secs(5);

/// Where the Samples go: one file, or a directory of rotated files.
enum Sink {
    File(Writer),
    Dir(Box<Rotating>),
}

impl Sink {
    fn append(&mut self, s: &Sample) -> Result<()> {
        match self {
            Sink::File(w) => w.append(s),
            Sink::Dir(r) => r.append(s),
        }
    }

    /// Samples written (frames are one fewer).
    fn samples(&self) -> u64 {
        match self {
            Sink::File(w) => w.frames(),
            Sink::Dir(r) => r.frames(),
        }
    }

    fn status(&self) -> (String, u64) {
        match self {
            Sink::File(w) => (w.path().display().to_string(), w.bytes()),
            Sink::Dir(r) => r.writer().map_or_else(
                || (r.dir().display().to_string(), 0),
                |w| (w.path().display().to_string(), w.bytes()),
            ),
        }
    }

    /// Close cleanly and say what was recorded: in frames, as `replay --json` prints
    /// them and the replay's time bar counts them (the first Sample only starts the
    /// counters, so N Samples make N - 1 frames).
    fn finish(self) -> Result<String> {
        let samples = self.samples();
        let frames = format!(
            "{} frames ({samples} samples; the first only starts the counters)",
            samples.saturating_sub(1)
        );
        match self {
            Sink::File(w) => {
                let path = w.path().to_path_buf();
                w.finish()?;
                let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
                Ok(format!(
                    "recorded {frames}, {}, to {}",
                    human_bytes(bytes),
                    path.display()
                ))
            }
            Sink::Dir(r) => {
                let (files, dir) = (r.files, r.dir().to_path_buf());
                r.finish()?;
                Ok(format!(
                    "recorded {frames} into {files} file(s) in {}",
                    dir.display()
                ))
            }
        }
    }
}

pub fn record(settings: &Settings, args: &RecordArgs) -> Result<()> {
    let cfg = settings.cfg.clone();
    let pids = cfg.pids.clone();
    let sys = crate::collect::system_info();
    let mut sink = match (&args.output, &args.dir) {
        (Some(path), _) => Sink::File(Writer::create(
            path,
            &header_for(&sys, settings.delay, pids),
        )?),
        (None, Some(dir)) => Sink::Dir(Box::new(Rotating::open(
            dir,
            args.rotate.unwrap_or(RecordArgs::DEFAULT_ROTATE),
            Retention {
                keep: args.keep.unwrap_or(RecordArgs::DEFAULT_KEEP),
                max_size: args.max_size,
            },
            &sys,
            settings.delay,
            pids,
        )?)),
        (None, None) => anyhow::bail!("record needs -o FILE or --dir DIR"),
    };
    let stop = crate::stop::Stop::on_signals()?;
    let mut exporter = match &args.metrics {
        Some(addr) => {
            let e = Exporter::new();
            let server = http::Server::bind(addr, e.clone(), settings.delay)?;
            eprintln!("ttop: serving http://{}/metrics", server.addr());
            server.spawn();
            let top = usize::from(args.top.unwrap_or(RecordArgs::DEFAULT_TOP));
            Some(Publisher::new(e, top, &args.top_by))
        }
        None => None,
    };
    let c = Collector::new(&cfg);
    for p in &c.mode().problems {
        eprintln!("ttop: {p}");
    }
    let (tx, rx) = sync_channel::<Sample>(4);
    let handle = crate::collect::spawn(c, settings.delay, settings.rt, tx, stop.clone());
    // SAFETY: isatty only inspects the descriptor.
    let tty = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
    let t0 = Instant::now();
    let mut last_status = t0;
    let mut first: Option<Sample> = None;
    let mut prev: Option<Sample> = None;
    let mut result = Ok(());
    while let Ok(s) = rx.recv() {
        if let Err(e) = sink.append(&s) {
            // A full disk: stop here. Finished files are complete and indexed; the file
            // being written keeps every record written before (a reader re-indexes it).
            result = Err(e.context("recording stopped; the files already written are kept"));
            break;
        }
        if let Some(e) = exporter.as_mut() {
            if let Some(p) = prev.as_ref() {
                e.push(derive(&sys, Some(p), &s));
            }
            prev = Some(s.clone());
        }
        let base = first.get_or_insert_with(|| s.clone());
        let done = args
            .duration
            .is_some_and(|d| s.mono_ns.saturating_sub(base.mono_ns) >= d.as_nanos() as u64);
        if tty && last_status.elapsed() >= STATUS_EVERY {
            last_status = Instant::now();
            status_line(&sink, t0.elapsed(), drops(base, &s));
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
    let summary = sink.finish();
    result?;
    eprintln!("ttop: {}", summary?);
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

fn status_line(sink: &Sink, elapsed: Duration, drops: u64) {
    let t = elapsed.as_secs();
    let (path, bytes) = sink.status();
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2Krecording {}: {}:{:02}:{:02} elapsed, {} frames, {}, {} drops",
        path,
        t / 3600,
        t / 60 % 60,
        t % 60,
        sink.samples().saturating_sub(1),
        human_bytes(bytes),
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
