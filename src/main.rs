use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;

use clap::Parser;

use ttop::cli::{Cli, Command};
use ttop::collect::{self, Collector, Config};
use ttop::model::{Sample, derive};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let cfg = Config {
        bpf: !cli.no_bpf,
        pids: None,
    };
    let result = match &cli.command {
        Some(Command::Probe) => probe(&cfg),
        None if cli.json => json(&cli, &cfg),
        None => ttop::app::run::live(&cli, &cfg),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ttop: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn probe(cfg: &Config) -> anyhow::Result<()> {
    let c = Collector::new(cfg);
    println!("mode: {}", if c.mode().bpf { "bpf" } else { "procfs" });
    for p in &c.mode().problems {
        println!("problem: {p}");
    }
    for l in collect::bpf_common::libbpf_log() {
        println!("libbpf: {l}");
    }
    Ok(())
}

/// `ttop --json [-n COUNT]`: one Frame per interval as JSON Lines, no TUI.
fn json(cli: &Cli, cfg: &Config) -> anyhow::Result<()> {
    let sys = collect::collector::system_info();
    let collector = Collector::new(cfg);
    for p in &collector.mode().problems {
        eprintln!("ttop: {p}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let (tx, rx) = sync_channel::<Sample>(4);
    let handle = collect::collector::spawn(collector, cli.delay, cli.rt, tx, stop.clone());
    let mut prev: Option<Sample> = None;
    let mut written = 0u64;
    let stdout = std::io::stdout();
    while let Ok(s) = rx.recv() {
        if let Some(p) = prev.as_ref() {
            let f = derive(&sys, Some(p), &s);
            let mut out = stdout.lock();
            serde_json::to_writer(&mut out, &f)?;
            out.write_all(b"\n")?;
            out.flush()?;
            written += 1;
            if cli.count.is_some_and(|n| written >= n) {
                break;
            }
        }
        prev = Some(s);
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(rx);
    let _ = handle.join();
    Ok(())
}
