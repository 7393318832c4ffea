//! The header line (host, kernel, CPUs, uptime, mode, interval, drops) and the banner
//! that says what is missing and how to fix it.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::model::Frame;
use crate::model::features::{Feature, Status};

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let mode = if fr.mode == "bpf" {
        "eBPF"
    } else {
        "procfs-only"
    };
    // The machine's description gives way first (kernel, uptime, host, CPUs) when the
    // line is too narrow for what matters now: the mode, losses, the filter, recording.
    // (what, the order it gives way in)
    let mut about = vec![
        (fmt::inert(&fr.host), 2),
        (fmt::inert(&fr.kernel), 0),
        (format!("{} CPUs", fr.ncpus), 3),
        (format!("up {}", fmt::uptime(fr.uptime_s)), 1),
    ];
    // ttop's own cost (model/own.rs): its CPU, its programs' CPU, its memory.
    if let Some(o) = &fr.own {
        about.push((crate::model::own::header_figure(o), 1));
    }
    let mut spans = vec![Span::styled(" ttop ", th.header), Span::raw(String::new())];
    // Where the scheduler's skipped events are said: they give way after the machine.
    let mut skips = None;
    if fr.mode == "bpf" {
        let d = &fr.drops_by_map;
        // The JSON's figure; red only when a figure on screen is a floor (lost_data):
        // an idle VM's few skipped scheduler events a second are not that.
        let floor = crate::model::findings::rules::lost(fr).is_some();
        spans.push(Span::styled(
            format!(" lost {} ", fr.drops),
            if floor { th.alert } else { th.dim },
        ));
        if d.sched_gaps > 0 {
            skips = Some(spans.len());
            spans.push(Span::styled(
                format!(" sched skips {} ", d.sched_gaps),
                th.dim,
            ));
        }
    }
    // What the ceiling on ttop's own cost has shed (model/shed.rs): never gives way, as
    // the figures it thins out are on screen.
    if let Some(t) = fr
        .own
        .as_ref()
        .and_then(|o| o.shed.as_ref())
        .and_then(|s| s.text.as_deref())
    {
        spans.push(Span::styled(format!(" {t} "), th.warn));
    }
    if let Some(filter) = &fr.filter {
        spans.push(Span::styled(
            format!(" watching {} ", fmt::inert(filter)),
            th.warn,
        ));
    }
    if let Some(rec) = &app.recording {
        spans.push(Span::styled(format!(" {} ", fmt::inert(rec)), th.alert));
    }
    if app.paused {
        spans.push(Span::styled(" PAUSED ", th.alert));
    }
    let now = format!(
        "{} {}  {}s ",
        app.source,
        mode,
        fmt::fixed(fr.interval_s, 1)
    );
    let mut rest: usize = spans.iter().map(Span::width).sum();
    let text = |about: &[(String, u8)]| {
        let mut t = String::from(" ");
        for (a, _) in about {
            t.push_str(a);
            t.push_str("  ");
        }
        t.push_str(&now);
        t
    };
    while rest + Span::raw(text(&about)).width() > usize::from(area.width) {
        if let Some(i) = (0..about.len()).min_by_key(|&i| about[i].1) {
            about.remove(i);
        } else if let Some(i) = skips.take() {
            rest -= spans.remove(i).width();
        } else {
            break;
        }
    }
    spans[1] = Span::raw(text(&about));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The header's and the overview panels' words, for the help screen.
pub const WORDS: &[(&str, &str)] = &[
    (
        "lost",
        "events lost this interval (JSON drops: full kernel maps, scheduler events not delivered); red when a figure on screen is a floor (the lost_data finding)",
    ),
    (
        "ttop +BPF",
        "what ttop itself costs: its process's CPU over the interval, its eBPF programs' CPU (measured 1 s in every 10, - until measured; JSON self) and its resident memory",
    ),
    (
        "shed",
        "ttop's eBPF programs ran over their budget (--bpf-budget PCT, 3% of a CPU unless given; JSON self.shed): kernel-lock stacks are kept for 1 contention in N, or none, and futex user stacks are no longer walked; the others are counted under the caller \"(not sampled)\"",
    ),
    (
        "sched skips",
        "scheduler events the kernel did not deliver this interval (JSON drops_by_map.sched_gaps): a few a second move nothing visibly",
    ),
    (
        "true",
        "runnable threads (running or waiting for a CPU), averaged over the interval from every context switch (eBPF); max: the most at once",
    ),
    (
        "scan R",
        "threads in state R a /proc scan found, read at the pace top reads them (what top -H would count as running)",
    ),
    (
        "procs_running",
        "the kernel's own count of runnable threads at the end of the interval (/proc/stat), an instant",
    ),
    (
        "blocked",
        "threads in uninterruptible sleep (D) at that instant (/proc/stat procs_blocked)",
    ),
    (
        "load",
        "load average over 1, 5 and 15 minutes (/proc/loadavg)",
    ),
    (
        "undercount",
        "how many times more threads were runnable than the scan saw; why: the gap split into its causes",
    ),
    (
        "findings",
        "the patterns seen in the last intervals, most severe first; [n]: the view with the evidence (e opens it, f reads them whole)",
    ),
];

/// The banner's lines: each problem as it is, except that what this kernel measures
/// through an older hook or not at all (a sentence per figure in problems[]) is one line
/// that says how many and where to read which (each view says its own under its table).
fn banner(fr: &Frame) -> Vec<String> {
    let kernel: Vec<&Feature> = fr
        .features
        .iter()
        .filter(|f| f.problem().is_some())
        .collect();
    let is_kernel = |p: &String| kernel.iter().any(|f| f.problem().as_ref() == Some(p));
    let mut lines: Vec<String> = fr
        .problems
        .iter()
        .filter(|p| !is_kernel(p))
        .cloned()
        .collect();
    let missing = kernel
        .iter()
        .filter(|f| f.status == Status::Missing)
        .count();
    let fallback = kernel.len() - missing;
    if !kernel.is_empty() {
        let mut parts = Vec::new();
        if missing > 0 {
            parts.push(format!(
                "{missing} figure{} not measured",
                if missing == 1 { "" } else { "s" }
            ));
        }
        if fallback > 0 {
            parts.push(format!("{fallback} by older hooks"));
        }
        lines.push(format!(
            "this kernel: {} (ttop probe says why)",
            parts.join(", ")
        ));
    }
    lines
}

/// Rows the banner needs (one per line, and per note about the command line; at most 3).
pub fn banner_lines(fr: &Frame, app: &App) -> u16 {
    (banner(fr).len() + app.notes.len()).min(3) as u16
}

pub fn render_banner(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let lines: Vec<Line> = banner(fr)
        .iter()
        .chain(&app.notes)
        .take(area.height as usize)
        .map(|p| Line::from(Span::styled(format!(" ! {}", fmt::inert(p)), th.warn)))
        .collect();
    f.render_widget(Paragraph::new(lines), area);
}
