//! `ttop serve --listen ADDR` (and `ttop record --metrics ADDR`): OpenMetrics on
//! `/metrics` for Prometheus: counters since the start (`_total`), gauges of the last
//! interval, findings. The collector runs as in `--json`; each Frame is counted and
//! rendered to text once, on the collecting thread (`Publisher`), and published by
//! swapping one pointer, so a scrape during a tick reads the old text or the new one,
//! never a mix, and a scrape never blocks the collector. The HTTP side (`http`) is std
//! sockets on threads of their own, bounded in number, size and time.

pub mod cgroup_counters;
mod cgroup_metrics;
pub mod counters;
pub mod findings;
#[cfg(test)]
mod group_counters_tests;
pub mod groups;
pub mod histogram;
pub mod http;
pub mod metrics;
pub mod out;
pub mod publisher;
pub mod totals;

use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;

use crate::cli::{ServeArgs, Settings};
use crate::collect::Collector;
use crate::model::{Sample, derive};
pub use publisher::Publisher;

/// A scrape's text and when it was published.
type Published = Option<(Arc<String>, Instant)>;

/// The text of the latest scrape, shared between the collecting loop and the server.
#[derive(Clone, Default)]
pub struct Exporter {
    current: Arc<Mutex<Published>>,
}

impl Exporter {
    pub fn new() -> Exporter {
        Exporter::default()
    }

    /// Make `text` what the next scrape sees.
    pub fn set(&self, text: String) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Arc::new(text), Instant::now()));
    }

    /// The latest text (None before the first frame).
    pub fn current(&self) -> Option<Arc<String>> {
        self.latest().map(|(t, _)| t)
    }

    /// The latest text and when it was published.
    pub fn latest(&self) -> Published {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

pub fn serve(settings: &Settings, args: &ServeArgs) -> Result<()> {
    let exporter = Exporter::new();
    let stop = crate::stop::Stop::on_signals()?;
    // Bind first: an address in use is a one-line error before any probe loads.
    let server = http::Server::bind(&args.listen, exporter.clone(), settings.delay)?;
    eprintln!("ttop: serving http://{}/metrics", server.addr());
    let _server = server.spawn();
    let mut publisher = Publisher::new(exporter, usize::from(args.top), &args.top_by);
    let sys = crate::collect::system_info();
    let c = Collector::new(&settings.cfg);
    for p in &c.mode().problems {
        eprintln!("ttop: {p}");
    }
    let (tx, rx) = sync_channel::<Sample>(4);
    let handle = crate::collect::spawn(c, settings.delay, settings.rt, tx, stop.clone());
    let mut prev: Option<Sample> = None;
    while let Ok(s) = rx.recv() {
        if let Some(p) = prev.as_ref() {
            publisher.push(derive(&sys, Some(p), &s));
        }
        prev = Some(s);
        if stop.is_set() {
            break;
        }
    }
    stop.set();
    drop(rx);
    let _ = handle.join();
    Ok(())
}
