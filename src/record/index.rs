//! Where each Sample record is, so a seek reads one keyframe and a few deltas instead of
//! the whole file. A cleanly closed recording ends with an index record and a footer
//! that points at it; a recording whose writer was killed has no footer, and then the
//! index is rebuilt by walking the record headers (36 bytes each; payloads are skipped,
//! not read).

use std::io::{self, Read, Seek, SeekFrom};

use super::format::{
    FOOTER_LEN, FOOTER_MAGIC, Kind, RECORD_HEADER_LEN, RecordHeader, SYNC, decode_footer, u64_at,
};

/// One Sample record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// File offset of the record header.
    pub offset: u64,
    pub n: u64,
    pub wall_ns: u64,
    pub key: bool,
}

const ENTRY_LEN: usize = 25;

/// The payload of the index record (before compression).
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut b = Vec::with_capacity(entries.len() * ENTRY_LEN);
    for e in entries {
        b.extend_from_slice(&e.offset.to_le_bytes());
        b.extend_from_slice(&e.n.to_le_bytes());
        b.extend_from_slice(&e.wall_ns.to_le_bytes());
        b.push(u8::from(e.key));
    }
    b
}

/// Parse an index payload; None if it is not a consistent index of a file whose records
/// end at `records_end`.
pub fn decode(b: &[u8], records_end: u64) -> Option<Vec<Entry>> {
    if !b.len().is_multiple_of(ENTRY_LEN) {
        return None;
    }
    let entries: Vec<Entry> = b
        .chunks_exact(ENTRY_LEN)
        .map(|c| Entry {
            offset: u64_at(c, 0),
            n: u64_at(c, 8),
            wall_ns: u64_at(c, 16),
            key: c[24] == 1,
        })
        .collect();
    let ordered = entries
        .windows(2)
        .all(|w| w[0].offset < w[1].offset && w[0].n < w[1].n);
    let inside = entries.last().is_none_or(|e| e.offset < records_end);
    (ordered && inside).then_some(entries)
}

/// What walking the records found.
#[derive(Debug, Default)]
pub struct Scan {
    pub entries: Vec<Entry>,
    /// Damaged byte ranges that were skipped.
    pub damaged: Vec<(u64, u64)>,
    /// The file ends inside a record that starts here (a recorder stopped abruptly).
    pub cut_at: Option<u64>,
}

/// Read the footer; Some(index record offset) when the file was closed cleanly.
pub fn footer<R: Read + Seek>(f: &mut R, len: u64, start: u64) -> Option<u64> {
    if len < start + (RECORD_HEADER_LEN + FOOTER_LEN) as u64 {
        return None;
    }
    let mut b = [0u8; FOOTER_LEN];
    f.seek(SeekFrom::Start(len - FOOTER_LEN as u64)).ok()?;
    f.read_exact(&mut b).ok()?;
    decode_footer(&b).filter(|&o| o >= start && o + (RECORD_HEADER_LEN as u64) <= len)
}

/// Walk record headers from `start` to `len`, skipping payloads.
pub fn scan<R: Read + Seek>(f: &mut R, start: u64, len: u64) -> io::Result<Scan> {
    let mut out = Scan::default();
    let mut pos = start;
    let mut hdr = [0u8; RECORD_HEADER_LEN];
    while pos < len {
        let left = len - pos;
        if left == FOOTER_LEN as u64 && is_footer(f, pos)? {
            break;
        }
        if left < RECORD_HEADER_LEN as u64 {
            if after_index(f, pos, left)? {
                break; // the footer was cut: every Sample is complete
            }
            out.cut_at = Some(pos);
            break;
        }
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut hdr)?;
        let Some(h) = RecordHeader::decode(&hdr) else {
            match resync(f, pos + 1, len)? {
                Some(next) => {
                    out.damaged.push((pos, next));
                    pos = next;
                    continue;
                }
                None => {
                    // Nothing readable after this point. A cut inside a header looks
                    // like this too; call it damage only if it is longer than a record
                    // header could be.
                    if left <= RECORD_HEADER_LEN as u64 {
                        out.cut_at = Some(pos);
                    } else {
                        out.damaged.push((pos, len));
                    }
                    break;
                }
            }
        };
        let end = pos + (RECORD_HEADER_LEN as u64) + u64::from(h.len);
        if end > len && h.kind == Kind::Index {
            break; // the index was cut: every Sample is complete
        }
        if end > len {
            out.cut_at = Some(pos);
            break;
        }
        if h.kind != Kind::Index {
            out.entries.push(Entry {
                offset: pos,
                n: h.n,
                wall_ns: h.wall_ns,
                key: h.kind == Kind::Key,
            });
        }
        pos = end;
    }
    Ok(out)
}

