//! `ttop record --dir DIR --rotate 1h --keep 7d [--max-size 2G]`: continuous recording
//! into one file per period, each an ordinary recording closed cleanly with its index.
//!
//! - Periods are aligned to the clock (`--rotate 1h` starts files at :00 UTC); a file is
//!   named by the UTC time of its first Sample, `ttop-YYYYMMDDTHHMMSSZ.ttop`, so names
//!   sort in time order.
//! - Retention runs at start and at every rotation, on finished files only: a file is
//!   deleted when it ended (its mtime: the last write) longer ago than `--keep`, and,
//!   with `--max-size`, the oldest are deleted while all recordings in DIR take more.
//!   The file being written is never deleted; `--keep` shorter than `--rotate` (which
//!   would delete it the moment it is finished, or while it is written) is refused.
//! - One recorder per directory: `DIR/.ttop-record.lock` holds an flock and its pid.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

pub const LOCK_NAME: &str = ".ttop-record.lock";
const PREFIX: &str = "ttop-";
const SUFFIX: &str = ".ttop";

/// `ttop-YYYYMMDDTHHMMSSZ.ttop` for a wall time in ns since the epoch.
pub fn file_name(wall_ns: u64) -> String {
    let secs = (wall_ns / 1_000_000_000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{PREFIX}{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z{SUFFIX}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A path in `dir` for a file of kind `ext` ("ttop", "folded") that starts at
/// `wall_ns` and does not exist yet: `ttop-STAMP.ext`, else `ttop-STAMP-1.ext`, ... The
/// one name every file ttop writes has: rotated recordings, the dashboard's recordings
/// and its profile exports (give `dir` as "" for a name relative to the current
/// directory).
pub fn free_name(dir: &Path, wall_ns: u64, ext: &str) -> PathBuf {
    let stamp = file_name(wall_ns);
    let stamp = stamp.trim_end_matches(SUFFIX);
    let mut p = dir.join(format!("{stamp}.{ext}"));
    let mut n = 1;
    while p.exists() {
        p = dir.join(format!("{stamp}-{n}.{ext}"));
        n += 1;
    }
    p
}

/// `ttop-YYYYMMDD-HHMMSS.ttop`, the name the dashboard's record key gave files before
/// every recording was named as `file_name` names them: still replayed (as the stamp
/// it stands for), never deleted by retention.
fn legacy_stamp(name: &str) -> Option<String> {
    let b = name
        .strip_prefix(PREFIX)
        .and_then(|n| n.strip_suffix(SUFFIX))?
        .as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (b.len() == 15 && b[8] == b'-' && digits(0..8) && digits(9..15)).then(|| {
        let s = std::str::from_utf8(b).expect("ASCII digits");
        format!("{}T{}Z", &s[..8], &s[9..])
    })
}

/// Whether `name` is a recording ttop wrote: as named now, or by an older dashboard.
pub fn is_recording_name(name: &str) -> bool {
    is_rotated_name(name) || legacy_stamp(name).is_some()
}

/// Whether `name` is a file this recorder writes (and so may replay or delete).
pub fn is_rotated_name(name: &str) -> bool {
    let Some(stamp) = name
        .strip_prefix(PREFIX)
        .and_then(|n| n.strip_suffix(SUFFIX))
    else {
        return false;
    };
    // YYYYMMDDTHHMMSSZ, optionally -N when two files start in the same second.
    let (base, n) = stamp.split_once('-').unwrap_or((stamp, "0"));
    let b = base.as_bytes();
    !n.is_empty()
        && n.bytes().all(|c| c.is_ascii_digit())
        && b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's
/// algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// (year, month, day) to days since 1970-01-01 (the inverse of `civil_from_days`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The recordings in `dir` ttop wrote (by `record --dir`, or the dashboard's record
/// key, under either's name), oldest first.
pub fn list(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(is_recording_name))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    v.sort_by_key(|p| order_key(p));
    Ok(v)
}

/// Time order: by start stamp, then the -N of files that started in the same second
/// (plain byte order would put `...Z-1.ttop` before `...Z.ttop`).
fn order_key(p: &Path) -> (String, u32) {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(stamp) = legacy_stamp(name) {
        return (stamp, 0);
    }
    let stamp = name
        .strip_prefix(PREFIX)
        .and_then(|n| n.strip_suffix(SUFFIX))
        .unwrap_or(name);
    match stamp.split_once('-') {
        Some((base, n)) => (base.to_string(), n.parse().unwrap_or(u32::MAX)),
        None => (stamp.to_string(), 0),
    }
}

/// The period a wall time falls in (its start, ns since the epoch).
pub fn period_of(wall_ns: u64, rotate: Duration) -> u64 {
    let p = rotate.as_nanos().max(1) as u64;
    wall_ns / p * p
}

/// Holds the directory for one recorder.
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Take `DIR/.ttop-record.lock`, or say which pid holds it.
    pub fn take(dir: &Path) -> Result<DirLock> {
        let path = dir.join(LOCK_NAME);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot write to {}", dir.display()))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            bail!(
                "{} is already being recorded by pid {} (one recorder per directory)",
                dir.display(),
                pid.trim()
            );
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())
            .with_context(|| format!("cannot write to {}", dir.display()))?;
        Ok(DirLock { _file: file })
    }
}

