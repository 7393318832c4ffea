//! Recording from the live dashboard: `--record FILE` starts at launch, a key starts and
//! stops it (a new file named by the time in the current directory when FILE is taken
//! or was not given). The header shows what it writes.

use std::path::PathBuf;
use std::time::Duration;

use super::headless::human_bytes;
use super::writer::{Writer, header_for};
use crate::model::Sample;
use crate::model::sample::SystemInfo;

pub struct LiveRecorder {
    sys: SystemInfo,
    interval: Duration,
    pids: Option<Vec<u32>>,
    /// The --record FILE, until it has been used.
    named: Option<PathBuf>,
    writer: Option<Writer>,
    /// Why recording stopped or could not start (shown in the header).
    problem: Option<String>,
    /// The last file written (shown after stopping).
    last: Option<(String, u64)>,
}

/// A file name from the wall clock, as every recording is named: in the current
/// directory, ttop-20261122T151503Z.ttop (UTC; -1, -2, ... when taken).
pub fn time_name(wall_ns: u64) -> PathBuf {
    super::rotate::free_name(std::path::Path::new(""), wall_ns, "ttop")
}

impl LiveRecorder {
    /// Starts recording at once when `path` (--record FILE) is given.
    pub fn new(
        sys: &SystemInfo,
        interval: Duration,
        pids: Option<Vec<u32>>,
        path: Option<PathBuf>,
    ) -> anyhow::Result<LiveRecorder> {
        let mut r = LiveRecorder {
            sys: sys.clone(),
            interval,
            pids,
            named: path,
            writer: None,
            problem: None,
            last: None,
        };
        if r.named.is_some() {
            r.start();
            if let Some(p) = r.problem.take() {
                anyhow::bail!(p);
            }
        }
        Ok(r)
    }

    pub fn recording(&self) -> bool {
        self.writer.is_some()
    }

    fn start(&mut self) {
        let path = self
            .named
            .take()
            .unwrap_or_else(|| time_name(crate::util::wall_ns()));
        let header = header_for(&self.sys, self.interval, self.pids.clone());
        match Writer::create(&path, &header) {
            Ok(w) => {
                self.writer = Some(w);
                self.problem = None;
            }
            Err(e) => self.problem = Some(format!("{e:#}")),
        }
    }

    fn stop(&mut self) {
        if let Some(w) = self.writer.take() {
            let done = (w.path().display().to_string(), w.bytes());
            if let Err(e) = w.finish() {
                self.problem = Some(format!("{e:#}"));
            }
            self.last = Some(done);
        }
    }

    /// The record key: start when stopped, stop when recording.
    pub fn toggle(&mut self) {
        if self.recording() {
            self.stop();
        } else {
            self.start();
        }
    }

    /// Every Sample goes through here; a write error stops recording and says why.
    pub fn append(&mut self, s: &Sample) {
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = w.append(s)
        {
            self.problem = Some(format!("recording stopped: {e:#}"));
            self.writer = None;
        }
    }

    /// What the header shows: "REC file 1.2 MB", the last problem, or what was saved.
    pub fn label(&self) -> Option<String> {
        if let Some(w) = &self.writer {
            return Some(format!(
                "● REC {} {}",
                w.path().display(),
                human_bytes(w.bytes())
            ));
        }
        if let Some(p) = &self.problem {
            return Some(format!("REC failed: {p}"));
        }
        self.last
            .as_ref()
            .map(|(p, b)| format!("saved {p} ({})", human_bytes(*b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{incident, system};

    #[test]
    fn names_files_by_utc_time() {
        // 2026-11-18 11:06:40 UTC: the name `record --dir` gives, so `replay DIR` plays it.
        let name = time_name(1_795_000_000 * 1_000_000_000);
        assert_eq!(name, PathBuf::from("ttop-20261118T110640Z.ttop"));
        assert!(super::super::rotate::is_rotated_name(
            name.to_str().unwrap()
        ));
    }

    #[test]
    fn toggles_and_reports_in_the_header() {
        let p = std::env::temp_dir().join(format!("ttop-live-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut r =
            LiveRecorder::new(&system(), Duration::from_secs(1), None, Some(p.clone())).unwrap();
        assert!(r.recording());
        r.append(&incident(0, true));
        r.append(&incident(1, true));
        assert!(r.label().unwrap().starts_with("● REC "), "{:?}", r.label());
        r.toggle();
        assert!(!r.recording());
        assert!(r.label().unwrap().starts_with("saved "), "{:?}", r.label());
        let rd = crate::record::Reader::open(&p).unwrap();
        assert_eq!(rd.len(), 2);
        assert!(rd.indexed(), "stopping closes the file cleanly");
        // An existing --record FILE is an error at launch, not a silent overwrite.
        assert!(
            LiveRecorder::new(&system(), Duration::from_secs(1), None, Some(p.clone())).is_err()
        );
        let _ = std::fs::remove_file(&p);
    }
}
