//! `ttop profile --pprof FILE` read by the reference reader, `go tool pprof` (issue 35
//! item 5): the 3:1 burner's two functions get the same samples there as in the folded
//! output written by the same run, and the CPU time is samples times the period.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::profile::*;
use common::watch::pid_of;
use common::*;

/// `go tool pprof -top` of `file` for one sample type: flat value per function.
fn pprof_top(file: &std::path::Path, index: &str) -> BTreeMap<String, f64> {
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
    let counts = pprof_top(&pb, "samples");
    let cpu = pprof_top(&pb, "cpu");
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
}
