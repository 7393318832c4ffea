//! In-process measurements that need no kernel: Frame derivation and rendering at a
//! given number of threads (the bench `render` measures the same cases with the
//! spread of its batches), and seeking in a long recording.

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ttop::app::App;
use ttop::model::sample::SystemInfo;
use ttop::model::{Frame, Sample, derive, fixtures};

/// A machine size for the derive/render cases.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub procs: u32,
    pub threads_per: u32,
}

impl Shape {
    pub fn threads(self) -> u32 {
        self.procs * self.threads_per
    }

    pub fn label(self) -> String {
        format!(
            "{} threads in {} processes",
            group(u64::from(self.threads())),
            group(u64::from(self.procs))
        )
    }
}

/// 100, 1,000 and 10,000 threads, ten per process; and 10,000 single-threaded
/// processes (the process table's worst case: every row is a process).
pub const SHAPES: [Shape; 4] = [
    Shape {
        procs: 10,
        threads_per: 10,
    },
    Shape {
        procs: 100,
        threads_per: 10,
    },
    Shape {
        procs: 1000,
        threads_per: 10,
    },
    Shape {
        procs: 10_000,
        threads_per: 1,
    },
];

/// 12345 -> "12,345".
pub fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Two consecutive Samples of a synthetic machine of this shape.
pub fn samples(shape: Shape) -> (SystemInfo, Sample, Sample) {
    let sys = fixtures::system();
    let prev = fixtures::synthetic(shape.procs, shape.threads_per, 100);
    let cur = fixtures::synthetic(shape.procs, shape.threads_per, 101);
    (sys, prev, cur)
}

/// An App that has seen a minute of frames of this shape (so the history graph is full).
pub fn app(shape: Shape) -> App {
    let (sys, prev, cur) = samples(shape);
    let f = derive(&sys, Some(&prev), &cur);
    let mut app = App::new();
    for _ in 0..60 {
        app.push_frame(f.clone());
    }
    app
}

/// The terminal renders are measured on: a large one, so the table has many rows.
pub const TERM_W: u16 = 200;
pub const TERM_H: u16 = 60;

pub fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(TERM_W, TERM_H)).expect("a test terminal")
}

/// One frame, as the dashboard draws it (render plus the terminal's buffer diff).
pub fn draw(term: &mut Terminal<TestBackend>, app: &App) {
    term.draw(|f| ttop::ui::render(f, app)).expect("draw");
}

/// Median time per call of `f`, over batches run for about `budget`.
pub fn time_per_call(budget: Duration, f: impl FnMut()) -> Duration {
    Duration::from_secs_f64(super::procs::median(&batches(budget, 3, f)))
}

/// Time per call of `f` in each batch of about 20 ms, batches run for about `budget`
/// and at least `min` of them.
pub fn batches(budget: Duration, min: usize, mut f: impl FnMut()) -> Vec<f64> {
    f(); // warm up
    let t0 = Instant::now();
    f();
    let one = t0.elapsed().max(Duration::from_nanos(100));
    let batch = ((Duration::from_millis(20).as_nanos() / one.as_nanos()).max(1)) as u32;
    let mut per = Vec::new();
    let start = Instant::now();
    while start.elapsed() < budget || per.len() < min {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        per.push(t.elapsed().as_secs_f64() / f64::from(batch));
    }
    per
}

/// Time to derive one Frame of this shape.
pub fn derive_time(shape: Shape, budget: Duration) -> Duration {
    let (sys, prev, cur) = samples(shape);
    time_per_call(budget, || {
        let f: Frame = derive(&sys, Some(&prev), &cur);
        std::hint::black_box(f);
    })
}

/// Time to render one frame of this shape.
pub fn render_time(shape: Shape, budget: Duration) -> Duration {
    let app = app(shape);
    let mut term = terminal();
    time_per_call(budget, || draw(&mut term, &app))
}

/// A recording of `frames` Samples at 1 s of a synthetic machine, written with
/// ttop's own record::Writer.
pub fn write_recording(path: &Path, frames: u64, shape: Shape) -> u64 {
    let _ = std::fs::remove_file(path);
    let sys = fixtures::system();
    let header = ttop::record::writer::header_for(&sys, Duration::from_secs(1), None);
    let mut w = ttop::record::Writer::create(path, &header).expect("create the recording");
    for i in 0..frames {
        let mut s = fixtures::synthetic(shape.procs, shape.threads_per, 100 + i);
        s.seq = i;
        w.append(&s).expect("append");
    }
    w.finish().expect("finish");
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Open the recording, find the middle by time, and derive the Frame shown there
/// (its Sample and the one before it). Returns (open, seek+decode+derive).
pub fn seek_middle(path: &Path) -> (Duration, Duration) {
    let t0 = Instant::now();
    let mut r = ttop::record::Reader::open(path).expect("open the recording");
    let opened = t0.elapsed();
    let t1 = Instant::now();
    let entries = r.entries();
    let mid_wall = (entries[0].wall_ns + entries[entries.len() - 1].wall_ns) / 2;
    let i = r.position_at(mid_wall).max(1);
    let prev = r.sample(i - 1).expect("decode");
    let cur = r.sample(i).expect("decode");
    let f = derive(&r.header().system.clone(), Some(&prev), &cur);
    std::hint::black_box(f);
    (opened, t1.elapsed())
}

/// Sizes of the records of a recording: (keyframes, deltas), bytes each.
pub fn record_sizes(path: &Path) -> (Vec<u64>, Vec<u64>) {
    let r = ttop::record::Reader::open(path).expect("open the recording");
    let e = r.entries();
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let (mut keys, mut deltas) = (Vec::new(), Vec::new());
    for (i, x) in e.iter().enumerate() {
        // The last record ends where the index begins; without the footer, at EOF.
        let end = e.get(i + 1).map_or(len, |n| n.offset);
        let size = end.saturating_sub(x.offset);
        if i + 1 == e.len() {
            continue; // its end is not known exactly (index and footer follow)
        }
        if x.key {
            keys.push(size);
        } else {
            deltas.push(size);
        }
    }
    (keys, deltas)
}
