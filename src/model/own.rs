//! ttop's own cost (issue 36): the CPU of its process, its resident memory and the run
//! time of its eBPF programs, which run in other threads' context and so are not in its
//! process's CPU. Measured, never estimated: a figure not measured is `None` (null in
//! the JSON, "-" on screen), never 0.

use serde::{Deserialize, Serialize};

/// One program's counters over a BPF statistics window (kernel `run_time_ns`,
/// `run_cnt`, which move only while statistics are enabled).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgRun {
    /// The program's function name (from its BTF; the kernel's own name is cut at 15
    /// characters).
    pub name: String,
    pub run_time_ns: u64,
    pub run_cnt: u64,
}

/// The last completed window over which the kernel kept BPF run-time statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfWindow {
    /// CLOCK_MONOTONIC at the window's end, and its length (ns).
    pub end_mono_ns: u64,
    pub window_ns: u64,
    pub progs: Vec<ProgRun>,
}

/// What one tick read of ttop's own cost: raw and cumulative, as every Sample part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnSample {
    /// CPU time of ttop's whole process (all threads, the exited ones too), ns, from
    /// CLOCK_PROCESS_CPUTIME_ID (the kernel's schedstat clock for the thread group).
    pub cpu_ns: u64,
    /// Resident memory (/proc/self/statm), bytes.
    pub rss_bytes: u64,
    /// The last completed statistics window; None until one was measured.
    pub bpf: Option<BpfWindow>,
    /// Why the BPF cost is not measured, when it cannot be (no eBPF, or the kernel
    /// refused BPF_ENABLE_STATS).
    pub bpf_why: Option<String>,
    /// What the ceiling on the programs' cost has shed (model/shed.rs); None when the
    /// ceiling is off, and in recordings made before it existed.
    #[serde(default)]
    pub shed: Option<super::shed::Shed>,
}

/// One program's cost over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProgCost {
    pub name: String,
    /// Average run time; None when it did not run in the window.
    pub ns_per_run: Option<f64>,
    pub runs_per_s: f64,
    /// Its run time as a share of one CPU, %.
    pub cpu_pct: f64,
}

/// ttop's own cost as the JSON `self` object and the header show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OwnFrame {
    /// ttop's process (user space and the system calls it makes), % of one CPU over
    /// the interval; None on the first frame.
    pub cpu_pct: Option<f64>,
    pub rss_bytes: u64,
    /// All of ttop's eBPF programs, % of one CPU over the last statistics window; None
    /// when not measured (yet, or at all: `bpf_not_measured` says why).
    pub bpf_cpu_pct: Option<f64>,
    /// The window's length and how long ago it ended, seconds.
    pub bpf_window_s: Option<f64>,
    pub bpf_age_s: Option<f64>,
    pub bpf_not_measured: Option<String>,
    /// Per program, most costly first; empty when not measured.
    pub bpf_programs: Vec<ProgCost>,
    /// The ceiling on the programs' cost and what it has shed; None when it is off.
    pub shed: Option<super::shed::ShedFrame>,
}

/// Each program's cost over a window of `window_ns`, most costly first.
pub fn prog_costs(progs: &[ProgRun], window_ns: u64) -> Vec<ProgCost> {
    let secs = window_ns.max(1) as f64 / 1e9;
    let mut v: Vec<ProgCost> = progs
        .iter()
        .map(|p| ProgCost {
            name: p.name.clone(),
            ns_per_run: (p.run_cnt > 0).then(|| p.run_time_ns as f64 / p.run_cnt as f64),
            runs_per_s: p.run_cnt as f64 / secs,
            cpu_pct: 100.0 * p.run_time_ns as f64 / 1e9 / secs,
        })
        .collect();
    v.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct).then(a.name.cmp(&b.name)));
    v
}

