//! The value parsers of the flags: counts, intervals, durations, spans and sizes.

use std::time::Duration;

/// Parse --count: a number of intervals, at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of intervals: COUNT is 1 or more"
        )),
    }
}

/// Parse a span for rotation and retention: a duration (see `parse_duration`) or days
/// with a d suffix ("7d").
pub fn parse_span(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Some(days) = t.strip_suffix('d') {
        let d = days
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0 && *v < 1e6)
            .ok_or_else(|| format!("'{s}' is not a duration (examples: 30s, 15m, 1h, 7d)"))?;
        return Ok(Duration::from_secs_f64(d * 86_400.0));
    }
    parse_duration(t).map_err(|_| format!("'{s}' is not a duration (examples: 30s, 15m, 1h, 7d)"))
}

/// Parse a size: bytes, or with a K/M/G/T suffix (powers of 1024; a trailing B is allowed).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().trim_end_matches(['B', 'b']);
    let (num, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("'{s}' is not a size (examples: 500M, 2G)")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale as f64)
        .filter(|v| v.is_finite() && *v >= 1.0 && *v < 1e18)
        .map(|v| v as u64)
        .ok_or_else(|| format!("'{s}' is not a size (examples: 500M, 2G)"))
}

/// Parse a duration: plain seconds or with an s/m/h suffix ("90", "1.5h", "15m").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 's')) => (&t[..i], 1.0),
        _ => (t, 1.0),
    };
    let secs = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite() && *v > 0.0 && *v < 1e9)
        .ok_or_else(|| format!("'{s}' is not a duration (examples: 90, 30s, 15m, 2h)"))?;
    Ok(Duration::from_secs_f64(secs))
}

/// Parse an interval in seconds: "1", "0.5", "2s", "100ms".
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1.0)
    } else {
        (t, 1.0)
    };
    let secs: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds (examples: 1, 0.5, 250ms)"))?;
    let secs = secs * scale;
    if !secs.is_finite() || !(0.1..=3600.0).contains(&secs) {
        return Err(format!(
            "interval must be between 0.1 and 3600 seconds, got '{s}'"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `--bpf-budget`: the ceiling on ttop's own eBPF cost, % of one CPU (`off` or 0: none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BpfBudget(pub Option<f64>);

pub fn parse_bpf_budget(s: &str) -> Result<BpfBudget, String> {
    let t = s.trim().trim_end_matches('%');
    if t.eq_ignore_ascii_case("off") {
        return Ok(BpfBudget(None));
    }
    match t.parse::<f64>() {
        Ok(0.0) => Ok(BpfBudget(None)),
        Ok(v) if v > 0.0 && v <= 100.0 * 4096.0 => Ok(BpfBudget(Some(v))),
        _ => Err(format!(
            "{s:?}: a share of one CPU in % (e.g. 3 or 0.5), or off"
        )),
    }
}
