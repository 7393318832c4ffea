//! The futex view: futex words by contended waits (or the chosen column), with the
//! waiters' caller, EAGAIN returns kept apart from real sleeps, the processes that call
//! futex most, and what the top row's pattern usually means.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Mapped;
use super::fmt;
use super::sorted_table::{Col, Table2};
use super::theme::Theme;
use crate::app::App;
use crate::app::contention_view::FutexSort;
use crate::model::Frame;
use crate::model::contention::frame::FutexFrame;

use super::fmt::dur_us;

/// What a word's numbers usually mean (seed 001's pattern table, in our words).
pub fn pattern(r: &FutexFrame, secs: f64) -> &'static str {
    let per_s = r.contended as f64 / secs;
    let many = per_s >= 1000.0;
    let long = r.avg_wait_us >= 1000.0;
    let eagain = r.eagain.unwrap_or(0) as f64;
    if eagain > 10.0 * r.contended as f64 && eagain / secs >= 1000.0 {
        "mostly EAGAIN: waiters race the unlocker; a short spin before sleeping saves the calls"
    } else if r.max_wait_us >= 10.0 * r.avg_wait_us && r.max_wait_us >= 1000.0 && !many {
        "max far above avg: rare long stalls (holder preempted or faulting, priority inversion)"
    } else if many && long {
        "many long waits: a serial bottleneck; shard the data or hand work over a queue"
    } else if many {
        "many short waits: a hot lock held briefly (split it, or go lock-free), or threads parked and woken at a high rate (a ticker)"
    } else if long {
        "few long waits: slow work under the lock (I/O, allocation, logging); move it out"
    } else {
        "light contention"
    }
}

/// The first `n` rows, each named: a word of a process the scan did not list (it
/// exited, or started, during the interval) takes the name eBPF's process row has, as
/// the summary line and the findings name it. Only the rows on screen are copied.
fn named_rows(fr: &Frame, rows: &[&FutexFrame], n: usize) -> Vec<FutexFrame> {
    let shown = &rows[..n.min(rows.len())];
    let unnamed: Vec<u32> = shown
        .iter()
        .filter(|r| r.comm.is_empty())
        .map(|r| r.pid)
        .collect();
    let names: Vec<(u32, &str)> = if unnamed.is_empty() {
        Vec::new()
    } else {
        fr.procs
            .iter()
            .filter(|p| unnamed.contains(&p.pid) && !p.comm.is_empty())
            .map(|p| (p.pid, &*p.comm))
            .collect()
    };
    shown
        .iter()
        .map(|r| {
            let mut r = (*r).clone();
            if let (true, Some((_, name))) = (
                r.comm.is_empty(),
                names.iter().find(|(pid, _)| *pid == r.pid),
            ) {
                r.comm = name.to_string();
            }
            r
        })
        .collect()
}

/// A count per second, or "-" when it was not measured (no per-call hooks).
fn per_s(v: Option<u64>, secs: f64, width: usize) -> String {
    v.map_or("-".into(), |v| fmt::num(v as f64 / secs, width))
}

/// Who woke the word's waits: "own" for its own process's threads, another process
/// by name and pid; "-" when no futex wake ended one, or not measured (every call
/// hooked).
fn waker(r: &FutexFrame) -> String {
    match r.waker_pid {
        None => "-".into(),
        Some(pid) if pid == r.pid => "own".into(),
        // The pid first: a long name is cut, the pid is not.
        Some(pid) => format!(
            "{pid} {}",
            fmt::inert(r.waker_comm.as_deref().unwrap_or_default())
        ),
    }
}

/// Beyond `COLS`: the free-text column (the help screen lists it).
pub const MORE: &[(&str, &str)] = &[(
    "CALLER",
    "the function that waited on the word: the waiters' stack's first frame outside the locking code",
)];

pub const COLS: &[Col<FutexFrame, FutexSort>] = &[
    Col {
        title: "PID",
        help: "the process the futex word belongs to",
        width: 7,
        min_screen: 0,
        sort: Some(FutexSort::Pid),
        value: |r, _| r.pid.to_string(),
    },
    Col {
        title: "COMM",
        help: "its name",
        width: 14,
        min_screen: 100,
        sort: None,
        value: |r, _| fmt::inert(&r.comm),
    },
    Col {
        title: "UADDR",
        help: "the futex word's address in the process (a shared word: its key)",
        width: 12,
        min_screen: 0,
        sort: None,
        value: |r, _| format!("{:x}", r.uaddr),
    },
    Col {
        title: "KIND",
        help: "private or shared, and the variants seen (PI, bitset, futex2)",
        width: 8,
        min_screen: 150,
        sort: None,
        value: |r, _| r.kind.clone(),
    },
    Col {
        title: "CONT/s",
        help: "contended waits per second: waits that slept until woken or timed out",
        width: 7,
        min_screen: 0,
        sort: Some(FutexSort::Contended),
        value: |r, s| fmt::num(r.contended as f64 / s, 7),
    },
    Col {
        title: "THR",
        help: "threads that waited on the word in the interval",
        width: 4,
        min_screen: 0,
        sort: Some(FutexSort::Waiters),
        value: |r, _| r.waiters.map_or("-".into(), |w| w.to_string()),
    },
    Col {
        title: "EAGAIN/s",
        help: "waits that returned at once because the word had already changed (the lock was let go meanwhile): a retry, no sleep; - when calls are not hooked",
        width: 9,
        min_screen: 0,
        sort: Some(FutexSort::Eagain),
        value: |r, s| per_s(r.eagain, s, 8),
    },
    Col {
        title: "WAIT/s",
        help: "time threads spent asleep on the word, per second (over 1s: several asleep at once)",
        width: 7,
        min_screen: 0,
        sort: Some(FutexSort::Wait),
        value: |r, s| dur_us(r.total_wait_ms * 1e3 / s),
    },
    Col {
        title: "MAX",
        help: "the longest wait in the interval",
        width: 7,
        min_screen: 0,
        sort: Some(FutexSort::Max),
        value: |r, _| dur_us(r.max_wait_us),
    },
    Col {
        title: "AVG",
        help: "the mean wait",
        width: 7,
        min_screen: 0,
        sort: Some(FutexSort::Avg),
        value: |r, _| dur_us(r.avg_wait_us),
    },
    Col {
        title: "WAKER",
        help: "who woke the waits (its futex wake ended them): own, its own threads; else the pid and name of the latest other process that did; - when none was, or while every call is hooked",
        width: 18,
        min_screen: 140,
        sort: None,
        value: |r, _| waker(r),
    },
    Col {
        title: "WAKE/s",
        help: "wake calls on the word per second (- when calls are not hooked)",
        width: 7,
        min_screen: 110,
        sort: Some(FutexSort::Wakes),
        value: |r, s| per_s(r.wakes, s, 7),
    },
    Col {
        title: "CALLS/s",
        help: "every futex call on the word per second (- when calls are not hooked)",
        width: 8,
        min_screen: 120,
        sort: Some(FutexSort::Calls),
        value: |r, s| per_s(r.calls, s, 8),
    },
];

