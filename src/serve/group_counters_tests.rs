//! The per-name group counters as /metrics writes them, for fixture frames: the lines
//! below were written by the hand-made families before they were made from the field
//! table, so these tests hold the series and HELP texts byte for byte.

use super::counters::groups;
use super::groups::{Groups, TopBy};
use super::out::Out;
use crate::model::derive;
use crate::model::fixtures::{incident, system};

/// Three fixture intervals counted by groups ranked `by`, with at most `n` named, as text.
fn rendered(n: usize, by: &[TopBy]) -> String {
    let mut g = Groups::new(n, by);
    let samples: Vec<_> = (1..=4).map(|s| incident(s, true)).collect();
    for w in samples.windows(2) {
        g.add(&derive(&system(), Some(&w[0]), &w[1]));
    }
    let mut o = Out::new();
    groups(&mut o, &g);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &o.reg).unwrap();
    text
}

/// The families, each its HELP, TYPE and UNIT lines then its series lines sorted, in
/// name order: neither the order of the families nor that of a family's series (a hash
/// map's) is part of what is compared; every line is.
fn families(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in text.lines().filter(|l| *l != "# EOF") {
        if line.starts_with("# HELP ") || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(line.to_string());
    }
    for f in &mut out {
        let series = f
            .iter()
            .position(|l| !l.starts_with('#'))
            .unwrap_or(f.len());
        f[series..].sort();
    }
    out.sort();
    out
}

const DEFAULT_RANKING: &str = r#"# HELP ttop_process_group_cpu_seconds On-CPU seconds of the processes with this comm (comm="": every other process).
# TYPE ttop_process_group_cpu_seconds counter
# UNIT ttop_process_group_cpu_seconds seconds
ttop_process_group_cpu_seconds_total{comm="postgres"} 0.23600000000000002
ttop_process_group_cpu_seconds_total{comm="tiflash"} 6.2
ttop_process_group_cpu_seconds_total{comm=""} 3.6211999999999997
# HELP ttop_process_group_runqueue_wait_seconds Seconds the threads of these processes waited for a CPU.
# TYPE ttop_process_group_runqueue_wait_seconds counter
# UNIT ttop_process_group_runqueue_wait_seconds seconds
ttop_process_group_runqueue_wait_seconds_total{comm=""} 9.814259999999996
ttop_process_group_runqueue_wait_seconds_total{comm="tiflash"} 19.6
ttop_process_group_runqueue_wait_seconds_total{comm="postgres"} 0.008
# HELP ttop_process_group_threads_created Threads these processes created.
# TYPE ttop_process_group_threads_created counter
ttop_process_group_threads_created_total{comm="tiflash"} 6240.0
ttop_process_group_threads_created_total{comm=""} 3132.0
ttop_process_group_threads_created_total{comm="postgres"} 0.0
# HELP ttop_process_group_futex_wait_seconds Seconds the threads of these processes slept in futex waits.
# TYPE ttop_process_group_futex_wait_seconds counter
# UNIT ttop_process_group_futex_wait_seconds seconds
ttop_process_group_futex_wait_seconds_total{comm=""} 0.0
ttop_process_group_futex_wait_seconds_total{comm="postgres"} 0.0
ttop_process_group_futex_wait_seconds_total{comm="tiflash"} 0.0
# HELP ttop_process_group_processes Processes with this comm in the last interval.
# TYPE ttop_process_group_processes gauge
ttop_process_group_processes{comm=""} 6.0
ttop_process_group_processes{comm="postgres"} 1.0
ttop_process_group_processes{comm="tiflash"} 1.0
"#;

const BY_THREADS_AND_FUTEX_WAIT: &str = r#"# HELP ttop_process_group_cpu_seconds On-CPU seconds of the processes with this comm (comm="": every other process).
# TYPE ttop_process_group_cpu_seconds counter
# UNIT ttop_process_group_cpu_seconds seconds
ttop_process_group_cpu_seconds_total{comm=""} 3.8571999999999999
ttop_process_group_cpu_seconds_total{comm="tiflash"} 6.2
# HELP ttop_process_group_runqueue_wait_seconds Seconds the threads of these processes waited for a CPU.
# TYPE ttop_process_group_runqueue_wait_seconds counter
# UNIT ttop_process_group_runqueue_wait_seconds seconds
ttop_process_group_runqueue_wait_seconds_total{comm=""} 9.822259999999997
ttop_process_group_runqueue_wait_seconds_total{comm="tiflash"} 19.6
# HELP ttop_process_group_threads_created Threads these processes created.
# TYPE ttop_process_group_threads_created counter
ttop_process_group_threads_created_total{comm=""} 3132.0
ttop_process_group_threads_created_total{comm="tiflash"} 6240.0
# HELP ttop_process_group_futex_wait_seconds Seconds the threads of these processes slept in futex waits.
# TYPE ttop_process_group_futex_wait_seconds counter
# UNIT ttop_process_group_futex_wait_seconds seconds
ttop_process_group_futex_wait_seconds_total{comm="tiflash"} 0.0
ttop_process_group_futex_wait_seconds_total{comm=""} 0.0
# HELP ttop_process_group_processes Processes with this comm in the last interval.
# TYPE ttop_process_group_processes gauge
ttop_process_group_processes{comm="tiflash"} 1.0
ttop_process_group_processes{comm=""} 7.0
"#;

/// The same lines: HELP, TYPE, UNIT and series names byte for byte; a value to 1e-12 of
/// itself, since `other` adds up the groups in a hash map's order and the last digit of
/// its sum varies from run to run (it did before the families came from the table too).
fn same_lines(got: &str, want: &str) {
    let (got, want) = (families(got), families(want));
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.len(), w.len(), "{g:?}");
        for (gl, wl) in g.iter().zip(w) {
            if wl.starts_with('#') {
                assert_eq!(gl, wl);
                continue;
            }
            let (gs, gv) = gl.rsplit_once(' ').unwrap();
            let (ws, wv) = wl.rsplit_once(' ').unwrap();
            assert_eq!(gs, ws);
            let (gv, wv): (f64, f64) = (gv.parse().unwrap(), wv.parse().unwrap());
            assert!(
                (gv - wv).abs() <= 1e-12 * wv.abs().max(1.0),
                "{gl} against {wl}"
            );
        }
    }
}

#[test]
fn default_ranking_writes_the_same_lines() {
    same_lines(
        &rendered(2, &super::groups::DEFAULT_TOP_BY),
        DEFAULT_RANKING,
    );
}

/// The other two keys rank too (one named group: the one with more threads created).
#[test]
fn ranking_by_threads_and_futex_wait_writes_the_same_lines() {
    same_lines(
        &rendered(1, &[TopBy::Threads, TopBy::FutexWait]),
        BY_THREADS_AND_FUTEX_WAIT,
    );
}
