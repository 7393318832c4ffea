//! The on-disk layout of a recording: file header, record framing, footer.
//! All integers are little-endian. See `record/mod.rs` for the whole picture.
//!
//! ```text
//! file    = header record* [index-record footer]
//! header  = MAGIC[8] version:u16 flags:u16 json_len:u32 json_crc:u32 json[json_len]
//! record  = SYNC[4] kind:u8 0[3] len:u32 n:u64 wall_ns:u64 payload_crc:u32 header_crc:u32
//!           payload[len]
//! footer  = FOOTER_MAGIC[8] index_offset:u64 crc:u32 0[4]
//! ```

use serde::{Deserialize, Serialize};

use crate::model::sample::SystemInfo;

/// First bytes of every recording. PNG-style: the high byte and the CR LF / ^Z catch
/// files mangled by 7-bit or text-mode transfers.
pub const MAGIC: [u8; 8] = *b"\x89TTOP\r\n\x1a";
/// Format version this ttop writes, and the newest it reads.
pub const FORMAT_VERSION: u16 = 1;
/// Fixed part of the file header (before the JSON).
pub const FILE_HEADER_LEN: usize = 20;
/// Largest header JSON we accept (it holds a few strings).
pub const MAX_HEADER_JSON: u32 = 1 << 20;

/// Marks the start of every record (lets a reader resynchronise after damage).
pub const SYNC: [u8; 4] = *b"\xa7TRK";
pub const RECORD_HEADER_LEN: usize = 36;
/// Largest record payload we accept; a bigger length is damage, not data.
pub const MAX_PAYLOAD: u32 = 256 << 20;
/// Largest decompressed Sample we accept.
pub const MAX_RAW: usize = 256 << 20;

pub const FOOTER_MAGIC: [u8; 8] = *b"TTOPIDX\x89";
pub const FOOTER_LEN: usize = 24;

/// A new keyframe every this many Samples: bounds the work of a seek and what one
/// damaged record can take with it.
pub const KEYFRAME_EVERY: u64 = 60;
/// ... or sooner, once the Samples since the last keyframe add up to this many bytes
/// (a 2,000-thread Sample is ~1.5 MB and decodes in ~80 ms: a seek stays under ~1 s).
pub const KEYFRAME_RAW_BYTES: usize = 16 << 20;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Sample compressed on its own.
    Key = 1,
    /// A Sample compressed against the previous Sample's bytes (zstd reference prefix).
    Delta = 2,
    /// The index of every Sample record (written once, when the recording is closed).
    Index = 3,
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Key),
            2 => Some(Kind::Delta),
            3 => Some(Kind::Index),
            _ => None,
        }
    }
}

/// The JSON part of the file header: what a replay shows about the recorded machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileHeader {
    pub ttop_version: String,
    pub system: SystemInfo,
    /// Nominal interval between Samples.
    pub interval_ns: u64,
    /// Wall clock when recording started, ns since the Unix epoch.
    pub start_wall_ns: u64,
    /// The -p filter the recording was made with.
    #[serde(default)]
    pub pids: Option<Vec<u32>>,
    /// How each Sample is serialised before compression.
    #[serde(default)]
    pub encoding: String,
}

pub const ENCODING: &str = "json+zstd-prefix";

/// Encode the whole file header.
pub fn encode_file_header(h: &FileHeader) -> Vec<u8> {
    let json = serde_json::to_vec(h).expect("header serialises");
    let mut out = Vec::with_capacity(FILE_HEADER_LEN + json.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(&json);
    out
}

/// The fixed part of the file header, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedHeader {
    pub version: u16,
    pub json_len: u32,
    pub json_crc: u32,
}

/// Why a file is not a recording we can read: each is one line for the user.
pub fn parse_fixed_header(b: &[u8]) -> Result<FixedHeader, String> {
    if b.is_empty() {
        return Err("empty file, not a ttop recording".into());
    }
    let n = b.len().min(MAGIC.len());
    if b[..n] != MAGIC[..n] {
        return Err("not a ttop recording (no ttop magic at the start)".into());
    }
    if b.len() < FILE_HEADER_LEN {
        return Err("truncated in the file header: not a complete ttop recording".into());
    }
    let version = u16_at(b, 8);
    if version > FORMAT_VERSION {
        return Err(format!(
            "recorded by a newer ttop (format version {version}; this ttop reads up to \
             {FORMAT_VERSION}): upgrade ttop to replay it"
        ));
    }
    if version == 0 {
        return Err("bad file header (format version 0)".into());
    }
    let json_len = u32_at(b, 12);
    if json_len > MAX_HEADER_JSON {
        return Err(format!("bad file header (header length {json_len})"));
    }
    Ok(FixedHeader {
        version,
        json_len,
        json_crc: u32_at(b, 16),
    })
}

/// Check and parse the JSON part of the file header.
pub fn parse_header_json(fixed: &FixedHeader, json: &[u8]) -> Result<FileHeader, String> {
    if json.len() < fixed.json_len as usize {
        return Err("truncated in the file header: not a complete ttop recording".into());
    }
    if crc32fast::hash(json) != fixed.json_crc {
        return Err("damaged file header (checksum mismatch)".into());
    }
    serde_json::from_slice(json).map_err(|e| format!("damaged file header: {e}"))
}

