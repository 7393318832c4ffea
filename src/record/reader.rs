//! Opens a recording and hands out its Samples by position. Nothing in a file can make
//! it panic: every length is bounded, every record is checksummed, and each problem is
//! either a one-line error (the file as a whole is unusable) or a per-frame error the
//! caller reports and skips.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::codec;
use super::format::{
    FILE_HEADER_LEN, FileHeader, Kind, RECORD_HEADER_LEN, RecordHeader, parse_fixed_header,
    parse_header_json,
};
use super::index::{self, Entry};
use crate::model::Sample;

pub struct Reader {
    file: File,
    path: PathBuf,
    header: FileHeader,
    entries: Vec<Entry>,
    notes: Vec<String>,
    cut_at: Option<u64>,
    /// The positions came from the index at the end (false: rebuilt by a scan).
    indexed: bool,
    /// The last Sample bytes decoded, by entry position: the prefix of the next delta.
    cache: Option<(usize, Vec<u8>)>,
}

impl Reader {
    /// Open and index a recording. The error is one line, without the path.
    pub fn open(path: &Path) -> Result<Reader, String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if meta.is_dir() {
            return Err("is a directory, not a ttop recording".into());
        }
        if !meta.is_file() {
            return Err("not a regular file, not a ttop recording".into());
        }
        let mut file = File::open(path).map_err(|e| e.to_string())?;
        let len = meta.len();
        let mut head = Vec::with_capacity(FILE_HEADER_LEN);
        (&mut file)
            .take(FILE_HEADER_LEN as u64)
            .read_to_end(&mut head)
            .map_err(|e| e.to_string())?;
        let fixed = parse_fixed_header(&head)?;
        let mut json = Vec::with_capacity(fixed.json_len as usize);
        (&mut file)
            .take(u64::from(fixed.json_len))
            .read_to_end(&mut json)
            .map_err(|e| e.to_string())?;
        let header = parse_header_json(&fixed, &json)?;
        let start = (FILE_HEADER_LEN + json.len()) as u64;
        let mut r = Reader {
            file,
            path: path.to_path_buf(),
            header,
            entries: Vec::new(),
            notes: Vec::new(),
            cut_at: None,
            indexed: false,
            cache: None,
        };
        r.load_index(start, len).map_err(|e| e.to_string())?;
        Ok(r)
    }

    fn load_index(&mut self, start: u64, len: u64) -> std::io::Result<()> {
        if let Some(at) = index::footer(&mut self.file, len, start) {
            if let Some(entries) = self.read_index(at) {
                self.entries = entries;
                self.indexed = true;
                return Ok(());
            }
            self.notes
                .push("the index at the end is damaged; rebuilt it by scanning the file".into());
        }
        let scan = index::scan(&mut self.file, start, len)?;
        for (a, b) in &scan.damaged {
            self.notes.push(format!(
                "bytes {a}..{b} are damaged and were skipped (frames in them are lost)"
            ));
        }
        self.cut_at = scan.cut_at;
        self.entries = scan.entries;
        Ok(())
    }

    fn read_index(&mut self, at: u64) -> Option<Vec<Entry>> {
        let (h, payload) = self.read_record(at).ok()?;
        if h.kind != Kind::Index {
            return None;
        }
        let raw = codec::decompress(&payload, None).ok()?;
        index::decode(&raw, at)
    }

    /// Read and check one record (header checksum, payload checksum).
    fn read_record(&mut self, at: u64) -> Result<(RecordHeader, Vec<u8>), String> {
        let mut hb = [0u8; RECORD_HEADER_LEN];
        self.file
            .seek(SeekFrom::Start(at))
            .and_then(|_| self.file.read_exact(&mut hb))
            .map_err(|e| format!("cannot read: {e}"))?;
        let h = RecordHeader::decode(&hb).ok_or("damaged record header")?;
        // Grow as bytes arrive: a damaged length must not reserve memory up front.
        let mut payload = Vec::with_capacity((h.len as usize).min(1 << 20));
        (&mut self.file)
            .take(u64::from(h.len))
            .read_to_end(&mut payload)
            .map_err(|e| format!("cannot read: {e}"))?;
        if payload.len() != h.len as usize {
            return Err("the file ends inside this frame".into());
        }
        if crc32fast::hash(&payload) != h.payload_crc {
            return Err("checksum mismatch (damaged)".into());
        }
        Ok((h, payload))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Every Sample record, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Problems found while opening (damaged ranges, a damaged index), one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// True when the file was closed cleanly and its index was used (no scan).
    pub fn indexed(&self) -> bool {
        self.indexed
    }

    /// Where the last, incomplete record starts, when the file was cut short.
    pub fn cut_at(&self) -> Option<u64> {
        self.cut_at
    }

    /// The position of the last Sample taken at or before `wall_ns` (the first if none).
    pub fn position_at(&self, wall_ns: u64) -> usize {
        self.entries
            .partition_point(|e| e.wall_ns <= wall_ns)
            .saturating_sub(1)
    }

    /// The Sample at position `i`. A delta is decoded from the nearest keyframe (or the
    /// Sample decoded last, when that is its predecessor). The error names the frame.
    pub fn sample(&mut self, i: usize) -> Result<Sample, String> {
        let raw = self.raw(i)?;
        codec::from_raw(raw).map_err(|e| format!("frame {}: {e}", self.entries[i].n))
    }

    fn raw(&mut self, i: usize) -> Result<&[u8], String> {
        let Some(target) = self.entries.get(i).copied() else {
            return Err(format!("no frame at position {i}"));
        };
        if self.cache.as_ref().is_some_and(|(c, _)| *c == i) {
            return Ok(&self.cache.as_ref().expect("checked").1);
        }
        // Walk back to where decoding can start: a keyframe, or the cached predecessor.
        let cached = self.cache.as_ref().map(|(c, _)| *c);
        let mut k = i;
        let first = loop {
            if self.entries[k].key || (k > 0 && cached == Some(k - 1)) {
                break k;
            }
            if k == 0 || self.entries[k - 1].n + 1 != self.entries[k].n {
                return Err(format!(
                    "frame {}: depends on an earlier frame that is missing",
                    target.n
                ));
            }
            k -= 1;
        };
        for j in first..=i {
            let e = self.entries[j];
            let decoded = self.decode_one(e, j);
            match decoded {
                Ok(raw) => self.cache = Some((j, raw)),
                Err(why) => {
                    self.cache = None;
                    return Err(if j == i {
                        format!("frame {}: {why}", e.n)
                    } else {
                        format!(
                            "frame {}: depends on frame {}, which is damaged ({why})",
                            target.n, e.n
                        )
                    });
                }
            }
        }
        Ok(&self.cache.as_ref().expect("just decoded").1)
    }

    fn decode_one(&mut self, e: Entry, j: usize) -> Result<Vec<u8>, String> {
        let (h, payload) = self.read_record(e.offset)?;
        if h.n != e.n || h.kind == Kind::Index {
            return Err("the index does not match the file".into());
        }
        let prefix = match (h.kind, &self.cache) {
            (Kind::Key, _) => None,
            (_, Some((c, raw))) if *c + 1 == j => Some(raw.as_slice()),
            _ => return Err("delta frame without its predecessor".into()),
        };
        codec::decompress(&payload, prefix)
    }
}
