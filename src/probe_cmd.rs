//! `ttop probe`: what works on this kernel. Loads every collector as the dashboard would
//! and prints, for each figure family, whether it is measured, measured through an older
//! hook (a fallback), or not available, with the hook and the reason; `-v` adds libbpf's
//! log with the verifier's words on every program the kernel rejected. Then each loaded
//! program's cost (ns a run, runs a second) over a COST_WINDOW of BPF statistics while
//! the machine goes on as it is.

use std::io::Write;

use serde::Serialize;

use crate::collect::bpf::{common as bpf_common, kernel};
use crate::collect::{Collector, Config};
use crate::model::features::{self, Feature};
use crate::model::own::ProgCost;

/// How long `ttop probe` keeps BPF statistics on to measure its programs' cost.
const COST_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Serialize)]
struct Report<'a> {
    kernel: &'a str,
    mode: &'a str,
    btf: bool,
    kprobes: bool,
    features: &'a [Feature],
    problems: &'a [String],
    /// Each program's cost over the window, most costly first; empty and
    /// `programs_not_measured` set when it could not be measured.
    programs: Vec<ProgCost>,
    programs_not_measured: Option<String>,
}

/// Print the table (or its JSON) to stdout.
pub fn probe(cfg: &Config, verbose: bool, json: bool) -> anyhow::Result<()> {
    let c = Collector::new(cfg);
    let facts = kernel::facts();
    let mode = if c.mode().bpf { "bpf" } else { "procfs" };
    let report = Report {
        kernel: &facts.release,
        mode,
        btf: facts.btf,
        kprobes: facts.kprobes,
        features: &c.mode().features,
        problems: &c.mode().problems,
        programs: Vec::new(),
        programs_not_measured: None,
    };
    let mut report = report;
    if c.mode().bpf {
        match program_costs() {
            Ok(p) => report.programs = p,
            Err(e) => report.programs_not_measured = Some(e),
        }
    } else {
        report.programs_not_measured = Some("no eBPF programs loaded".into());
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(table(&report).as_bytes())?;
        out.write_all(cost_lines(&report).as_bytes())?;
    }
    if verbose {
        writeln!(out, "\nlibbpf's log:")?;
        for l in bpf_common::libbpf_log() {
            writeln!(out, "  {l}")?;
        }
    }
    Ok(())
}

/// The human table: a line per figure family, the reason under it when there is one.
fn table(r: &Report<'_>) -> String {
    let mut s = format!(
        "ttop probe: Linux {}, {} mode (BTF {}, kprobes {})\n\n",
        r.kernel,
        if r.mode == "bpf" {
            "eBPF"
        } else {
            "procfs-only"
        },
        yes(r.btf),
        yes(r.kprobes),
    );
    let w = r
        .features
        .iter()
        .map(|f| features::label_of(&f.id).chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    s += &format!("{:<w$}  {:<13}  {}\n", "FIGURE", "STATUS", "HOOK");
    for f in r.features {
        s += &format!(
            "{:<w$}  {:<13}  {}\n",
            features::label_of(&f.id),
            f.status.label(),
            if f.hook.is_empty() { "-" } else { &f.hook }
        );
        if !f.note.is_empty() {
            s += &format!("    {}\n", f.note);
        }
    }
    let other: Vec<&String> = r
        .problems
        .iter()
        .filter(|p| !r.features.iter().any(|f| f.problem().as_ref() == Some(*p)))
        .collect();
    if !other.is_empty() {
        s += "\nproblems:\n";
        for p in other {
            s += &format!("  {p}\n");
        }
    }
    s
}

/// This process's programs' cost over COST_WINDOW of BPF statistics.
fn program_costs() -> Result<Vec<ProgCost>, String> {
    use crate::collect::bpf::stats;
    let ids = stats::prog_ids_of(std::process::id());
    let mut names = std::collections::HashMap::new();
    let fd = stats::enable_stats()?;
    let t0 = std::time::Instant::now();
    let a = stats::snapshot_named(&ids, &mut names);
    std::thread::sleep(COST_WINDOW);
    let b = stats::snapshot_named(&ids, &mut names);
    let window_ns = t0.elapsed().as_nanos() as u64;
    drop(fd);
    let runs: Vec<crate::model::own::ProgRun> = stats::diff(&a, &b)
        .into_iter()
        .map(|p| crate::model::own::ProgRun {
            name: p.name,
            run_time_ns: p.run_time_ns,
            run_cnt: p.run_cnt,
        })
        .collect();
    Ok(crate::model::own::prog_costs(&runs, window_ns))
}

/// The programs' lines of the table.
fn cost_lines(r: &Report<'_>) -> String {
    let mut s = format!(
        "
eBPF programs' cost over {:.0} s of BPF statistics (this machine, now):
",
        COST_WINDOW.as_secs_f64()
    );
    if let Some(why) = &r.programs_not_measured {
        return s + &format!(
            "  not measured: {why}
"
        );
    }
    let w = r
        .programs
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    s += &format!(
        "  {:<w$}  {:>9}  {:>10}  {:>7}
",
        "PROGRAM", "NS/RUN", "RUNS/S", "CPU"
    );
    for p in &r.programs {
        let per = p
            .ns_per_run
            .map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
        s += &format!(
            "  {:<w$}  {:>9}  {:>10.0}  {:>6.2}%\n",
            p.name, per, p.runs_per_s, p.cpu_pct
        );
    }
    s
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::Status;

    #[test]
    fn the_table_says_status_hook_and_reason() {
        let features = vec![
            Feature::measured("runnable", "tp_btf/sched_switch"),
            Feature::missing("kernel_locks", "needs Linux 5.19"),
        ];
        let problems = vec![
            features[1].problem().unwrap(),
            "probe x: unexpected error".to_string(),
        ];
        let r = Report {
            kernel: "5.10.0-46-amd64",
            mode: "bpf",
            btf: true,
            kprobes: true,
            features: &features,
            problems: &problems,
            programs: Vec::new(),
            programs_not_measured: Some("no eBPF programs loaded".into()),
        };
        let t = table(&r);
        assert!(
            t.starts_with("ttop probe: Linux 5.10.0-46-amd64, eBPF mode (BTF yes, kprobes yes)")
        );
        let line = t
            .lines()
            .find(|l| l.starts_with("kernel-lock contention"))
            .unwrap();
        assert!(
            line.contains(Status::Missing.label()) && line.ends_with(" -"),
            "{line}"
        );
        assert!(t.contains("\n    needs Linux 5.19\n"), "{t}");
        // A feature's own sentence is not repeated; anything else is listed.
        assert!(
            t.contains("problems:\n  probe x: unexpected error\n"),
            "{t}"
        );
        assert_eq!(t.matches("needs Linux 5.19").count(), 1, "{t}");
        // A cost not measured says so, never a 0.
        assert!(
            cost_lines(&r).ends_with("  not measured: no eBPF programs loaded\n"),
            "{}",
            cost_lines(&r)
        );
    }
}