/// True when the `left` (< a record header) bytes at `pos` are the start of the
/// trailer (index record or footer) rather than of a Sample record.
fn after_index<R: Read + Seek>(f: &mut R, pos: u64, left: u64) -> io::Result<bool> {
    let mut b = vec![0u8; left as usize];
    f.seek(SeekFrom::Start(pos))?;
    f.read_exact(&mut b)?;
    let m = b.len().min(FOOTER_MAGIC.len());
    let footer = b.len() < FOOTER_LEN && b[..m] == FOOTER_MAGIC[..m];
    let index = b.len() > 4 && b[0..4] == SYNC && b[4] == Kind::Index as u8;
    Ok(footer || index)
}

fn is_footer<R: Read + Seek>(f: &mut R, pos: u64) -> io::Result<bool> {
    let mut b = [0u8; FOOTER_LEN];
    f.seek(SeekFrom::Start(pos))?;
    f.read_exact(&mut b)?;
    Ok(decode_footer(&b).is_some())
}

/// The offset of the next valid record header at or after `from`, if any.
fn resync<R: Read + Seek>(f: &mut R, from: u64, len: u64) -> io::Result<Option<u64>> {
    const CHUNK: usize = 64 << 10;
    let mut pos = from;
    let mut buf = vec![0u8; CHUNK + RECORD_HEADER_LEN];
    while pos + (RECORD_HEADER_LEN as u64) <= len {
        let want = ((len - pos) as usize).min(buf.len());
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut buf[..want])?;
        let window = &buf[..want];
        let mut i = 0;
        while i + RECORD_HEADER_LEN <= want {
            match window[i..].windows(4).position(|w| w == SYNC) {
                None => break,
                Some(k) => i += k,
            }
            if i + RECORD_HEADER_LEN > want {
                break;
            }
            if RecordHeader::decode(&window[i..]).is_some() {
                return Ok(Some(pos + i as u64));
            }
            i += 1;
        }
        if want < buf.len() {
            break;
        }
        pos += CHUNK as u64;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn rec(kind: Kind, n: u64, payload: &[u8]) -> Vec<u8> {
        RecordHeader::frame(kind, n, 1000 + n, payload)
    }

    fn file() -> Vec<u8> {
        let mut f = b"HEADER".to_vec();
        f.extend(rec(Kind::Key, 0, b"aaaa"));
        f.extend(rec(Kind::Delta, 1, b"bbbbbbbb"));
        f.extend(rec(Kind::Delta, 2, b"cc"));
        f
    }

    #[test]
    fn index_payload_round_trips() {
        let e = vec![
            Entry {
                offset: 6,
                n: 0,
                wall_ns: 5,
                key: true,
            },
            Entry {
                offset: 50,
                n: 1,
                wall_ns: 6,
                key: false,
            },
        ];
        assert_eq!(decode(&encode(&e), 100), Some(e.clone()));
        assert_eq!(decode(&encode(&e), 40), None, "entry past the end");
        assert_eq!(decode(&encode(&e)[..30], 100), None);
    }

    #[test]
    fn scan_finds_records_and_a_cut_tail() {
        let f = file();
        let s = scan(&mut Cursor::new(&f), 6, f.len() as u64).unwrap();
        assert_eq!(
            s.entries.iter().map(|e| e.n).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert!(s.entries[0].key && !s.entries[1].key);
        assert_eq!(s.cut_at, None);
        assert!(s.damaged.is_empty());
        let starts = [6, 46, 90];
        let ends = [46, 90, 128];
        assert_eq!(f.len(), 128);
        for cut in 6..f.len() {
            let s = scan(&mut Cursor::new(&f[..cut]), 6, cut as u64).unwrap();
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(s.entries.len(), complete, "cut at {cut}");
            assert_eq!(s.cut_at.is_some(), !starts.contains(&cut), "cut at {cut}");
            assert!(s.damaged.is_empty(), "cut at {cut}");
        }
    }

    #[test]
    fn scan_skips_a_damaged_header() {
        let mut f = file();
        f[6 + 4] = 0xee; // kind byte of the first record
        let s = scan(&mut Cursor::new(&f), 6, f.len() as u64).unwrap();
        assert_eq!(
            s.entries.iter().map(|e| e.n).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(s.damaged.len(), 1);
    }
}