/// The interval's own cost from two Samples' parts (`mono_ns`: the current Sample's).
pub fn derive(
    prev: Option<&OwnSample>,
    cur: &OwnSample,
    mono_ns: u64,
    interval_s: f64,
) -> OwnFrame {
    let cpu_pct = prev
        .filter(|_| interval_s > 0.0)
        .map(|p| 100.0 * cur.cpu_ns.saturating_sub(p.cpu_ns) as f64 / 1e9 / interval_s);
    let mut f = OwnFrame {
        cpu_pct,
        rss_bytes: cur.rss_bytes,
        bpf_not_measured: cur.bpf_why.clone(),
        shed: cur
            .shed
            .as_ref()
            .map(|s| super::shed::ShedFrame::of(s, mono_ns)),
        ..Default::default()
    };
    if let Some(w) = &cur.bpf {
        let secs = w.window_ns.max(1) as f64 / 1e9;
        let total: u64 = w.progs.iter().map(|p| p.run_time_ns).sum();
        f.bpf_cpu_pct = Some(100.0 * total as f64 / 1e9 / secs);
        f.bpf_window_s = Some(secs);
        f.bpf_age_s = Some(mono_ns.saturating_sub(w.end_mono_ns) as f64 / 1e9);
        f.bpf_programs = prog_costs(&w.progs, w.window_ns);
    } else if f.bpf_not_measured.is_none() {
        f.bpf_not_measured = Some("not measured yet (the first statistics window is open)".into());
    }
    f
}

/// The header's short figure: "ttop 0.3% +BPF 1.2% 29M" (`-` where not measured).
pub fn header_figure(f: &OwnFrame) -> String {
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}%"));
    format!(
        "ttop {} +BPF {} {}M",
        pct(f.cpu_pct),
        pct(f.bpf_cpu_pct),
        (f.rss_bytes + (1 << 19)) >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> BpfWindow {
        BpfWindow {
            end_mono_ns: 5_000_000_000,
            window_ns: 2_000_000_000,
            progs: vec![
                ProgRun {
                    name: "ttop_sched_switch".into(),
                    run_time_ns: 30_000_000,
                    run_cnt: 100_000,
                },
                ProgRun {
                    name: "ttop_idle".into(),
                    run_time_ns: 0,
                    run_cnt: 0,
                },
            ],
        }
    }

    #[test]
    fn not_measured_is_none_never_zero() {
        let cur = OwnSample {
            cpu_ns: 10,
            rss_bytes: 3 << 20,
            ..Default::default()
        };
        let f = derive(None, &cur, 1, 1.0);
        assert_eq!(f.cpu_pct, None);
        assert_eq!(f.bpf_cpu_pct, None);
        assert!(f.bpf_not_measured.is_some());
        assert!(f.bpf_programs.is_empty());
        assert_eq!(header_figure(&f), "ttop - +BPF - 3M");
    }

    #[test]
    fn window_gives_rates_and_shares() {
        let prev = OwnSample {
            cpu_ns: 1_000_000_000,
            ..Default::default()
        };
        let cur = OwnSample {
            cpu_ns: 1_020_000_000,
            rss_bytes: 29 << 20,
            bpf: Some(window()),
            bpf_why: None,
            shed: None,
        };
        let f = derive(Some(&prev), &cur, 6_000_000_000, 2.0);
        assert_eq!(f.cpu_pct, Some(1.0));
        assert_eq!(f.bpf_cpu_pct, Some(1.5));
        assert_eq!(f.bpf_window_s, Some(2.0));
        assert_eq!(f.bpf_age_s, Some(1.0));
        assert_eq!(f.bpf_not_measured, None);
        let s = &f.bpf_programs[0];
        assert_eq!(s.name, "ttop_sched_switch");
        assert_eq!(s.ns_per_run, Some(300.0));
        assert_eq!(s.runs_per_s, 50_000.0);
        // A program that did not run has no average, not an average of 0.
        assert_eq!(f.bpf_programs[1].ns_per_run, None);
        assert_eq!(header_figure(&f), "ttop 1.0% +BPF 1.5% 29M");
    }
}
