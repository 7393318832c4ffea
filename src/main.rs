use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc::sync_channel;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use ttop::cli::{Cli, Command};
use ttop::collect::{self, Collector, Config};

use ttop::model::{Sample, derive};
use ttop::record::writer::{Writer, header_for};

fn main() -> ExitCode {
    ttop::util::tune_allocator();
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match &cli.command {
        Some(Command::Completions(a)) => return print_generated(ttop::cli::completions(a.shell)),
        Some(Command::Man) => return print_generated(ttop::cli::man_page()),
        _ => {}
    }
    // The dashboard's settings file; -d and --color on the command line win over it.
    let config = (cli.command.is_none() && !cli.json).then(|| {
        let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        let file = ttop::app::config_file::load_for(cli.config.as_deref());
        if let Some(i) = file.as_ref().and_then(|f| f.settings.interval)
            && !given("delay")
        {
            cli.delay = std::time::Duration::from_secs_f64(i);
        }
        if file.as_ref().and_then(|f| f.settings.color) == Some(false) && !given("color") {
            cli.color = ttop::cli::ColorWhen::Never;
        }
        file
    });
    let mut settings = cli.settings();
    if settings.rt {
        // The whole process, before any thread starts (threads inherit it): loading the
        // probes, deriving and drawing must not be starved either.
        if let Err(e) = collect::raise_priority() {
            eprintln!("ttop: --rt: cannot use SCHED_FIFO ({e}); continuing at normal priority");
        }
    } else if !matches!(
        cli.command,
        Some(Command::Replay(_) | Command::Completions(_) | Command::Man)
    ) {
        // Watching the machine: not starved by the load it watches (see NICE).
        collect::thread::default_nice();
    }
    let pids = settings.cfg.pids.as_deref().unwrap_or(&[]);
    if let Err(e) = collect::filter::check_pids(pids)
        .and_then(|()| ttop::cli::check_processes(pids, ttop::cli::tgid_of))
    {
        eprintln!("ttop: {e}");
        return ExitCode::FAILURE;
    }
    // --cgroup PATH: a cgroup that exists, named below the mount from now on.
    if let Some(given) = settings.cfg.cgroup.take() {
        match collect::cgroup::resolve_path(&given) {
            Ok(rel) => settings.cfg.cgroup = Some(rel),
            Err(e) => {
                eprintln!("ttop: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    // What to know about --comm: printed now, and in the dashboard's banner.
    let notes = comm_notes(&settings);
    for n in &notes {
        eprintln!("ttop: {n}");
    }
    let cfg = settings.cfg.clone();
    let result = match &cli.command {
        Some(Command::Completions(_) | Command::Man) => Ok(()),
        Some(Command::Probe(args)) => {
            ttop::probe_cmd::probe(&cfg, args.verbose, args.json || cli.json)
        }
        Some(Command::Record(args)) => ttop::record::headless::record(&settings, args),
        Some(Command::Serve(args)) => ttop::serve::serve(&settings, args),
        Some(Command::Profile(args)) => ttop::profile_cmd::profile(args),
        Some(Command::Replay(args)) if args.json || cli.json => {
            ttop::record::dump::replay_json(&args.file)
        }
        Some(Command::Replay(args)) => ttop::app::replay::replay(&cli, args),
        None if cli.json => json(&cli, &cfg),
        None => ttop::app::run::live(&cli, &cfg, notes, config.flatten()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ttop: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Notes on the --comm NAME of a collecting run (see `cli::comm_notes`).
fn comm_notes(settings: &ttop::cli::Settings) -> Vec<String> {
    let Some(name) = settings.comm_given.as_deref() else {
        return Vec::new();
    };
    let spec = ttop::model::sample::FilterSpec {
        comm: settings.cfg.comm.clone(),
        ..Default::default()
    };
    ttop::cli::comm_notes(name, collect::filter::resolve(&spec).len())
}

/// Completions and the man page go to stdout; a closed pipe (`| head`) is not an error.
fn print_generated(bytes: Vec<u8>) -> ExitCode {
    match std::io::stdout().lock().write_all(&bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("ttop: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// `ttop --json [-n COUNT]`: one Frame per interval as JSON Lines, no TUI.
fn json(cli: &Cli, cfg: &Config) -> anyhow::Result<()> {
    let sys = collect::system_info();
    let collector = Collector::new(cfg);
    for p in &collector.mode().problems {
        eprintln!("ttop: {p}");
    }
    let stop = ttop::stop::Stop::on_signals()?;
    // --record: the same Samples also go to a file, so `ttop replay FILE --json`
    // prints exactly these frames.
    let mut recording = match &cli.record {
        Some(path) => Some(Writer::create(
            path,
            &header_for(&sys, cli.delay, cfg.pids.clone()),
        )?),
        None => None,
    };
    let (tx, rx) = sync_channel::<Sample>(4);
    let handle = collect::spawn(collector, cli.delay, cli.rt, tx, stop.clone());
    let mut prev: Option<Sample> = None;
    let mut written = 0u64;
    let mut window = ttop::model::findings::Window::new();
    let stdout = std::io::stdout();
    let mut line = Vec::new();
    while let Ok(s) = rx.recv() {
        if let Some(w) = recording.as_mut() {
            w.append(&s)?;
        }
        if let Some(p) = prev.as_ref() {
            let mut f = derive(&sys, Some(p), &s);
            window.push(&mut f);
            // One write per line: stdout's 1 KB line buffer cut an idle machine's
            // frame into 69 writes a tick.
            line.clear();
            ttop::record::dump::json_line(&f, &mut line)?;
            let mut out = stdout.lock();
            out.write_all(&line)?;
            out.flush()?;
            written += 1;
            if cli.count.is_some_and(|n| written >= n) {
                break;
            }
        }
        prev = Some(s);
        if stop.is_set() {
            break;
        }
    }
    stop.set();
    drop(rx);
    let _ = handle.join();
    recording.map_or(Ok(()), Writer::finish)
}
