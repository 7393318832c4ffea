//! The kernel-lock view: lock:contention_begin/end waits by lock, caller and type (like
//! `perf lock contention`), and under them the mmap_lock story: who held whose lock, and
//! how many of its threads waited.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Mapped;
use super::fmt;
use super::fmt::dur_us;
use super::sorted_table::{Col, Table2, TextCol};
use super::theme::Theme;
use crate::app::App;
use crate::app::contention_view::LockSort;
use crate::model::Frame;
use crate::model::contention::frame::{LockFrame, MmapLockFrame};

/// "pid R (comm) held pid V (comm)'s mmap_lock N ms [in CALLER]; W threads of V waited T
/// (max M) [in CALLER]".
pub fn mmap_sentence(m: &MmapLockFrame, wide: bool) -> String {
    let who = |pid: u32, comm: &str| {
        if pid == 0 {
            "an unseen holder".to_string()
        } else if comm.is_empty() {
            format!("pid {pid}")
        } else {
            format!("pid {pid} ({})", fmt::inert(comm))
        }
    };
    let waiters = if m.waiter_pid == m.victim_pid {
        format!(
            "{} thread{} of {}",
            m.waiters,
            if m.waiters == 1 { "" } else { "s" },
            m.victim_pid
        )
    } else {
        format!(
            "{} thread{} of pid {}",
            m.waiters,
            if m.waiters == 1 { "" } else { "s" },
            m.waiter_pid
        )
    };
    if wide {
        // Where in user code, when a stack was kept: " in CALLER".
        let at = |caller: &str| {
            if caller.is_empty() {
                String::new()
            } else {
                format!(" in {}", fmt::inert(caller))
            }
        };
        format!(
            "{} held {}'s mmap_lock {}{}; {} waited {} (max {}){}",
            who(m.holder_pid, &m.holder_comm),
            who(m.victim_pid, &m.victim_comm),
            dur_us(m.hold_ms * 1e3),
            at(&m.holder_caller),
            waiters,
            dur_us(m.total_wait_ms * 1e3),
            dur_us(m.max_wait_us),
            at(&m.waiter_caller)
        )
    } else {
        format!(
            "{} {} held {} {}: hold {}; {} thr waited {}",
            m.holder_pid,
            fmt::inert(&m.holder_comm),
            m.victim_pid,
            fmt::inert(&m.victim_comm),
            dur_us(m.hold_ms * 1e3),
            m.waiters,
            dur_us(m.total_wait_ms * 1e3)
        )
    }
}

/// Beyond `COLS`: the free-text column and the mmap_lock lines (the help screen lists
/// them).
pub const MORE: &[(&str, &str)] = &[
    (
        "CALLER",
        "the kernel function that waited for the lock (its stack's first frame outside locking code)",
    ),
    (
        "mmap_lock",
        "who held a process's mmap_lock while its threads waited, how long, and how long they waited",
    ),
];

pub const COLS: &[Col<LockFrame, LockSort>] = &[
    Col {
        title: "TYPE",
        help: "the kernel lock's kind: spinlock, mutex, rwsem:R or :W (read or write side), ...; * an mmap_lock",
        width: 10,
        min_screen: 0,
        sort: Some(LockSort::Type),
        value: |r, _| {
            if r.mmap_lock {
                format!("{}*", r.kind)
            } else {
                r.kind.clone()
            }
        },
    },
    Col {
        title: "CONT/s",
        help: "contended acquisitions per second (lock:contention_begin)",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Contended),
        value: |r, s| fmt::num(r.contended as f64 / s, 7),
    },
    Col {
        title: "WAIT/s",
        help: "time spent waiting for it, per second (over 1s: several waiting at once)",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Wait),
        value: |r, s| dur_us(r.total_wait_ms * 1e3 / s),
    },
    Col {
        title: "MAX",
        help: "the longest wait in the interval",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Max),
        value: |r, _| dur_us(r.max_wait_us),
    },
    Col {
        title: "AVG",
        help: "the mean wait",
        width: 7,
        min_screen: 0,
        sort: Some(LockSort::Avg),
        value: |r, _| dur_us(r.avg_wait_us),
    },
    Col {
        title: "LOCK",
        help: "the lock's kernel address",
        width: 18,
        min_screen: 140,
        sort: None,
        value: |r, _| r.lock.clone(),
    },
];

