//! Item 4: derive and render time per frame, at each machine size micro.rs builds
//! (kept apart from micro.rs, which benches/render.rs includes on its own).

use std::time::Duration;

use super::micro::{self, SHAPES, Shape};
use super::{Opts, Row, ms, say, secs};

/// Item 4: derive and render time per frame.
pub fn derive_render(o: &Opts) -> Vec<Row> {
    say("4: derive and render time per frame");
    let budget = secs(o.micro_secs);
    let target = Duration::from_millis(2);
    let mut rows = Vec::new();
    type Timer = fn(Shape, Duration) -> Duration;
    let kinds: [(&str, Timer); 2] = [
        ("derive", micro::derive_time),
        ("render", micro::render_time),
    ];
    for (kind, timer) in kinds {
        for s in SHAPES {
            let t = timer(s, budget);
            let suffix = if s.threads_per == 1 { "p" } else { "" };
            let key = format!("{kind}-{}{suffix}", s.threads());
            let what = match kind {
                "derive" => format!("derive one Frame: {}", s.label()),
                _ => format!(
                    "render one frame ({}x{} terminal): {}",
                    micro::TERM_W,
                    micro::TERM_H,
                    s.label()
                ),
            };
            let mut r = Row::new(4, &key, what).ttop(ms(t));
            if s.threads() >= 10_000 {
                r = r.target("< 2 ms at 10,000", Some(t < target));
            }
            rows.push(r);
        }
    }
    rows
}
