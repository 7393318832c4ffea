//! Items 1 and 6: ttop's own CPU and peak memory beside top's, measured over the same
//! window, on this machine as it is and with a 10,000-thread pool on it.

use std::time::{Duration, Instant};

use super::procs::{
    JsonTtop, Tui, Workload, cpu_secs, spawn_quiet, status_kb, terminate, top_bin, ttop_bin,
};
use super::{COLS, Opts, ROWS, Row, TUI_ARGS, mb, pct, say, secs};

/// CPU seconds used by each pid between two instants over `window`; % of one CPU.
fn cpu_pct_over(pids: &[u32], window: Duration) -> Vec<f64> {
    let c0: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(*p)).collect();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let c1: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(*p)).collect();
    let el = t0.elapsed().as_secs_f64();
    c0.iter()
        .zip(&c1)
        .map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => 100.0 * (b - a) / el,
            _ => f64::NAN,
        })
        .collect()
}

/// Item 1: ttop's own CPU against top's over the same window.
pub fn cpu(o: &Opts) -> Vec<Row> {
    say(&format!(
        "1: CPU of ttop and top over the same {:.0} s",
        o.cpu_secs
    ));
    let mut top = spawn_quiet(&top_bin(), &["-b", "-d", "1"]);
    // top -H scans every thread, as ttop's scan does: the like-for-like baseline.
    let mut top_h = spawn_quiet(&top_bin(), &["-H", "-b", "-d", "1"]);
    let tui = Tui::spawn(TUI_ARGS, COLS, ROWS);
    let mut json = spawn_quiet(&ttop_bin(), &["--json", "-d", "1"]);
    tui.wait_first_screen(secs(20.0));
    std::thread::sleep(secs(2.0)); // past start-up: probes attached, a few ticks done
    let p = cpu_pct_over(
        &[tui.pid(), json.id(), top.id(), top_h.id()],
        secs(o.cpu_secs),
    );
    tui.stop();
    terminate(&mut json, secs(10.0));
    terminate(&mut top, secs(10.0));
    terminate(&mut top_h, secs(10.0));
    let (t, j, b, h) = (p[0], p[1], p[2], p[3]);
    let base = format!("`top -b -d 1`: {}", pct(b));
    let w = o.cpu_secs;
    vec![
        Row::new(
            1,
            "cpu-tui",
            format!(
                "own CPU (user+sys, % of one CPU) over {w:.0} s at -d 1: dashboard with eBPF, \
                 /proc scan and a rendered {COLS}x{ROWS} screen; top over the same window"
            ),
        )
        .ttop(pct(t))
        .baseline(base.clone())
        .ratio(t / b)
        .target("ttop <= top", Some(t <= b)),
        Row::new(
            1,
            "cpu-json",
            format!("own CPU over {w:.0} s at -d 1: `ttop --json` (no rendering)"),
        )
        .ttop(pct(j))
        .baseline(base)
        .ratio(j / b)
        .target("ttop <= top", Some(j <= b)),
        Row::new(
            1,
            "cpu-tui-H",
            format!(
                "own CPU over {w:.0} s at -d 1: the dashboard against `top -H -b -d 1`, \
                 which scans every thread as ttop's scan does"
            ),
        )
        .ttop(pct(t))
        .baseline(format!("`top -H -b -d 1`: {}", pct(h)))
        .ratio(t / h),
    ]
}

/// Item 6 (and item 1 at 10,000 threads): peak RSS and CPU with a big thread pool.
pub fn rss(o: &Opts) -> Vec<Row> {
    let n = o.rss_threads;
    say(&format!("6: peak RSS with {n} threads"));
    let hold = o.rss_secs + 40.0;
    let mut w = Workload::spawn(
        "bench_threads",
        &[n.to_string(), format!("{hold}"), "0".into(), "32".into()],
    );
    let ok = w.wait_for("started=", secs(60.0));
    let mut top = spawn_quiet(&top_bin(), &["-b", "-d", "1"]);
    let mut top_h = spawn_quiet(&top_bin(), &["-H", "-b", "-d", "1"]);
    let tui = Tui::spawn(TUI_ARGS, COLS, ROWS);
    let json = JsonTtop::spawn(&["-d", "1"]);
    tui.wait_first_screen(secs(30.0));
    std::thread::sleep(secs(1.5));
    let p = cpu_pct_over(&[tui.pid(), top.id(), top_h.id()], secs(o.rss_secs));
    let hwm = |pid: u32| status_kb(pid, "VmHWM").unwrap_or(0);
    let (h_tui, h_json, h_top) = (hwm(tui.pid()), hwm(json.pid()), hwm(top.id()));
    tui.stop();
    terminate(&mut top, secs(10.0));
    terminate(&mut top_h, secs(10.0));
    let frames = json.stop();
    let seen = frames
        .iter()
        .flat_map(|f| f["procs"].as_array().into_iter().flatten())
        .filter(|p| p["pid"].as_u64() == Some(u64::from(w.pid)))
        .filter_map(|p| p["threads_seen"].as_u64())
        .max()
        .unwrap_or(0);
    w.kill();
    let started = if ok { n } else { 0 };
    let label = super::micro::group(u64::from(started));
    let base = format!("`top -b -d 1`: {}", mb(h_top));
    let limit = 40 * 1024;
    vec![
        Row::new(
            6,
            "rss-tui",
            format!(
                "peak RSS (VmHWM), dashboard, with {label} sleeping threads on the machine \
                 (ttop's scan saw {} of them in one process)",
                super::micro::group(seen)
            ),
        )
        .ttop(mb(h_tui))
        .baseline(base.clone())
        .ratio(h_tui as f64 / h_top as f64)
        .target("< 40 MB", Some(h_tui < limit && ok)),
        Row::new(
            6,
            "rss-json",
            format!("peak RSS, `ttop --json`, {label} threads"),
        )
        .ttop(mb(h_json))
        .baseline(base)
        .ratio(h_json as f64 / h_top as f64)
        .target("< 40 MB", Some(h_json < limit && ok)),
        Row::new(
            1,
            "cpu-10k",
            format!(
                "own CPU over {:.0} s at -d 1 with {label} threads on the machine: dashboard \
                 (scans every thread) vs `top -b -d 1` (scans processes)",
                o.rss_secs
            ),
        )
        .ttop(pct(p[0]))
        .baseline(format!("`top -b -d 1`: {}", pct(p[1])))
        .ratio(p[0] / p[1])
        .target("ttop <= top", Some(p[0] <= p[1])),
        Row::new(
            1,
            "cpu-10k-H",
            format!(
                "own CPU over {:.0} s at -d 1 with {label} threads: dashboard vs \
                 `top -H -b -d 1` (both scan every thread)",
                o.rss_secs
            ),
        )
        .ttop(pct(p[0]))
        .baseline(format!("`top -H -b -d 1`: {}", pct(p[2])))
        .ratio(p[0] / p[2]),
    ]
}