/// What retention keeps.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub keep: Duration,
    pub max_size: Option<u64>,
}

impl Retention {
    /// Refuses a retention that would delete the file being written.
    pub fn check(&self, rotate: Duration) -> Result<()> {
        if self.keep < rotate {
            bail!(
                "--keep {}s is shorter than --rotate {}s: the file being written would be deleted",
                self.keep.as_secs_f64(),
                rotate.as_secs_f64()
            );
        }
        Ok(())
    }

    /// Delete finished recordings in `dir` past the retention; never `current`. Returns
    /// what was deleted.
    pub fn apply(&self, dir: &Path, current: Option<&Path>, now: SystemTime) -> Vec<PathBuf> {
        let Ok(mut files) = list(dir) else {
            return Vec::new();
        };
        // Only what a recorder could have written: never an older dashboard's file.
        files.retain(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_rotated_name)
        });
        let meta: Vec<(PathBuf, u64, SystemTime)> = files
            .into_iter()
            .filter_map(|p| {
                let m = std::fs::metadata(&p).ok()?;
                Some((p, m.len(), m.modified().ok()?))
            })
            .collect();
        let mut total: u64 = meta.iter().map(|m| m.1).sum();
        let mut gone = Vec::new();
        for (p, len, mtime) in &meta {
            if current == Some(p.as_path()) {
                continue;
            }
            let old = now.duration_since(*mtime).is_ok_and(|age| age > self.keep);
            let over = self.max_size.is_some_and(|max| total > max);
            if (old || over) && std::fs::remove_file(p).is_ok() {
                total -= len;
                gone.push(p.clone());
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_time_and_are_recognised() {
        // 2026-11-24 21:24:00 UTC
        let t = 1_795_555_440u64 * 1_000_000_000;
        assert_eq!(file_name(t), "ttop-20261124T212400Z.ttop");
        assert_eq!(file_name(0), "ttop-19700101T000000Z.ttop");
        for days in [-1000, 0, 11_016, 20_416, 20_781] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(
            file_name(951_782_400 * 1_000_000_000),
            "ttop-20000229T000000Z.ttop"
        );
        assert!(is_rotated_name("ttop-20261124T212400Z.ttop"));
        assert!(is_rotated_name("ttop-20261124T212400Z-1.ttop"));
        // The dashboard's older name is replayed, not taken for the recorder's own.
        assert!(is_recording_name("ttop-20261124-212400.ttop"));
        assert!(!is_recording_name("ttop-20261124-2124000.ttop"));
        assert!(!is_recording_name("ttop-2026112x-212400.ttop"));
        for bad in [
            "ttop-20261124-212400.ttop",
            "incident.ttop",
            "ttop-x.ttop",
            ".ttop-record.lock",
        ] {
            assert!(!is_rotated_name(bad), "{bad}");
        }
        assert!(file_name(t) < file_name(t + 3_600_000_000_000));
        let dir = std::env::temp_dir().join(format!("ttop-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            "ttop-20261124-212359.ttop",
            "ttop-20261124T212400Z.ttop",
            "ttop-20261124T212400Z-1.ttop",
            "ttop-20261124T212401Z.ttop",
            "ttop-20261124-212402.ttop",
        ];
        for n in names.iter().rev() {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        let got: Vec<_> = list(&dir)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(got, names.map(std::ffi::OsString::from));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every file ttop writes is named ttop-STAMP[-N].EXT; a second one in the same
    /// second gets the next -N.
    #[test]
    fn free_names_count_up_within_a_second() {
        let dir = std::env::temp_dir().join(format!("ttop-free-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let t = 1_795_555_440u64 * 1_000_000_000;
        let a = free_name(&dir, t, "folded");
        assert_eq!(a, dir.join("ttop-20261124T212400Z.folded"));
        std::fs::write(&a, b"").unwrap();
        assert_eq!(
            free_name(&dir, t, "folded"),
            dir.join("ttop-20261124T212400Z-1.folded")
        );
        assert_eq!(
            free_name(&dir, t, "ttop"),
            dir.join("ttop-20261124T212400Z.ttop")
        );
        assert_eq!(
            free_name(Path::new(""), t, "ttop"),
            Path::new("ttop-20261124T212400Z.ttop")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn periods_align_to_the_clock() {
        let h = Duration::from_secs(3600);
        let s = 1_000_000_000u64;
        assert_eq!(period_of(3600 * s + 5, h), 3600 * s);
        assert_eq!(period_of(7199 * s, h), 3600 * s);
        assert_eq!(period_of(7200 * s, h), 7200 * s);
    }

    #[test]
    fn retention_keeps_the_current_file_and_refuses_to_delete_it() {
        let r = Retention {
            keep: Duration::from_secs(10),
            max_size: Some(1),
        };
        assert!(r.check(Duration::from_secs(60)).is_err());
        assert!(r.check(Duration::from_secs(10)).is_ok());
        let dir = std::env::temp_dir().join(format!("ttop-retention-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            "ttop-20260101T000000Z.ttop",
            "ttop-20260101T010000Z.ttop",
            "ttop-20260101T020000Z.ttop",
        ];
        for n in names {
            std::fs::write(dir.join(n), b"0123456789").unwrap();
        }
        std::fs::write(dir.join("notes.txt"), b"keep me").unwrap();
        let legacy = dir.join("ttop-20250101-000000.ttop");
        std::fs::write(&legacy, b"0123456789").unwrap();
        let current = dir.join(names[2]);
        // Over --max-size (1 byte): every finished file goes, the current one stays.
        let gone = r.apply(&dir, Some(&current), SystemTime::now());
        assert_eq!(gone.len(), 2);
        assert_eq!(list(&dir).unwrap(), vec![legacy.clone(), current.clone()]);
        std::fs::remove_file(&legacy).unwrap();
        assert!(
            dir.join("notes.txt").exists(),
            "other files are not touched"
        );
        // By age: nothing is old yet; 20 s later the finished file is.
        let r = Retention {
            keep: Duration::from_secs(10),
            max_size: None,
        };
        std::fs::write(dir.join(names[0]), b"x").unwrap();
        assert!(r.apply(&dir, Some(&current), SystemTime::now()).is_empty());
        let later = SystemTime::now() + Duration::from_secs(20);
        assert_eq!(
            r.apply(&dir, Some(&current), later),
            vec![dir.join(names[0])]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_second_recorder_is_refused_with_the_first_ones_pid() {
        let dir = std::env::temp_dir().join(format!("ttop-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = DirLock::take(&dir).unwrap();
        // flock locks belong to the open file description: a second open conflicts
        // even in the same process.
        let e = DirLock::take(&dir).err().unwrap().to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        assert!(DirLock::take(&dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
