//! Appends Samples to a recording, one record per Sample, each handed to the kernel with
//! a single write as soon as it is made: a recorder killed at any moment leaves every
//! complete record readable. `finish` appends the index and the footer.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use super::codec;
use super::format::{
    ENCODING, FileHeader, KEYFRAME_EVERY, KEYFRAME_RAW_BYTES, Kind, RecordHeader,
    encode_file_header, encode_footer,
};
use super::index::{self, Entry};
use crate::model::Sample;
use crate::model::sample::SystemInfo;

/// The header of a recording made now on this machine.
pub fn header_for(sys: &SystemInfo, interval: Duration, pids: Option<Vec<u32>>) -> FileHeader {
    FileHeader {
        ttop_version: env!("CARGO_PKG_VERSION").to_string(),
        system: sys.clone(),
        interval_ns: interval.as_nanos() as u64,
        start_wall_ns: crate::util::wall_ns(),
        pids,
        encoding: ENCODING.to_string(),
    }
}

pub struct Writer {
    file: File,
    path: PathBuf,
    offset: u64,
    prev_raw: Option<Vec<u8>>,
    /// Samples and their serialised bytes since the last keyframe.
    since_key: (u64, usize),
    entries: Vec<Entry>,
    finished: bool,
}

impl Writer {
    /// Create a new recording (mode 0600: it holds command lines). An existing file is
    /// never overwritten: a recording of an incident is worth more than a typo.
    pub fn create(path: &Path, header: &FileHeader) -> Result<Writer> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let head = encode_file_header(header);
        if let Err(e) = file.write_all(&head) {
            // No frame is in it, and a file without a whole header is no recording: a
            // full disk must not leave one behind among the finished files.
            let _ = std::fs::remove_file(path);
            return Err(e).with_context(|| format!("cannot write {}", path.display()));
        }
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            offset: head.len() as u64,
            prev_raw: None,
            since_key: (0, 0),
            entries: Vec::new(),
            finished: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Samples written so far.
    pub fn frames(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.offset
    }

    /// Append one Sample: compressed against the previous one, except every
    /// KEYFRAME_EVERY-th (or after KEYFRAME_RAW_BYTES), which stands alone.
    pub fn append(&mut self, s: &Sample) -> Result<()> {
        anyhow::ensure!(!self.finished, "recording already finished");
        let n = self.entries.len() as u64;
        let raw = codec::to_raw(s);
        let (frames, bytes) = self.since_key;
        let key_due = frames >= KEYFRAME_EVERY || bytes >= KEYFRAME_RAW_BYTES;
        let prefix = self.prev_raw.as_deref().filter(|_| !key_due);
        let kind = if prefix.is_some() {
            Kind::Delta
        } else {
            Kind::Key
        };
        let payload = codec::compress(&raw, prefix);
        let rec = RecordHeader::frame(kind, n, s.wall_ns, &payload);
        self.write(&rec)?;
        self.entries.push(Entry {
            offset: self.offset,
            n,
            wall_ns: s.wall_ns,
            key: kind == Kind::Key,
        });
        self.offset += rec.len() as u64;
        self.since_key = match kind {
            Kind::Key => (1, raw.len()),
            _ => (frames + 1, bytes + raw.len()),
        };
        self.prev_raw = Some(raw);
        Ok(())
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        let r = self.file.write_all(b);
        if r.is_err() {
            // A partial record may now sit at the end: stop here rather than write
            // after it (the reader would resynchronise, but there is no point).
            self.finished = true;
        }
        r.with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Append the index and footer and flush to disk.
    pub fn finish(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        let payload = codec::compress(&index::encode(&self.entries), None);
        let mut tail = RecordHeader::frame(Kind::Index, 0, 0, &payload);
        tail.extend_from_slice(&encode_footer(self.offset));
        self.write(&tail)?;
        self.finished = true;
        self.file
            .sync_all()
            .with_context(|| format!("cannot flush {}", self.path.display()))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
