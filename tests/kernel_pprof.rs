//! `ttop profile --pprof FILE` read by the reference reader, `go tool pprof` (issue 35
//! item 5): the 3:1 burner's two functions get the same samples there as in the folded
//! output written by the same run, and the CPU time is samples times the period; by
//! line (`-lines`), the burner's functions (built `-g`) are in its source file at lines
//! inside their own bodies.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::profile::*;
use common::watch::pid_of;
use common::*;

/// `go tool pprof -top` of `file` for one sample type: flat value per function (with
/// `-lines`, per "function file:line").
fn pprof_top(file: &std::path::Path, index: &str, lines: bool) -> BTreeMap<String, f64> {
    let go = go_bin().expect("Go (installed by .ci/deps)");
    let o = Command::new(go)
        .args([
            "tool",
            "pprof",
            "-top",
            "-nodecount=1000",
            "-nodefraction=0",
            "-unit=ns",
        ])
        .arg(format!("-sample_index={index}"))
        .args(lines.then_some("-lines"))
        .arg(file)
        .output()
        .expect("go tool pprof");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "go tool pprof: {}{text}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Rows: flat flat% sum% cum cum% name
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') {
                return None;
            }
            let v = f[0].trim_end_matches("ns").parse::<f64>().ok()?;
            Some((f[5..].join(" "), v))
        })
        .collect()
}

#[test]
fn pprof_shares_equal_the_folded_shares() {
    if !require_root("pprof_shares_equal_the_folded_shares") {
        return;
    }
    let _g = kernel_lock();
    let mut w = spawn_workload("burn31", &["1", "9"]);
    let pid = pid_of(&mut w);
    let (folded, pb) = (tmp("pprof.folded"), tmp("pprof.pb"));
    let out = Command::new(ttop_bin())
        .args(["profile", "-p", &pid.to_string(), "--duration", "4", "-o"])
        .arg(&folded)
        .arg("--pprof")
        .arg(&pb)
        .output()
        .unwrap();
    let _ = w.kill();
    let _ = w.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = parse_folded(&std::fs::read_to_string(&folded).unwrap());
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let leaf = |f: &str| -> u64 {
        lines
            .iter()
            .filter(|(s, _)| s.rsplit(';').next() == Some(f))
            .map(|(_, n)| n)
            .sum()
    };
    let counts = pprof_top(&pb, "samples", false);
    let cpu = pprof_top(&pb, "cpu", false);
    // The period pprof carries: whole nanoseconds per sample at 99 Hz.
    let period = (1e9f64 / 99.0).floor();
    for f in ["burn_a", "burn_b"] {
        let (want, got) = (leaf(f), counts.get(f).copied().unwrap_or(0.0));
        eprintln!(
            "{f}: folded {want} of {total} ({:.1}%), pprof {got} samples, {:.0} ns",
            100.0 * want as f64 / total as f64,
            cpu[f]
        );
        assert!(want > 0, "{f} never sampled");
        assert_eq!(got, want as f64, "{f}: pprof and folded disagree");
        assert!(
            (cpu[f] - want as f64 * period).abs() <= 1.0,
            "{f}: {} ns for {want} samples",
            cpu[f]
        );
    }
    let pprof_total: f64 = counts.values().sum();
    assert_eq!(pprof_total, total as f64, "flat samples over all functions");

    // By line: "burn_a /…/burn31.c:23".
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/burn31.c"),
    )
    .unwrap();
    let by_line = pprof_top(&pb, "samples", true);
    // Their caller's frames are return addresses: the lines of the calls, in worker.
    for f in ["burn_a", "burn_b", "worker"] {
        let body = body_lines(&src, f);
        let rows: Vec<(&String, &f64)> = by_line
            .iter()
            .filter(|(k, _)| k.split(' ').next() == Some(f))
            .collect();
        eprintln!("{f}: lines {body:?} of burn31.c: {rows:?}");
        for (row, _) in &rows {
            let (file, line) = row
                .split_once(' ')
                .and_then(|(_, at)| at.rsplit_once(':'))
                .unwrap_or_else(|| panic!("{row}: no file:line"));
            assert!(
                file.ends_with("/burn31.c"),
                "{row}: not the burner's source"
            );
            let line: u32 = line.parse().unwrap();
            assert!(body.contains(&line), "{row}: line outside {f} {body:?}");
        }
        assert!(!rows.is_empty(), "{f}: no line");
        let samples: f64 = rows.iter().map(|(_, n)| **n).sum();
        assert_eq!(samples, leaf(f) as f64, "{f}: its lines' flat samples");
    }
}

/// The lines of C function `f` in `src`, 1-based: from its definition's first line to
/// the `}` that closes it in column 0.
fn body_lines(src: &str, f: &str) -> std::ops::RangeInclusive<u32> {
    let lines: Vec<&str> = src.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&format!("{f}(")) && l.trim_end().ends_with('{'))
        .unwrap_or_else(|| panic!("{f} not defined"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "}")
            .unwrap_or_else(|| panic!("{f} not closed"));
    (start as u32 + 1)..=(end as u32 + 1)
}
