//! The rotating writer behind `ttop record --dir`: one ordinary recording per clock
//! period, the previous one finished (index and footer, synced) before the next is
//! created, retention applied to finished files after every rotation.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use super::rotate::{self, DirLock, Retention};
use super::writer::{Writer, header_for};
use crate::model::Sample;
use crate::model::sample::SystemInfo;

pub struct Rotating {
    dir: PathBuf,
    rotate: Duration,
    retention: Retention,
    _lock: DirLock,
    sys: SystemInfo,
    interval: Duration,
    pids: Option<Vec<u32>>,
    writer: Option<Writer>,
    period: u64,
    /// Files created, Samples written into finished files.
    pub files: u64,
    done_frames: u64,
}

impl Rotating {
    /// Take the directory (created if missing): refuses a retention that would delete
    /// the file being written, an unwritable directory and a second recorder.
    pub fn open(
        dir: &Path,
        rotate: Duration,
        retention: Retention,
        sys: &SystemInfo,
        interval: Duration,
        pids: Option<Vec<u32>>,
    ) -> Result<Rotating> {
        retention.check(rotate)?;
        anyhow::ensure!(
            rotate >= Duration::from_secs(1) && rotate >= interval,
            "--rotate must be at least 1 s and at least the interval"
        );
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let lock = DirLock::take(dir)?;
        // A file the writer cannot create is found now, not at the first rotation.
        let probe = dir.join(format!(".ttop-write-test-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .with_context(|| format!("cannot write to {}", dir.display()))?;
        let _ = std::fs::remove_file(&probe);
        retention.apply(dir, None, SystemTime::now());
        Ok(Rotating {
            dir: dir.to_path_buf(),
            rotate,
            retention,
            _lock: lock,
            sys: sys.clone(),
            interval,
            pids,
            writer: None,
            period: 0,
            files: 0,
            done_frames: 0,
        })
    }

    /// The file being written.
    pub fn writer(&self) -> Option<&Writer> {
        self.writer.as_ref()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Samples written, in every file.
    pub fn frames(&self) -> u64 {
        self.done_frames + self.writer.as_ref().map_or(0, Writer::frames)
    }

    pub fn append(&mut self, s: &Sample) -> Result<()> {
        let period = rotate::period_of(s.wall_ns, self.rotate);
        if self.writer.is_none() || period != self.period {
            self.finish_current()?;
            self.retention.apply(&self.dir, None, SystemTime::now());
            let path = rotate::free_name(&self.dir, s.wall_ns, "ttop");
            let mut header = header_for(&self.sys, self.interval, self.pids.clone());
            header.start_wall_ns = s.wall_ns;
            self.writer = Some(Writer::create(&path, &header)?);
            self.period = period;
            self.files += 1;
        }
        self.writer.as_mut().expect("created above").append(s)
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some(w) = self.writer.take() {
            self.done_frames += w.frames();
            w.finish()?;
        }
        Ok(())
    }

    /// Close the file being written cleanly.
    pub fn finish(mut self) -> Result<()> {
        self.finish_current()
    }
}