/// The framing in front of every record's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: Kind,
    pub len: u32,
    /// Number of the Sample within the file, from 0 (0 for the index).
    pub n: u64,
    /// Wall clock of the Sample, ns since the Unix epoch (0 for the index).
    pub wall_ns: u64,
    pub payload_crc: u32,
}

impl RecordHeader {
    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut b = [0u8; RECORD_HEADER_LEN];
        b[0..4].copy_from_slice(&SYNC);
        b[4] = self.kind as u8;
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..20].copy_from_slice(&self.n.to_le_bytes());
        b[20..28].copy_from_slice(&self.wall_ns.to_le_bytes());
        b[28..32].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[0..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// A record header, or None when these bytes are not one (damage or not a record).
    pub fn decode(b: &[u8]) -> Option<RecordHeader> {
        if b.len() < RECORD_HEADER_LEN || b[0..4] != SYNC {
            return None;
        }
        if crc32fast::hash(&b[0..32]) != u32_at(b, 32) {
            return None;
        }
        let h = RecordHeader {
            kind: Kind::from_u8(b[4])?,
            len: u32_at(b, 8),
            n: u64_at(b, 12),
            wall_ns: u64_at(b, 20),
            payload_crc: u32_at(b, 28),
        };
        (h.len <= MAX_PAYLOAD).then_some(h)
    }

    /// Frame a payload: header followed by the payload, ready for one write.
    pub fn frame(kind: Kind, n: u64, wall_ns: u64, payload: &[u8]) -> Vec<u8> {
        let h = RecordHeader {
            kind,
            len: payload.len() as u32,
            n,
            wall_ns,
            payload_crc: crc32fast::hash(payload),
        };
        let mut out = Vec::with_capacity(RECORD_HEADER_LEN + payload.len());
        out.extend_from_slice(&h.encode());
        out.extend_from_slice(payload);
        out
    }
}

pub fn encode_footer(index_offset: u64) -> [u8; FOOTER_LEN] {
    let mut b = [0u8; FOOTER_LEN];
    b[0..8].copy_from_slice(&FOOTER_MAGIC);
    b[8..16].copy_from_slice(&index_offset.to_le_bytes());
    let crc = crc32fast::hash(&b[0..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The index offset a footer points at, if these bytes are a valid footer.
pub fn decode_footer(b: &[u8]) -> Option<u64> {
    if b.len() != FOOTER_LEN || b[0..8] != FOOTER_MAGIC {
        return None;
    }
    (crc32fast::hash(&b[0..16]) == u32_at(b, 16)).then(|| u64_at(b, 8))
}

pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> FileHeader {
        FileHeader {
            ttop_version: "0.1.0".into(),
            system: SystemInfo {
                host: "h".into(),
                kernel: "6.18".into(),
                ncpus: 2,
                clk_tck: 100,
                page_size: 4096,
                boot_time_s: 5,
            },
            interval_ns: 1_000_000_000,
            start_wall_ns: 7,
            pids: Some(vec![1]),
            encoding: ENCODING.into(),
        }
    }

    #[test]
    fn file_header_round_trips() {
        let b = encode_file_header(&header());
        let fixed = parse_fixed_header(&b).unwrap();
        assert_eq!(fixed.version, FORMAT_VERSION);
        let h = parse_header_json(&fixed, &b[FILE_HEADER_LEN..]).unwrap();
        assert_eq!(h, header());
    }

    #[test]
    fn bad_file_headers_are_one_line_errors() {
        assert!(parse_fixed_header(b"").unwrap_err().contains("empty"));
        assert!(
            parse_fixed_header(b"hello world, not a recording")
                .unwrap_err()
                .contains("not a ttop")
        );
        assert!(
            parse_fixed_header(&MAGIC[..5])
                .unwrap_err()
                .contains("truncated")
        );
        let mut b = encode_file_header(&header());
        b[8] = 9;
        assert!(parse_fixed_header(&b).unwrap_err().contains("newer ttop"));
        let mut b = encode_file_header(&header());
        let last = b.len() - 2;
        b[last] ^= 1;
        let fixed = parse_fixed_header(&b).unwrap();
        assert!(
            parse_header_json(&fixed, &b[FILE_HEADER_LEN..])
                .unwrap_err()
                .contains("checksum")
        );
    }

    #[test]
    fn record_header_round_trips_and_rejects_damage() {
        let framed = RecordHeader::frame(Kind::Delta, 42, 99, b"payload");
        let h = RecordHeader::decode(&framed).unwrap();
        assert_eq!((h.kind, h.len, h.n, h.wall_ns), (Kind::Delta, 7, 42, 99));
        assert_eq!(h.payload_crc, crc32fast::hash(b"payload"));
        for i in 0..RECORD_HEADER_LEN {
            let mut d = framed.clone();
            d[i] ^= 0x10;
            assert_eq!(RecordHeader::decode(&d), None, "flip at byte {i} accepted");
        }
        assert_eq!(RecordHeader::decode(&framed[..10]), None);
    }

    #[test]
    fn footer_round_trips() {
        let f = encode_footer(1234);
        assert_eq!(decode_footer(&f), Some(1234));
        let mut d = f;
        d[9] ^= 1;
        assert_eq!(decode_footer(&d), None);
    }
}
