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

/// Start `workload` (name, arguments), run `ttop SUB -p PID ARGS` on it until it ends,
/// stop the workload; the run must succeed.
fn ttop_on(workload: (&str, &[&str]), sub: &[&str], args: &[std::ffi::OsString]) {
    let _g = kernel_lock();
    let mut w = spawn_workload(workload.0, workload.1);
    let pid = pid_of(&mut w).to_string();
    let out = Command::new(ttop_bin())
        .args(sub)
        .args(["-p", &pid])
        .args(args)
        .output()
        .unwrap();
    let _ = w.kill();
    let _ = w.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ttop {sub:?} {args:?}: {err}");
}

/// For `test`: start `workload` (name, arguments), run `ttop profile -p PID ARGS
/// --pprof PB` on it, stop it. False (skipped) when not root.
fn profile_workload(
    test: &str,
    workload: (&str, &[&str]),
    args: &[&str],
    pb: &std::path::Path,
) -> bool {
    if !require_root(test) {
        return false;
    }
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    argv.extend(args.iter().map(Into::into));
    argv.extend(["--pprof".into(), pb.as_os_str().to_owned()]);
    ttop_on(workload, &["profile"], &argv);
    true
}

#[test]
fn pprof_shares_equal_the_folded_shares() {
    let (folded, pb) = (tmp("pprof.folded"), tmp("pprof.pb"));
    let o = folded.to_str().unwrap();
    let test = "pprof_shares_equal_the_folded_shares";
    if !profile_workload(
        test,
        ("burn31", &["1", "9"]),
        &["--duration", "4", "-o", o],
        &pb,
    ) {
        return;
    }
    let lines = parse_folded(&std::fs::read_to_string(&folded).unwrap());
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let leaf = |f: &str| leaf_samples(&lines, f);
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

    burner_lines_in_their_bodies(&pb, leaf);
}

/// `E` in the profile view writes pprof with files and lines as `ttop profile --pprof`
/// does (issue 35 item 5): from a `ttop record --profile` of the burner, replayed into
/// the view (the Samples keep each frame's line), the burner's functions are at lines
/// inside their bodies, each with the samples the view's own folded file gives it.
#[test]
fn view_export_has_the_lines_of_the_recorded_samples() {
    let test = "view_export_has_the_lines_of_the_recorded_samples";
    if !require_root(test) {
        return;
    }
    let rec = tmp("pprof_view.ttop");
    let _ = std::fs::remove_file(&rec);
    let argv: Vec<std::ffi::OsString> = ["--profile", "--duration", "4", "-o"]
        .into_iter()
        .map(Into::into)
        .chain([rec.as_os_str().to_owned()])
        .collect();
    ttop_on(("burn31", &["1", "9"]), &["record"], &argv);
    let mut r = ttop::record::Reader::open(&rec).unwrap();
    let sys = r.header().system.clone();
    let mut app = ttop::app::App::new();
    let mut prev = None;
    for i in 0..r.len() {
        let cur = r.sample(i).unwrap();
        app.push_frame(ttop::model::derive(&sys, prev.as_ref(), &cur));
        prev = Some(cur);
    }
    app.handle(ttop::app::Action::GoTo(ttop::app::View::Profile));
    let dir = tmp("pprof_view");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let t = 1_795_000_000.0; // 2026-11-18 11:06:40 UTC
    app.profile.export_to(&dir, t);
    let folded = std::fs::read_to_string(dir.join("ttop-20261118T110640Z.folded")).unwrap();
    let lines = parse_folded(&folded);
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    eprintln!(
        "{} stacks, {total} samples in the view's export",
        lines.len()
    );
    assert!(total >= 100, "4 s of the burner at 99 Hz: {total} samples");
    let leaf = |f: &str| leaf_samples(&lines, f);
    let pb = dir.join("ttop-20261118T110640Z.pb");
    let counts = pprof_top(&pb, "samples", false);
    assert_eq!(
        counts.values().sum::<f64>(),
        total as f64,
        "pprof and folded totals"
    );
    burner_lines_in_their_bodies(&pb, leaf);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&rec);
}

