//! Parsing the replay's "go to" prompt into a wall-clock target. Pure: the player turns
//! the target into the nearest position.

use std::time::Duration;

use crate::record::rotate::days_from_civil;

const DAY_NS: u64 = 86_400_000_000_000;

/// The wall clock (ns since the epoch) `text` names, for a recording that starts at
/// `start_ns` and is shown at `here_ns`: a UTC date and time (`2026-11-24 14:05`), a
/// clock time of day in UTC (`14:05`, `14:05:30`: on the recording's first day, or the
/// next when the recording spans midnight), an offset from the start (`90`, `5m`, `1h`),
/// or relative to here (`+30s`, `-2m`).
pub fn target(text: &str, start_ns: u64, here_ns: u64) -> Result<u64, String> {
    let t = text.trim();
    if let Some(at) = parse_date_time(t) {
        return Ok(at);
    }
    if t.contains(':') {
        let secs = parse_clock(t)
            .ok_or_else(|| format!("'{t}' is not a time (hh:mm[:ss], YYYY-MM-DD hh:mm[:ss])"))?;
        let day = start_ns / DAY_NS * DAY_NS;
        let mut at = day + secs * 1_000_000_000;
        if at + DAY_NS / 2 < start_ns {
            at += DAY_NS; // past midnight in a recording that spans it
        }
        return Ok(at);
    }
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1.0, &t[1..]),
        Some(b'-') => (-1.0, &t[1..]),
        _ => (0.0, t),
    };
    let d = crate::cli::parse_duration(rest).or_else(|e| {
        if rest.trim() == "0" {
            Ok(Duration::ZERO)
        } else {
            Err(e)
        }
    })?;
    let base = if sign == 0.0 { start_ns } else { here_ns };
    let sign = if sign == 0.0 { 1.0 } else { sign };
    Ok((base as f64 + sign * d.as_secs_f64() * 1e9).max(0.0) as u64)
}
/// "YYYY-MM-DD hh:mm[:ss]" (or with a T) in UTC, as ns since the epoch.
fn parse_date_time(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (
        t[..4].parse().ok()?,
        t[5..7].parse().ok()?,
        t[8..10].parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, m, d);
    let secs = u64::try_from(days).ok()? * 86_400 + parse_clock(t[11..].trim())?;
    Some(secs * 1_000_000_000)
}

/// Seconds since midnight of "hh:mm" or "hh:mm:ss".
fn parse_clock(t: &str) -> Option<u64> {
    let parts: Vec<u64> = t
        .split(':')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match parts[..] {
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return None,
    };
    (h < 24 && m < 60 && s < 60).then_some(h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    /// Each form of the prompt, against a recording starting 2025-11-18 23:50 UTC (so a
    /// clock time after midnight is the next day's), shown 100 s in.
    #[test]
    fn each_form_names_its_time() {
        let day = 20_410 * DAY_NS; // 2025-11-18
        let start = day + (23 * 3600 + 50 * 60) * SEC;
        let here = start + 100 * SEC;
        let t = |s| target(s, start, here);
        assert_eq!(t("90"), Ok(start + 90 * SEC));
        assert_eq!(t("5m"), Ok(start + 300 * SEC));
        assert_eq!(t("0"), Ok(start));
        assert_eq!(t("+30s"), Ok(here + 30 * SEC));
        assert_eq!(t("-2m"), Ok(here - 120 * SEC));
        assert_eq!(t("23:55"), Ok(day + (23 * 3600 + 55 * 60) * SEC));
        assert_eq!(t("00:05:30"), Ok(day + DAY_NS + 330 * SEC), "past midnight");
        assert_eq!(t("2025-11-19 00:01"), Ok(day + DAY_NS + 60 * SEC));
        assert_eq!(t("2025-11-19T00:01:02"), Ok(day + DAY_NS + 62 * SEC));
        assert!(t("25:00").is_err());
        assert!(t("12:60").is_err());
        assert!(t("soon").is_err());
        assert_eq!(parse_date_time("2025-13-01 00:00"), None);
    }
}
