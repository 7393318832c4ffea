//! `ttop serve --listen ADDR` (and `ttop record --metrics ADDR`): the current Frame as
//! OpenMetrics text on `/metrics`, for Prometheus. The collector runs as in `--json`;
//! each Frame is rendered to text once, on the collecting thread, and published by
//! swapping one pointer, so a scrape during a tick reads the old frame or the new one,
//! never a mix. The HTTP side is a std `TcpListener` on its own thread: one route, no
//! async runtime.

mod cgroup_metrics;
pub mod http;
pub mod metrics;

use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::cli::{ServeArgs, Settings};
use crate::collect::Collector;
use crate::model::{Frame, Sample, derive};

/// The text of the latest Frame, shared between the collecting loop and the server.
#[derive(Clone, Default)]
pub struct Exporter {
    current: Arc<Mutex<Option<Arc<String>>>>,
    top: usize,
}

impl Exporter {
    pub fn new(top: usize) -> Exporter {
        Exporter {
            current: Arc::default(),
            top,
        }
    }

    /// Render `f` and make it what the next scrape sees.
    pub fn publish(&self, f: &Frame) {
        let text = Arc::new(metrics::render(f, self.top));
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
    }

    /// The text of the latest Frame (None before the first one).
    pub fn current(&self) -> Option<Arc<String>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

pub fn serve(settings: &Settings, args: &ServeArgs) -> Result<()> {
    let exporter = Exporter::new(usize::from(args.top));
    let stop = crate::stop::Stop::on_signals()?;
    // Bind first: an address in use is a one-line error before any probe loads.
    let server = http::Server::bind(&args.listen, exporter.clone())?;
    eprintln!("ttop: serving http://{}/metrics", server.addr());
    let _server = server.spawn();
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
            exporter.publish(&derive(&sys, Some(p), &s));
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
