//! `ttop replay FILE|DIR --json`: the recorded Frames as JSON Lines, derived exactly as
//! `ttop --json` derived them live (the first Sample only primes, as it does live).
//! Problems with the file go to stderr, one line each; complete frames are never lost
//! to a damaged neighbour beyond the keyframe group that depends on it.

use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;

use anyhow::{Result, anyhow};

use super::series::Series;
use crate::model::{Frame, Sample, derive};

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
    let mut line = Vec::new();
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
            line.clear();
            let written = json_line(&f, &mut line)
                .map_err(std::io::Error::from)
                .and_then(|_| out.write_all(&line));
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

/// One Frame as a line of JSON (with its newline) appended to `out`, as `ttop --json`
/// and `ttop replay --json` print it. Never `-0.0`: a difference that rounds to nothing
/// (a rate of -0.0) is written 0.0, whatever the model computed.
pub fn json_line(f: &Frame, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let from = out.len();
    serde_json::to_writer(&mut *out, f)?;
    // With a filter (-p, --comm, --cgroup) the watched processes' threads follow, as
    // `threads` (a whole machine's would be most of the line).
    if f.filter.is_some() && out.last() == Some(&b'}') {
        out.pop();
        out.extend_from_slice(b",\"threads\":");
        serde_json::to_writer(&mut *out, &f.threads)?;
        out.push(b'}');
    }
    drop_negative_zero_signs(out, from);
    out.push(b'\n');
    Ok(())
}

/// Remove the sign of every number from `from` on whose digits are all zeros (`-0.0`,
/// `-0`, `-0.0e-5`), outside strings. One pass, and none when no `-0` is there.
fn drop_negative_zero_signs(buf: &mut Vec<u8>, from: usize) {
    if !buf[from..].windows(2).any(|w| w == b"-0") {
        return;
    }
    let (mut w, mut in_str, mut esc) = (from, false, false);
    for i in from..buf.len() {
        let b = buf[i];
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else if b == b'-' && is_zero(&buf[i + 1..]) {
            continue;
        }
        buf[w] = b;
        w += 1;
    }
    buf.truncate(w);
}

/// Whether the number at the start of `s` (digits and a point, then maybe an exponent)
/// is zero.
fn is_zero(s: &[u8]) -> bool {
    let end = s
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.'))
        .unwrap_or(s.len());
    end > 0 && s[..end].iter().all(|b| matches!(b, b'0' | b'.'))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `-0.0` never reaches the JSON, in any field; real negatives and strings that
    /// hold "-0.0" are kept.
    #[test]
    fn json_lines_have_no_negative_zero() {
        let mut f = Frame {
            interval_s: -0.0,
            host: "host -0.0 \"-0\" \\-0.0".into(),
            ..Default::default()
        };
        f.runnable.true_avg = Some(-0.0);
        f.runnable.undercount = Some(-0.25);
        f.cpus.push(crate::model::frame::CpuFrame {
            util: -0.0,
            user: -1e-300 * 1e-300,
            ..Default::default()
        });
        let mut line = b"{\"before\":-0.0}".to_vec();
        let keep = line.len();
        json_line(&f, &mut line).unwrap();
        assert_eq!(
            &line[..keep],
            b"{\"before\":-0.0}",
            "only the new line is touched"
        );
        let text = std::str::from_utf8(&line[keep..]).unwrap();
        assert!(text.ends_with('\n'));
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["host"], "host -0.0 \"-0\" \\-0.0", "strings are kept");
        assert_eq!(v["runnable"]["undercount"], -0.25);
        let host = serde_json::to_string(&f.host).unwrap();
        let rest = text.replace(&host, "").replace("-0.25", "");
        assert!(!rest.contains("-0"), "{text}");
        assert!(text.contains("\"true_avg\":0.0"), "{text}");
    }
}
