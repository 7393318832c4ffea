//! Sample <-> compressed payload. A keyframe is a zstd frame of the serialised Sample;
//! a delta frame is a zstd frame compressed with the previous Sample's serialised bytes
//! as a reference prefix, so what did not change between ticks (command lines, names,
//! idle counters) costs a few bytes. The payload is `raw_len:u32` then the zstd frame.

use zstd::zstd_safe::{CCtx, CParameter, DCtx, DParameter};

use super::format::MAX_RAW;
use crate::model::Sample;

/// zstd level: long matches against the previous Sample do most of the work. Measured
/// on a 126-frame recording (examples/recsize.rs): level 6 -> 2,327 B per delta frame,
/// 9 -> 2,059 (-12% for ~1 ms more per 100 KB Sample), 12 -> 1,989 at 6x the time.
const LEVEL: i32 = 9;

/// Serialise a Sample the way recordings store it (self-describing JSON, so a newer
/// ttop can still read Samples that lack a field it added with `#[serde(default)]`).
pub fn to_raw(s: &Sample) -> Vec<u8> {
    serde_json::to_vec(s).expect("a Sample serialises")
}

pub fn from_raw(raw: &[u8]) -> Result<Sample, String> {
    serde_json::from_slice(raw).map_err(|e| format!("cannot decode the sample: {e}"))
}

fn zerr(what: &str, code: usize) -> String {
    format!("{what}: {}", zstd::zstd_safe::get_error_name(code))
}

/// Window big enough that every byte of the prefix and the frame can be referenced.
fn window_log(len: usize) -> u32 {
    let bits = usize::BITS - len.max(1).leading_zeros();
    bits.clamp(17, 27)
}

/// Compress `raw`, against `prefix` when given.
pub fn compress(raw: &[u8], prefix: Option<&[u8]>) -> Vec<u8> {
    let mut c = CCtx::create();
    let wl = window_log(raw.len() + prefix.map_or(0, |p| p.len()));
    let setup = c
        .set_parameter(CParameter::CompressionLevel(LEVEL))
        .and_then(|_| c.set_parameter(CParameter::WindowLog(wl)))
        .and_then(|_| c.set_parameter(CParameter::ChecksumFlag(false)))
        .and_then(|_| c.set_parameter(CParameter::ContentSizeFlag(true)));
    setup.expect("valid zstd parameters");
    if let Some(p) = prefix {
        c.ref_prefix(p).expect("zstd accepts a prefix");
    }
    let mut out = Vec::with_capacity(4 + zstd::zstd_safe::compress_bound(raw.len()));
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    let mut body = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
    c.compress2(&mut body, raw)
        .expect("zstd compresses into a bound-sized buffer");
    out.extend_from_slice(&body);
    out
}

/// Decompress a payload made by `compress` with the same prefix.
pub fn decompress(payload: &[u8], prefix: Option<&[u8]>) -> Result<Vec<u8>, String> {
    if payload.len() < 4 {
        return Err("payload too short".into());
    }
    let raw_len = u32::from_le_bytes(payload[0..4].try_into().expect("4 bytes")) as usize;
    if raw_len > MAX_RAW {
        return Err(format!("implausible sample size {raw_len}"));
    }
    let mut d = DCtx::create();
    d.set_parameter(DParameter::WindowLogMax(27))
        .map_err(|e| zerr("zstd", e))?;
    if let Some(p) = prefix {
        d.ref_prefix(p).map_err(|e| zerr("zstd prefix", e))?;
    }
    let mut out = Vec::with_capacity(raw_len);
    let n = d
        .decompress(&mut out, &payload[4..])
        .map_err(|e| zerr("decompress", e))?;
    if n != raw_len {
        return Err(format!("sample is {n} bytes, expected {raw_len}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_delta_round_trip() {
        let a = b"the same long command line /usr/bin/something --flag=1 ".repeat(50);
        let mut b = a.clone();
        b[100] = b'X';
        let key = compress(&a, None);
        assert_eq!(decompress(&key, None).unwrap(), a);
        let delta = compress(&b, Some(&a));
        assert!(
            delta.len() < 40,
            "delta of a one-byte change is {} bytes",
            delta.len()
        );
        assert_eq!(decompress(&delta, Some(&a)).unwrap(), b);
        // Without (or with the wrong) prefix the delta does not decode to b.
        assert_ne!(decompress(&delta, None).ok(), Some(b.clone()));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for junk in [
            &b""[..],
            b"\x01\x00",
            b"\x10\x00\x00\x00garbage",
            b"\xff\xff\xff\xffxx",
        ] {
            assert!(decompress(junk, None).is_err());
        }
    }

    #[test]
    fn samples_round_trip_exactly() {
        let mut s = Sample::default();
        s.stat.uptime_s = 0.1 + 0.2;
        s.stat.loadavg = [0.01, 1.0 / 3.0, 7.7];
        s.wall_ns = u64::MAX;
        assert_eq!(from_raw(&to_raw(&s)).unwrap(), s);
    }
}
