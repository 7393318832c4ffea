//! Criterion: Frame derivation and rendering time per frame at 100, 1,000 and 10,000
//! threads (ten per process) and at 10,000 single-threaded processes. Target: under
//! 2 ms per frame at 10,000. `cargo bench --bench render`.

use criterion::{Criterion, criterion_group, criterion_main};

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

use micro::SHAPES;

fn derive(c: &mut Criterion) {
    // ttop's allocator settings (src/main.rs): measure what ttop runs.
    ttop::util::tune_allocator();
    let mut g = c.benchmark_group("derive");
    for s in SHAPES {
        let (sys, prev, cur) = micro::samples(s);
        g.bench_function(s.label(), |b| {
            b.iter(|| ttop::model::derive(&sys, Some(&prev), &cur))
        });
    }
    g.finish();
}

fn render(c: &mut Criterion) {
    let mut g = c.benchmark_group("render");
    for s in SHAPES {
        let app = micro::app(s);
        let mut term = micro::terminal();
        g.bench_function(s.label(), |b| b.iter(|| micro::draw(&mut term, &app)));
    }
    g.finish();
}

criterion_group!(benches, derive, render);
criterion_main!(benches);
