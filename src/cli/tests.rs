//! Unit tests for cli: interval, duration and size parsing; which flags each subcommand
//! offers and how they merge into the settings.

use super::*;
use crate::collect::FutexChoice;

#[test]
fn intervals() {
    assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
    assert_eq!(parse_interval("0.1").unwrap(), Duration::from_millis(100));
    assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
    assert!(parse_interval("0.05").is_err());
    assert!(parse_interval("abc").is_err());
    assert!(parse_interval("-1").is_err());
    assert!(parse_interval("NaN").is_err());
    assert!(parse_interval("inf").is_err());
}

#[test]
fn durations() {
    assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
    assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
    for bad in ["", "0", "-5", "x", "5d", "NaNs", "infh", "1ms"] {
        assert!(parse_duration(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn spans_and_sizes() {
    assert_eq!(parse_span("7d").unwrap(), Duration::from_secs(7 * 86_400));
    assert_eq!(parse_span("1h").unwrap(), Duration::from_secs(3600));
    assert_eq!(parse_span("3s").unwrap(), Duration::from_secs(3));
    for bad in ["", "0d", "-1d", "xd", "d", "1ms"] {
        assert!(parse_span(bad).is_err(), "{bad} accepted");
    }
    assert_eq!(parse_size("500M").unwrap(), 500 << 20);
    assert_eq!(parse_size("2G").unwrap(), 2 << 30);
    assert_eq!(parse_size("2GB").unwrap(), 2 << 30);
    assert_eq!(parse_size("4096").unwrap(), 4096);
    for bad in ["", "0", "-1M", "5X", "M"] {
        assert!(parse_size(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn flags_are_offered_where_they_mean_something() {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let flags = |name: &str| -> Vec<String> {
        let sub = cmd.find_subcommand(name).expect(name);
        sub.get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect()
    };
    let replay = flags("replay");
    for f in ["no-bpf", "no-futex", "rt", "delay", "comm"] {
        assert!(!replay.iter().any(|x| x == f), "replay offers --{f}");
    }
    let record = flags("record");
    for f in [
        "no-bpf", "no-futex", "rt", "delay", "comm", "pid", "dir", "metrics",
    ] {
        assert!(record.iter().any(|x| x == f), "record lacks --{f}");
    }
    let cli =
        Cli::try_parse_from(["ttop", "-d", "2", "record", "-o", "x", "--comm", "db"]).unwrap();
    let s = cli.settings();
    assert_eq!(s.delay, Duration::from_secs(2));
    assert_eq!(s.cfg.comm.as_deref(), Some("db"));
    let cli = Cli::try_parse_from(["ttop", "-d", "2", "record", "-o", "x", "-d", "3"]).unwrap();
    assert_eq!(
        cli.settings().delay,
        Duration::from_secs(3),
        "the subcommand's own wins"
    );
    assert!(Cli::try_parse_from(["ttop", "replay", "f", "--no-bpf"]).is_err());
    // --no-futex before or after a collecting subcommand.
    for args in [
        &["ttop", "--no-futex"][..],
        &["ttop", "--no-futex", "record", "-o", "x"],
        &["ttop", "serve", "--no-futex"],
    ] {
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.settings().cfg.futex, FutexChoice::Off, "{args:?}");
    }
    assert_eq!(
        Cli::try_parse_from(["ttop"]).unwrap().settings().cfg.futex,
        FutexChoice::Sleeps
    );
    // --rt for a profile, after the subcommand as before it.
    for args in [
        &["ttop", "profile", "--rt"][..],
        &["ttop", "--rt", "profile"],
    ] {
        assert!(Cli::try_parse_from(args).unwrap().settings().rt, "{args:?}");
    }
    assert!(Cli::try_parse_from(["ttop", "record", "-o", "x", "--dir", "d"]).is_err());
    assert!(Cli::try_parse_from(["ttop", "record", "-o", "x", "--rotate", "1h"]).is_err());
    assert!(Cli::try_parse_from(["ttop", "record"]).is_err());
    assert!(Cli::try_parse_from(["ttop", "record", "-o", "x", "--top", "3"]).is_err());
}

#[test]
fn comm_names_and_counts() {
    assert_eq!(kernel_comm("qemu-system-x86_64"), "qemu-system-x86");
    assert_eq!(kernel_comm("postgres"), "postgres");
    // Cut on a character boundary: 14 bytes and a 2-byte character.
    assert_eq!(kernel_comm("abcdefghijklmné"), "abcdefghijklmn");
    assert_eq!(comm_notes("postgres", 2), Vec::<String>::new());
    let n = comm_notes("qemu-system-x86_64", 0);
    assert_eq!(n.len(), 2, "{n:?}");
    assert!(n[0].contains("'qemu-system-x86'") && n[1].contains("no process"));
    assert_eq!(parse_count("3"), Ok(3));
    for bad in ["0", "-1", "x", ""] {
        assert!(parse_count(bad).is_err(), "{bad}");
    }
    let tasks = |pid| match pid {
        10 => Some((10, "main".to_string())),
        11 => Some((10, "main".to_string())),
        _ => None,
    };
    assert!(check_processes(&[10, 99], tasks).is_ok());
    let e = check_processes(&[10, 11], tasks).unwrap_err();
    assert!(e.starts_with("11 is a thread of process 10 (main)"), "{e}");
}

#[test]
fn bpf_budget() {
    use super::parse::{BpfBudget, parse_bpf_budget};
    let record = Cli::try_parse_from(["ttop", "record", "-o", "x", "--bpf-budget", "1.5"]).unwrap();
    assert_eq!(record.settings().cfg.bpf_budget_pct, Some(1.5));
    assert_eq!(parse_bpf_budget("3"), Ok(BpfBudget(Some(3.0))));
    assert_eq!(parse_bpf_budget("0.5%"), Ok(BpfBudget(Some(0.5))));
    assert_eq!(parse_bpf_budget("off"), Ok(BpfBudget(None)));
    assert_eq!(parse_bpf_budget("0"), Ok(BpfBudget(None)));
    assert!(parse_bpf_budget("-1").is_err());
    assert!(parse_bpf_budget("lots").is_err());
    // The target budget unless one is given; `off` turns the ceiling off.
    let target = Some(crate::model::shed::TARGET_BUDGET_PCT);
    let cli = Cli::try_parse_from(["ttop", "--json"]).unwrap();
    assert_eq!(cli.settings().cfg.bpf_budget_pct, target);
    let record = Cli::try_parse_from(["ttop", "record", "-o", "x"]).unwrap();
    assert_eq!(record.settings().cfg.bpf_budget_pct, target);
    let cli = Cli::try_parse_from(["ttop", "--json", "--bpf-budget", "off"]).unwrap();
    assert_eq!(cli.settings().cfg.bpf_budget_pct, None);
    let cli = Cli::try_parse_from(["ttop", "--bpf-budget", "off", "record", "-o", "x"]).unwrap();
    assert_eq!(cli.settings().cfg.bpf_budget_pct, None);
}
