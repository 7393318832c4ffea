//! Number and text formatting for fixed-width columns, and making hostile text inert.

/// comm and cmdline are chosen by whoever started the process: control characters and
/// escape sequences are shown escaped (`\x1b`, `\n`), never sent to the terminal.
pub fn inert(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            // Bidi overrides and zero-width characters can hide or reorder text.
            '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `v` with `prec` decimals, never "-0.0": a value that rounds to zero is shown as 0
/// whatever its sign (a tiny negative is rounding noise of a difference, not a figure).
pub fn fixed(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// A rate or count in at most `w` characters: 0, 12, 1.5k, 23k, 4.1M.
pub fn num(v: f64, w: usize) -> String {
    let s = if !v.is_finite() {
        "-".to_string()
    } else if v.abs() < 10.0 && v.fract() != 0.0 {
        fixed(v, 1)
    } else if v.abs() < 10_000.0 {
        fixed(v, 0)
    } else if v.abs() < 1e6 {
        format!("{:.0}k", v / 1e3)
    } else if v.abs() < 1e9 {
        format!("{:.1}M", v / 1e6)
    } else {
        format!("{:.1}G", v / 1e9)
    };
    if s.len() > w { "+".repeat(w) } else { s }
}

/// An optional value, "-" when absent (no eBPF).
pub fn opt(v: Option<f64>, w: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| num(v, w))
}

/// Percent with one decimal below 100.
pub fn pct(v: f64) -> String {
    if v < 99.95 { fixed(v, 1) } else { fixed(v, 0) }
}

/// Kilobytes as 512K, 12M, 3.4G.
pub fn kb(v: u64) -> String {
    let v = v as f64;
    if v < 10_000.0 {
        format!("{v:.0}K")
    } else if v < 10_000_000.0 {
        format!("{:.0}M", v / 1024.0)
    } else {
        format!("{:.1}G", v / 1024.0 / 1024.0)
    }
}

/// Wall-clock seconds since the epoch as UTC "HH:MM:SS" (UTC: rendering does no I/O,
/// and a time zone needs /etc/localtime).
pub fn clock(t: f64) -> String {
    let s = t.max(0.0) as u64 % 86400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// CPU seconds as top's TIME+: minutes, seconds and hundredths ("12:03.45").
pub fn time_plus(secs: f64) -> String {
    let cs = (secs.max(0.0) * 100.0).round() as u64;
    format!("{}:{:02}.{:02}", cs / 6000, cs / 100 % 60, cs % 100)
}

/// A start time as top's START: "HH:MM" on the day of `now`, else "MonDD" (UTC, as
/// `clock`).
pub fn start(t: f64, now: f64) -> String {
    let day = |t: f64| (t.max(0.0) as i64).div_euclid(86400);
    if day(t) == day(now) {
        return clock(t)[..5].to_string();
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, m, d) = crate::record::rotate::civil_from_days(day(t));
    format!("{}{d:02}", MONTHS[(m - 1) as usize])
}

/// Seconds as "3d 4h", "5h 02m", "12m".
pub fn uptime(s: f64) -> String {
    let s = s as u64;
    let (d, h, m) = (s / 86400, s / 3600 % 24, s / 60 % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m:02}m")
    } else {
        format!("{m}m")
    }
}

/// Rows a line takes wrapped at word boundaries to `w` columns (as the Paragraph wraps
/// it; a word longer than a row is cut).
pub fn wrapped_rows(line: &ratatui::text::Line, w: usize) -> usize {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let (mut rows, mut used) = (1, 0);
    for word in text.split(' ') {
        let n = ratatui::text::Span::raw(word).width();
        let need = if used == 0 { n } else { used + 1 + n };
        if need <= w {
            used = need;
        } else {
            rows += 1;
            used = n.min(w);
            rows += n.saturating_sub(1) / w.max(1);
        }
    }
    rows
}

/// A duration given in microseconds, in at most 7 characters: 850ns, 18.5us, 1.23ms, 4.77s.
pub fn dur_us(us: f64) -> String {
    if us <= 0.0 {
        "0".into()
    } else if us < 1.0 {
        format!("{:.0}ns", us * 1e3)
    } else if us < 100.0 {
        format!("{us:.1}us")
    } else if us < 1e3 {
        format!("{us:.0}us")
    } else if us < 1e5 {
        format!("{:.2}ms", us / 1e3)
    } else if us < 1e6 {
        format!("{:.0}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_plus_and_start_read_as_tops() {
        assert_eq!(time_plus(0.0), "0:00.00");
        assert_eq!(time_plus(3723.456), "62:03.46");
        // 2023-11-14 22:13:20 UTC; the next day it is the date.
        let t = 1_700_000_000.0;
        assert_eq!(start(t, t + 600.0), "22:13");
        assert_eq!(start(t, t + 86400.0), "Nov14");
    }

    #[test]
    fn escapes_control_sequences() {
        assert_eq!(inert("a\x1b[31mred\x07"), "a\\x1b[31mred\\x07");
        assert_eq!(inert("x\ny"), "x\\ny");
        assert_eq!(inert("\u{202e}evil"), "\\u{202e}evil");
        assert_eq!(inert("名前"), "名前");
    }

    #[test]
    fn numbers_fit() {
        assert_eq!(num(0.0, 5), "0");
        assert_eq!(num(2.5, 5), "2.5");
        assert_eq!(num(1234.0, 5), "1234");
        assert_eq!(num(12345.0, 5), "12k");
        assert_eq!(num(4_100_000.0, 5), "4.1M");
        assert_eq!(kb(2048), "2048K");
        assert_eq!(kb(204800), "200M");
        assert_eq!(uptime(90061.0), "1d 1h");
    }

    #[test]
    fn negative_zero_is_never_shown() {
        for v in [-0.0, -0.0001, -0.04, -1e-12] {
            assert_eq!(fixed(v, 1), "0.0");
            assert_eq!(fixed(v, 0), "0");
            assert_eq!(pct(v), "0.0");
            assert!(!num(v, 6).starts_with('-'), "{v}");
        }
        assert_eq!(fixed(-0.4, 0), "0");
        assert_eq!(fixed(-0.06, 1), "-0.1", "a real negative keeps its sign");
        assert_eq!(num(-2.5, 6), "-2.5");
    }
}
