//! `ttop replay FILE|DIR --json`: the recorded Frames as JSON Lines, derived exactly as
//! `ttop --json` derived them live (the first Sample only primes, as it does live).
//! Problems with the file go to stderr, one line each; complete frames are never lost
//! to a damaged neighbour beyond the keyframe group that depends on it.

use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;

use anyhow::{Result, anyhow};

use super::series::Series;
use crate::model::{Sample, derive};

pub fn replay_json(path: &Path) -> Result<()> {
    let mut r = Series::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let warn = |m: &str| eprintln!("ttop: {}: {m}", path.display());
    for n in r.notes() {
        warn(&n);
    }
    let sys = r.header().system.clone();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut prev: Option<Sample> = None;
    let mut skipped = Skipped::default();
    let mut window = crate::model::findings::Window::new();
    for i in 0..r.len() {
        let s = match r.sample(i) {
            Ok(s) => s,
            Err(e) => {
                skipped.add(e, &warn);
                continue;
            }
        };
        skipped.end(&warn);
        if let Some(p) = prev.as_ref() {
            let mut f = derive(&sys, Some(p), &s);
            window.push(&mut f);
            let written = serde_json::to_writer(&mut out, &f)
                .map_err(std::io::Error::from)
                .and_then(|_| out.write_all(b"\n"));
            if let Err(e) = written {
                return quiet_on_broken_pipe(e);
            }
        }
        prev = Some(s);
    }
    skipped.end(&warn);
    if let Err(e) = out.flush() {
        return quiet_on_broken_pipe(e);
    }
    let files = r.files();
    for (file, at) in r.cuts() {
        let what = if files > 1 {
            format!("{} is", file.display())
        } else {
            "the file is".to_string()
        };
        warn(&format!(
            "{what} cut short inside a frame at byte {at} (the recorder was stopped \
             abruptly, or is still writing it); every complete frame was replayed"
        ));
    }
    if r.len() < 2 {
        warn(&format!(
            "{} sample(s) recorded: at least two are needed for one frame",
            r.len()
        ));
    }
    Ok(())
}

/// `ttop replay FILE --json | head` is not an error.
fn quiet_on_broken_pipe(e: std::io::Error) -> Result<()> {
    if e.kind() == ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(e.into())
    }
}

/// Collapses a run of unreadable frames into two lines: the first error and a count.
#[derive(Default)]
struct Skipped {
    run: u64,
}

impl Skipped {
    fn add(&mut self, why: String, warn: &dyn Fn(&str)) {
        if self.run == 0 {
            warn(&format!("skipped {why}"));
        }
        self.run += 1;
    }

    fn end(&mut self, warn: &dyn Fn(&str)) {
        if self.run > 1 {
            warn(&format!("... {} frames skipped in a row", self.run));
        }
        self.run = 0;
    }
}