/// Draw the view; what it returns is where the table's titles went (see `ui::render_mapped`).
pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) -> Mapped {
    let secs = fr.interval_s.max(1e-9);
    let [summary, table, hint] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    let c = &fr.contention;
    let cont: u64 = c.futexes.iter().map(|r| r.contended).sum();
    let wait: f64 = c.futexes.iter().map(|r| r.total_wait_ms).sum();
    // The processes with the most futex calls, or with the most waits that slept when
    // calls are not counted.
    let calls_ok = c.contention_measured.futex_calls;
    let mut callers: Vec<(u64, String)> = fr
        .procs
        .iter()
        .filter_map(|p| {
            let n = if calls_ok {
                p.futex_calls.get()
            } else {
                p.futex_slept.get()
            };
            n.filter(|n| *n > 0)
                .map(|n| (n, format!("{}({})", fmt::inert(&p.comm), p.pid)))
        })
        .collect();
    callers.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let top: Vec<String> = callers
        .iter()
        .take(3)
        .map(|(n, who)| format!("{who} {}", fmt::num(*n as f64 / secs, 6)))
        .collect();
    let line = if fr.mode != "bpf" {
        Line::from(Span::styled(
            " futex waits and calls: not measured (they need eBPF: see the banner)",
            th.dim,
        ))
    } else if !c.contention_measured.futex {
        Line::from(Span::styled(
            " futex waits and calls: not measured (the futex probes are off)",
            th.dim,
        ))
    } else {
        Line::from(vec![
            Span::styled(
                format!(" {} contended waits/s", fmt::num(cont as f64 / secs, 7)),
                th.title,
            ),
            Span::raw(format!(", {} waited/s", dur_us(wait * 1e3 / secs))),
            Span::styled(
                if calls_ok {
                    format!("  futex calls/s: {}", top.join(", "))
                } else {
                    // Live, this view hooks every call from its next interval on; a
                    // recording or --json without --futex-calls has none.
                    format!(
                        "  slept/s: {} (calls not counted in this interval)",
                        top.join(", ")
                    )
                },
                th.dim,
            ),
        ])
    };
    f.render_widget(Paragraph::new(line), summary);

    let v = &app.contention;
    let sorted = v.futexes(fr);
    let named = named_rows(fr, &sorted, usize::from(table.height));
    let rows_all: Vec<&FutexFrame> = (named.iter())
        .chain(sorted[named.len()..].iter().copied())
        .collect();
    let caller = |r: &FutexFrame| {
        if r.caller.is_empty() {
            "-".to_string()
        } else {
            fmt::inert(&r.caller)
        }
    };
    let style = |r: &FutexFrame| {
        if r.total_wait_ms / secs >= 100.0 {
            th.warn
        } else {
            th.normal
        }
    };
    let geom = Table2 {
        cols: COLS,
        texts: vec![("CALLER", 8, &caller)],
        sort: v.futex_sort,
        reverse: v.futex_reverse,
        title: format!(
            " Futexes: {}, sorted by {} (s: next column, S: reverse) ",
            if fr.mode == "bpf" && c.contention_measured.futex {
                format!("{} words", rows_all.len())
            } else {
                "not measured".to_string()
            },
            v.futex_sort.name()
        ),
        empty: if fr.mode == "bpf" && c.contention_measured.futex {
            "no futex calls this interval"
        } else if fr.mode == "bpf" {
            "not measured: the futex probes are off (--no-futex, or see the problems line)"
        } else {
            "needs eBPF (run as root)"
        },
        style: &style,
    }
    .render(f, table, area.width, &rows_all, secs, th);
    if let Some(r) = rows_all.first() {
        let line = Line::from(vec![
            Span::styled(format!(" {:x}: ", r.uaddr), th.dim),
            Span::raw(pattern(r, secs)),
        ]);
        f.render_widget(Paragraph::new(line), hint);
    }
    geom
}
