//! `cargo bench --bench system [-- --quick] [-- --only 1,3]`: the issue 6 suite. Needs
//! root (eBPF, BPF statistics). Prints one Markdown table on stdout; progress on stderr.

#[path = "../../tests/common/mod.rs"]
mod common;
mod suite;

fn main() {
    // Items 4's derive and render run in this process: with ttop's allocator settings.
    ttop::util::tune_allocator();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = if args.iter().any(|a| a == "--quick") {
        suite::Opts::quick()
    } else {
        suite::Opts::full()
    };
    if let Some(i) = args.iter().position(|a| a == "--only") {
        opts.only = args
            .get(i + 1)
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
            .unwrap_or_default();
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("the system benchmark needs root (eBPF and BPF statistics): run it with sudo");
        std::process::exit(2);
    }
    let before = suite::loadavg();
    let rows = suite::run(&opts);
    let after = suite::loadavg();
    print!("{}", suite::markdown(&rows, &opts, &before, &after));
    if opts.only.is_empty() {
        for key in suite::ROW_KEYS {
            if !rows.iter().any(|r| r.key == *key) {
                eprintln!("missing row: {key}");
            }
        }
    }
}
