//! One recording or a directory of rotated ones (`ttop record --dir`), seen as a single
//! sequence of Samples: positions run across file boundaries, so replay, `g` and
//! `--json` treat a week of hourly files as one recording. Each file keeps its own
//! Reader (its own index and delta chain); a frame whose previous Sample sits in the
//! file before is derived from that Sample, exactly as it was live.

use std::path::{Path, PathBuf};

use super::format::FileHeader;
use super::reader::Reader;
use super::rotate;
use crate::model::Sample;

pub struct Series {
    readers: Vec<Reader>,
    /// (file, position in that file, wall time) of every Sample, in order.
    at: Vec<(usize, usize, u64)>,
    label: PathBuf,
}

impl From<Reader> for Series {
    fn from(r: Reader) -> Series {
        let label = r.path().to_path_buf();
        Series::from_readers(vec![r], label)
    }
}

impl Series {
    /// A file, a directory written by `ttop record --dir` (all its files), or a file in
    /// such a directory (it and the files after it). The error is one line, without the
    /// path.
    pub fn open(path: &Path) -> Result<Series, String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        let files = if meta.is_dir() {
            let files = rotate::list(path).map_err(|e| e.to_string())?;
            if files.is_empty() {
                return Err(
                    "is a directory without recordings of `ttop record --dir` (ttop-*Z.ttop)"
                        .into(),
                );
            }
            files
        } else {
            let rotated = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(rotate::is_rotated_name);
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            match (rotated, dir) {
                (true, Some(dir)) => rotate::list(dir)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .skip_while(|p| p.file_name() != path.file_name())
                    .collect(),
                _ => vec![path.to_path_buf()],
            }
        };
        let single = files.len() == 1;
        let mut readers = Vec::with_capacity(files.len());
        for f in &files {
            match Reader::open(f) {
                Ok(r) => readers.push(r),
                // One unreadable file in a directory (the recorder killed while writing
                // its header) must not hide the rest; a single file is an error.
                Err(e) if single => return Err(e),
                Err(_) => {}
            }
        }
        if readers.is_empty() {
            return Err("no readable recording in this directory".into());
        }
        Ok(Series::from_readers(readers, path.to_path_buf()))
    }

    fn from_readers(readers: Vec<Reader>, label: PathBuf) -> Series {
        let mut at = Vec::new();
        for (f, r) in readers.iter().enumerate() {
            for (i, e) in r.entries().iter().enumerate() {
                // Files of one directory follow each other; a clock stepped back across
                // a boundary still plays in file order.
                at.push((f, i, e.wall_ns));
            }
        }
        Series { readers, at, label }
    }

    /// The path given to `open`.
    pub fn path(&self) -> &Path {
        &self.label
    }

    /// The first file's header (the recorded machine).
    pub fn header(&self) -> &FileHeader {
        self.readers[0].header()
    }

    pub fn files(&self) -> usize {
        self.readers.len()
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Wall time of the Sample at `i` (0 past the end).
    pub fn wall(&self, i: usize) -> u64 {
        self.at.get(i).map_or(0, |a| a.2)
    }

    /// The position of the last Sample taken at or before `wall_ns` (the first if none).
    pub fn position_at(&self, wall_ns: u64) -> usize {
        self.at
            .partition_point(|a| a.2 <= wall_ns)
            .saturating_sub(1)
    }

    /// The position of the first Sample taken at or after `wall_ns`.
    pub fn first_from(&self, wall_ns: u64) -> usize {
        self.at.partition_point(|a| a.2 < wall_ns)
    }

    /// The Sample at position `i`; the error names the frame (and the file, when there
    /// are several).
    pub fn sample(&mut self, i: usize) -> Result<Sample, String> {
        let Some(&(f, j, _)) = self.at.get(i) else {
            return Err(format!("no frame at position {i}"));
        };
        let many = self.readers.len() > 1;
        let r = &mut self.readers[f];
        r.sample(j).map_err(|e| {
            if many {
                format!("{}: {e}", r.path().display())
            } else {
                e
            }
        })
    }

    /// Problems found while opening, one line each (prefixed by the file when several).
    pub fn notes(&self) -> Vec<String> {
        let many = self.readers.len() > 1;
        self.readers
            .iter()
            .flat_map(|r| {
                r.notes().iter().map(move |n| {
                    if many {
                        format!("{}: {n}", r.path().display())
                    } else {
                        n.clone()
                    }
                })
            })
            .collect()
    }

    /// Files cut short (the recorder was stopped abruptly): the file and where.
    /// The file being written by a running recorder reads as cut short too.
    pub fn cuts(&self) -> Vec<(&Path, u64)> {
        self.readers
            .iter()
            .filter_map(|r| r.cut_at().map(|at| (r.path(), at)))
            .collect()
    }
}
