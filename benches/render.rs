//! Frame derivation and rendering time per frame at 100, 1,000 and 10,000 threads (ten per
//! process) and at 10,000 single-threaded processes. Target: under 2 ms per frame at
//! 10,000. `cargo bench --bench render [-- FILTER] [-- --secs S]`: each case is timed in
//! batches of about 20 ms for S seconds (default 3) and prints the median, the fastest and
//! the slowest batch's time per frame. Item 4 of `cargo bench --bench system` measures the
//! same cases in its table; this is the closer look at them.

#[path = "system/suite/micro.rs"]
#[allow(dead_code)]
mod micro;

/// micro.rs takes its median helper from the suite's procs module.
#[allow(dead_code)]
mod procs {
    pub fn median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

use std::time::Duration;

use micro::{SHAPES, batches};

fn show(what: &str, label: &str, per: &[f64]) {
    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let min = per.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per.iter().copied().fold(0.0, f64::max);
    println!(
        "{what:<7} {label:<40} median {}  (fastest {}, slowest {}, {} batches)",
        ms(procs::median(per)),
        ms(min),
        ms(max),
        per.len()
    );
}

fn main() {
    // cargo bench passes --bench; a bare word filters the cases by name.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: f64 = args
        .iter()
        .position(|a| a == "--secs")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let filter: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with("--") && a.parse::<f64>().is_err())
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let budget = Duration::from_secs_f64(secs);
    // ttop's allocator settings (src/main.rs): measure what ttop runs.
    ttop::util::tune_allocator();
    for s in SHAPES {
        let label = s.label();
        if wanted(&format!("derive {label}")) {
            let (sys, prev, cur) = micro::samples(s);
            let per = batches(budget, 5, || {
                std::hint::black_box(ttop::model::derive(&sys, Some(&prev), &cur));
            });
            show("derive", &label, &per);
        }
    }
    for s in SHAPES {
        let label = s.label();
        if wanted(&format!("render {label}")) {
            let app = micro::app(s);
            let mut term = micro::terminal();
            let per = batches(budget, 5, || micro::draw(&mut term, &app));
            show("render", &label, &per);
        }
    }
}