/// Draw the view; what it returns is where the table's titles went (see `ui::render_mapped`).
pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) -> Mapped {
    let secs = fr.interval_s.max(1e-9);
    let mm = &fr.contention.mmap_lock;
    let mm_h = if mm.is_empty() {
        0
    } else {
        (mm.len() as u16 + 1).min(area.height / 2)
    };
    let [table, mmap] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(mm_h)]).areas(area);

    let v = &app.contention;
    let rows_all = v.locks(fr);
    let caller = |r: &LockFrame| fmt::inert(&r.caller);
    let waiters = |r: &LockFrame| {
        let w: Vec<String> = r
            .waiters
            .iter()
            .take(3)
            .map(|w| format!("{}({}) {}", fmt::inert(&w.comm), w.pid, w.contended))
            .collect();
        match r.waiters.len().saturating_sub(3) {
            0 => w.join(", "),
            more => format!("{} +{more}", w.join(", ")),
        }
    };
    let mut texts: Vec<TextCol<LockFrame>> = vec![("CALLER", 16, &caller)];
    if area.width >= 110 {
        texts.push(("WAITERS", 20, &waiters));
    }
    let style = |r: &LockFrame| {
        if r.mmap_lock && r.max_wait_us >= 10_000.0 {
            th.warn
        } else {
            th.normal
        }
    };
    let geom = Table2 {
        cols: COLS,
        texts,
        sort: v.lock_sort,
        reverse: v.lock_reverse,
        title: format!(
            " Kernel locks: {} (* mmap_lock), sorted by {} (s: next column, S: reverse) ",
            if fr.mode == "bpf" && fr.contention.contention_measured.locks {
                let rest = &fr.contention.locks_rest;
                match rest.iter().map(|r| r.locks).sum::<u64>() {
                    0 => rows_all.len().to_string(),
                    n => format!(
                        "{} +{n} not listed ({} waits)",
                        rows_all.len(),
                        rest.iter().map(|r| r.contended).sum::<u64>()
                    ),
                }
            } else {
                "not measured".to_string()
            },
            v.lock_sort.name()
        ),
        empty: if fr.mode == "bpf" && fr.contention.contention_measured.locks {
            "no kernel lock waits this interval"
        } else if fr.mode == "bpf" {
            "not measured: this kernel has no lock:contention_begin (see the problems line)"
        } else {
            "needs eBPF (run as root)"
        },
        style: &style,
    }
    .render(f, table, area.width, &rows_all, secs, th);

    if mm_h > 0 {
        let wide = area.width >= 110;
        let mut lines = vec![Line::from(Span::styled(
            " mmap_lock: who held whose lock while its threads waited",
            th.title,
        ))];
        for m in mm.iter().take(mm_h.saturating_sub(1) as usize) {
            let style = if m.holder_pid != m.victim_pid && m.max_wait_us >= 10_000.0 {
                th.warn
            } else {
                th.normal
            };
            lines.push(Line::from(Span::styled(
                format!(" {}", mmap_sentence(m, wide)),
                style,
            )));
        }
        f.render_widget(Paragraph::new(lines), mmap);
    }
    geom
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wide screens say where in user code the holder held the lock and its waiters
    /// waited, when those stacks were kept; without them the sentence is as before.
    #[test]
    fn the_mmap_sentence_names_the_user_callers() {
        let mut m = MmapLockFrame {
            victim_pid: 10,
            victim_comm: "db".into(),
            holder_pid: 20,
            holder_comm: "envreader".into(),
            hold_ms: 12.0,
            waiter_pid: 10,
            waiters: 2,
            waits: 5,
            total_wait_ms: 30.0,
            max_wait_us: 9000.0,
            ..Default::default()
        };
        let plain = mmap_sentence(&m, true);
        assert!(!plain.contains(" in "), "{plain}");
        m.holder_caller = "main+0x151".into();
        m.waiter_caller = "victim_loop+0xc0".into();
        let s = mmap_sentence(&m, true);
        assert!(
            s.starts_with("pid 20 (envreader) held pid 10 (db)'s mmap_lock 12.00ms in main+0x151;"),
            "{s}"
        );
        assert!(s.ends_with(" in victim_loop+0xc0"), "{s}");
        // Narrow screens keep their short form.
        assert!(!mmap_sentence(&m, false).contains(" in "));
    }
}
