//! `ttop profile`: sample on-CPU stacks for a while, then write them folded, as an
//! SVG flame graph (inferno draws it) and/or as pprof with source lines. The samples,
//! unwinding and naming are `collect::profile`'s; the formats are `model::profile`'s.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cli::ProfileArgs;
use crate::collect::bpf::common as bpf_common;
use crate::collect::filter;
use crate::collect::profile::{ProfileConfig, Profiler};
use crate::model::sample::FilterSpec;

/// How often a --comm filter looks for new processes.
const RESCAN: Duration = Duration::from_secs(1);

pub fn profile(args: &ProfileArgs) -> anyhow::Result<()> {
    filter::check_pids(&args.pids).map_err(anyhow::Error::msg)?;
    // Why eBPF cannot run, in one sentence, before libbpf tries; and whatever libbpf
    // says goes into the log the error is explained from, not raw onto stderr.
    if let Some(why) = bpf_common::preflight() {
        bail!(
            "profiling needs eBPF: {}",
            why.trim_start_matches("eBPF off: ")
        );
    }
    bpf_common::capture_libbpf_log();
    let spec = FilterSpec {
        pids: args.pids.clone(),
        comm: args
            .comm
            .as_deref()
            .map(|c| crate::cli::kernel_comm(c).to_string()),
        matched: Vec::new(),
        cgroup: None,
    };
    let filtered = !args.pids.is_empty() || args.comm.is_some();
    let pids = if filtered {
        filter::resolve(&spec)
    } else {
        Vec::new()
    };
    if let Some(name) = &args.comm {
        let named = filter::resolve(&FilterSpec {
            comm: spec.comm.clone(),
            ..Default::default()
        });
        for note in crate::cli::comm_notes(name, named.len()) {
            eprintln!("ttop: {note}");
        }
    }
    let mut p = Profiler::start(&ProfileConfig {
        hz: args.freq,
        filter: filtered,
        pids,
        off_cpu: args.off_cpu,
        lines: args.pprof.is_some(),
    })
    .map_err(anyhow::Error::msg)?;
    let stop = crate::stop::Stop::on_signals()?;
    let start = Instant::now();
    let mut rescan = start + RESCAN;
    while start.elapsed() < args.duration && !stop.is_set() {
        p.poll(Duration::from_millis(100));
        if args.comm.is_some() && Instant::now() >= rescan {
            rescan += RESCAN;
            for pid in filter::resolve(&spec) {
                p.watch(pid);
            }
        }
    }
    p.poll(Duration::ZERO);
    p.finish();
    let (ring_full, no_kstack) = p.lost();
    let prof = p.profile();
    let lost = if ring_full + no_kstack > 0 {
        format!(" (lost: {ring_full} ring buffer full, {no_kstack} kernel stacks not stored)")
    } else {
        String::new()
    };
    if args.off_cpu {
        // Waits faster than this process unwinds are kept one in N at random, each
        // counted N times: the totals are then estimates, and the line says so.
        let (seen, kept) = p.waits();
        let sampled = if kept > 0 && kept < seen {
            format!(
                ", {kept} of {seen} waits kept their stack (1 in {:.0}; the time of all of them is counted)",
                seen as f64 / kept as f64
            )
        } else {
            format!(", every one of {seen} waits kept")
        };
        eprintln!(
            "ttop: {:.3} s off-CPU in {} distinct stacks over {:.1} s (counts are microseconds){sampled}{lost}",
            prof.total() as f64 / 1e6,
            prof.len(),
            start.elapsed().as_secs_f64(),
        );
    } else {
        eprintln!(
            "ttop: {} samples, {} distinct stacks over {:.1} s at {} Hz{lost}",
            prof.total(),
            prof.len(),
            start.elapsed().as_secs_f64(),
            args.freq,
        );
    }
    let lines = prof.folded();
    let to_stdout = match &args.output {
        Some(o) => o.as_os_str() == "-",
        None => args.svg.is_none() && args.pprof.is_none(),
    };
    if to_stdout {
        let mut out = std::io::stdout().lock();
        for l in &lines {
            writeln!(out, "{l}")?;
        }
    } else if let Some(o) = &args.output {
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        std::fs::write(o, text).with_context(|| format!("write {}", o.display()))?;
    }
    if let Some(svg) = &args.svg {
        write_svg(svg, &lines, args)?;
    }
    if let Some(path) = &args.pprof {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let took = start.elapsed();
        let kind = crate::model::profile::pprof::Kind {
            off_cpu: args.off_cpu,
            hz: args.freq,
            start_unix_ns: wall.saturating_sub(took).as_nanos() as u64,
            duration_ns: took.as_nanos() as u64,
        };
        let bytes = crate::model::profile::pprof::encode_stacks(&prof.located_stacks(), &kind);
        std::fs::write(path, bytes).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// An SVG flame graph of `lines` (inferno; root at the bottom, as flamegraph.pl draws it).
fn write_svg(path: &Path, lines: &[String], args: &ProfileArgs) -> anyhow::Result<()> {
    if lines.is_empty() {
        bail!(
            "no samples: nothing to draw in {} (was the process on a CPU?)",
            path.display()
        );
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = match (&args.comm, args.pids.is_empty()) {
        (Some(c), _) => format!("ttop profile --comm {c}"),
        (None, false) => format!(
            "ttop profile -p {}",
            args.pids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        (None, true) => "ttop profile (all processes)".to_string(),
    };
    if args.off_cpu {
        opts.title = format!("{} --off-cpu", opts.title);
        opts.count_name = "us".to_string();
        // flamegraph.pl --color=io, the blue of off-CPU graphs.
        opts.colors = inferno::flamegraph::color::Palette::Basic(
            inferno::flamegraph::color::BasicPalette::Io,
        );
    } else {
        opts.count_name = "samples".to_string();
    }
    let f = std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut w)
        .with_context(|| format!("draw {}", path.display()))?;
    w.flush()?;
    Ok(())
}