/// The samples of the folded `lines` whose leaf frame is `f`.
fn leaf_samples(lines: &[(String, u64)], f: &str) -> u64 {
    lines
        .iter()
        .filter(|(s, _)| s.rsplit(';').next() == Some(f))
        .map(|(_, n)| n)
        .sum()
}

/// By line (`go tool pprof -lines`, "burn_a /…/burn31.c:23"): the burner's functions
/// and their caller in its source file, at lines inside their bodies, with all of the
/// samples `leaf` says each function has.
fn burner_lines_in_their_bodies(pb: &std::path::Path, leaf: impl Fn(&str) -> u64) {
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/burn31.c"),
    )
    .unwrap();
    let by_line = pprof_top(pb, "samples", true);
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

/// `go tool pprof -raw` of `file`: each location's lines, innermost first, as
/// (function, file, line).
fn pprof_locations(file: &std::path::Path) -> Vec<Vec<(String, String, u32)>> {
    let go = go_bin().expect("Go (installed by .ci/deps)");
    let o = Command::new(go)
        .args(["tool", "pprof", "-raw"])
        .arg(file)
        .output()
        .expect("go tool pprof");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // "    13: 0x0 M=1 Worker::step /…/cppmutex.cpp:38:0 s=0(Worker::step())", then one
    // line per outer function, indented: "             Worker::run /…:44:0 s=0(…)".
    let mut locs: Vec<Vec<(String, String, u32)>> = Vec::new();
    let section = text
        .split_once("\nLocations\n")
        .and_then(|(_, rest)| rest.split_once("\nMappings\n"))
        .map_or("", |(l, _)| l);
    for l in section.lines() {
        let t = l.trim_start();
        let head = t
            .split_once(": 0x")
            .filter(|(n, _)| n.parse::<u32>().is_ok());
        let rest = match head {
            Some((_, r)) => {
                locs.push(Vec::new());
                // "0x0 M=1 name file:line:col s=0(...)"
                r.split_once(' ')
                    .and_then(|(_, r)| r.split_once(' '))
                    .map_or("", |(_, r)| r)
            }
            None => t,
        };
        let f: Vec<&str> = rest.split(' ').collect();
        let at: Vec<&str> = f.get(1).copied().unwrap_or("").rsplitn(3, ':').collect();
        if let (Some(loc), [_, line, file]) = (locs.last_mut(), at.as_slice()) {
            // pprof shows C++ names without their parameters; a version may not.
            let name = f[0].split('(').next().unwrap_or(f[0]);
            loc.push((
                name.to_string(),
                file.to_string(),
                line.parse().unwrap_or(0),
            ));
        }
    }
    locs
}

/// A call inlined into its caller is a Line of the caller's Location, innermost first,
/// each at a line of its own function (cppmutex: `step` is always inlined into `run`
/// and calls `take_lock`, where the threads wait for the mutex); off-CPU.
#[test]
fn pprof_inlined_calls_are_lines_of_one_location() {
    let pb = tmp("pprof_inlined.pb");
    let test = "pprof_inlined_calls_are_lines_of_one_location";
    let off_cpu = ["--off-cpu", "--duration", "2"];
    if !profile_workload(test, ("cppmutex", &["4", "9"]), &off_cpu, &pb) {
        return;
    }
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/cppmutex.cpp"),
    )
    .unwrap();
    let locs = pprof_locations(&pb);
    let inlined: Vec<_> = locs
        .iter()
        .filter(|l| l.len() == 2 && l[0].0 == "Worker::step" && l[1].0 == "Worker::run")
        .collect();
    eprintln!("step inlined into run: {inlined:?}");
    assert!(!inlined.is_empty(), "no step-in-run location in {locs:?}");
    for l in inlined {
        for (f, file, line) in l {
            let body = body_lines(&src, f);
            assert!(file.ends_with("/cppmutex.cpp"), "{l:?}");
            assert!(body.contains(line), "{f} at {line}, outside {body:?}");
        }
    }
}
