//! The IPI/TLB view: inter-processor interrupts each CPU received and sent, TLB
//! shootdowns beside the kernel's own /proc/interrupts TLB count, flushes by reason,
//! and which processes sent IPIs for what.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::fmt;
use super::theme::Theme;
use crate::app::App;
use crate::app::irq_view::SenderSort;
use crate::model::Frame;
use crate::model::features::{self, Status};

/// The tables' columns (the help screen lists them). Per second, per CPU.
pub const COLUMNS: &[(&str, &str)] = &[
    ("CPU", "CPU number"),
    (
        "CALL/s",
        "function-call IPIs this CPU received, of both kinds (the kernel's CAL count)",
    ),
    (
        "CALL1/s",
        "of them single-target calls: counted by eBPF only while this view is open (- the first interval)",
    ),
    (
        "RESCH/s",
        "reschedule IPIs received: another CPU woke a thread to run here",
    ),
    ("IRQW/s", "irq_work IPIs received"),
    (
        "TLB/s",
        "TLB shootdowns this CPU ran for another CPU's unmap or protection change (the kernel's TLB count on x86, else eBPF)",
    ),
    (
        "kTLB/s",
        "the same from the kernel's own count (/proc/interrupts TLB): the check on TLB/s",
    ),
    (
        "→TLB/s, →CALL/s, →RES/s",
        "IPIs this CPU sent: for TLB flushes, function calls, reschedules",
    ),
    (
        "PID, COMM",
        "the process that sent them (0 [idle/irq]: no process)",
    ),
    ("KIND", "tlb, reschedule or call"),
    ("FUNCTION", "the function the IPI runs on the target CPU"),
    ("IPI/s", "IPIs sent per second (one per target CPU)"),
    (
        "CALLS/s",
        "remote calls asked for per second (one may reach many CPUs, or none when they were idle)",
    ),
];

pub(crate) const CPU_HEADER: [&str; 10] = [
    "CPU",
    "CALL/s",
    "CALL1/s",
    "RESCH/s",
    "IRQW/s",
    "TLB/s",
    "kTLB/s",
    "→TLB/s",
    "→CALL/s",
    "→RES/s",
];

fn rate(n: u64, secs: f64) -> String {
    fmt::num(n as f64 / secs, 7)
}

/// A rate, or `-` where this kernel did not measure it.
fn orate(n: Option<u64>, secs: f64) -> String {
    n.map_or_else(|| "-".into(), |n| rate(n, secs))
}

/// Why the view's `-` figures are not measured (the features this view draws on).
fn not_measured(fr: &Frame) -> Vec<String> {
    [
        "ipi_received",
        "ipi_sent",
        "tlb_shootdowns",
        "tlb_caused",
        "tlb_reasons",
    ]
    .iter()
    .filter_map(|id| features::find(&fr.features, id))
    .filter(|f| f.status != Status::Measured)
    .map(|f| {
        let what = features::label_of(&f.id);
        match f.status {
            Status::Fallback => format!("{what}: through {}", f.hook),
            _ => format!("{what}: - not measured: {}", f.note),
        }
    })
    .collect()
}

/// What the top sender's numbers usually mean.
pub fn pattern(kind: &str, func: &str) -> &'static str {
    match kind {
        "tlb" => "munmap/mprotect while its threads run on other CPUs (e.g. freed stacks)",
        "reschedule" => "reschedule IPIs: wakeups of threads on other CPUs (lock handoffs, queues)",
        _ if func == "sched_ttwu_pending" => "remote wakeups queued on the target CPU",
        _ if func == "nohz_csd_func" => "kicking idle CPUs for load balancing",
        _ => "function calls on other CPUs",
    }
}

pub fn render(f: &mut TermFrame, area: Rect, app: &App, fr: &Frame, th: &Theme) {
    let secs = fr.interval_s.max(1e-9);
    let Some(tlb) = fr.tlb.as_ref() else {
        f.render_widget(
            Paragraph::new(" IPIs and TLB shootdowns need eBPF (run as root)").style(th.dim),
            area,
        );
        return;
    };
    let ncpu = fr.cpus.len() as u16;
    let notes = not_measured(fr);
    // Each note whole, wrapped: the reason is the point.
    let w = usize::from(area.width.max(20) - 1);
    let wanted: usize = notes.iter().map(|n| n.chars().count().div_ceil(w)).sum();
    let note_h = (wanted as u16).min(area.height.saturating_sub(8) / 3);
    let cpu_h = (ncpu + 2)
        .min(area.height.saturating_sub(6 + note_h) / 2)
        .max(3);
    let [cpus, reasons, senders, hint, footer] = Layout::vertical([
        Constraint::Length(cpu_h),
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(note_h),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(
            notes
                .iter()
                .map(|n| Line::styled(format!(" {n}"), th.dim))
                .collect::<Vec<_>>(),
        )
        .wrap(ratatui::widgets::Wrap { trim: false }),
        footer,
    );

    let head = Row::new(CPU_HEADER.map(Cell::from)).style(th.header);
    let rows: Vec<Row> = fr
        .cpus
        .iter()
        .map(|c| {
            let r = c.ipi.as_ref();
            let s = c.ipi_sent.as_ref();
            let ktlb = c
                .interrupts
                .get("TLB")
                .map_or_else(|| "-".into(), |v| rate(*v, secs));
            Row::new(vec![
                Cell::from(c.cpu.to_string()),
                Cell::from(orate(r.map(|r| r.call), secs)),
                Cell::from(orate(r.and_then(|r| r.call_function_single), secs)),
                Cell::from(orate(r.map(|r| r.reschedule), secs)),
                Cell::from(orate(r.map(|r| r.irq_work), secs)),
                Cell::from(orate(c.tlb_shootdowns, secs)).style(th.truth),
                Cell::from(ktlb),
                Cell::from(orate(s.map(|s| s.tlb), secs)),
                Cell::from(orate(s.map(|s| s.call), secs)),
                Cell::from(orate(s.map(|s| s.reschedule), secs)),
            ])
        })
        .collect();
    let widths = [4, 7, 7, 7, 6, 7, 7, 7, 7, 7].map(Constraint::Length);
    f.render_widget(
        Table::new(rows, widths).header(head).block(
            Block::default()
                .borders(Borders::TOP)
                .title(" IPIs/s per CPU (→: sent) · TLB run here, kTLB: /proc/interrupts ")
                .title_style(th.title),
        ),
        cpus,
    );

    let line1 = Line::from(vec![
        Span::styled(" TLB flushes/s ", th.header),
        Span::raw(format!(
            "remote {} · local-mm {} · local {} · switch {} · wrong-cpu {}",
            orate(tlb.remote_shootdown, secs).trim(),
            orate(tlb.local_mm_shootdown, secs).trim(),
            orate(tlb.local_shootdown, secs).trim(),
            orate(tlb.task_switch, secs).trim(),
            orate(tlb.remote_wrong_cpu, secs).trim(),
        )),
    ]);
    let line2 = Line::from(vec![
        Span::styled(" shootdowns/s ", th.header),
        Span::styled(orate(tlb.shootdowns, secs).trim().to_string(), th.truth),
        Span::raw(format!(
            " (kernel {}) · their IPIs {} · send intents {}",
            tlb.proc_interrupts
                .map_or_else(|| "-".into(), |v| rate(v, secs).trim().to_string()),
            orate(tlb.ipis, secs).trim(),
            orate(tlb.remote_send_ipi, secs).trim(),
        )),
    ]);
    f.render_widget(Paragraph::new(vec![line1, line2]), reasons);

    let v = &app.irq;
    let title = |name: &'static str, s: SenderSort| {
        if v.sender_sort == s {
            format!("{name}{}", if v.sender_reverse { "▲" } else { "▼" })
        } else {
            name.to_string()
        }
    };
    let head = Row::new(vec![
        Cell::from(title("PID", SenderSort::Pid)),
        Cell::from("COMM"),
        Cell::from("KIND"),
        Cell::from("FUNCTION"),
        Cell::from(title("IPI/s", SenderSort::Ipis)),
        Cell::from(title("CALLS/s", SenderSort::Queued)),
    ])
    .style(th.header);
    let list = v.senders(fr);
    let rows: Vec<Row> = list
        .iter()
        .map(|s| {
            let style = if s.kind == "tlb" { th.warn } else { th.normal };
            Row::new(vec![
                Cell::from(s.pid.to_string()),
                Cell::from(fmt::inert(&s.comm)),
                Cell::from(s.kind.clone()),
                Cell::from(fmt::inert(&s.func)),
                Cell::from(orate(s.ipis, secs)),
                Cell::from(orate(s.queued, secs)),
            ])
            .style(style)
        })
        .collect();
    let func_w = senders
        .width
        .saturating_sub(7 + 15 + 11 + 8 + 8 + 5)
        .clamp(12, 40);
    let widths = [7, 15, 11, func_w, 8, 8].map(Constraint::Length);
    f.render_widget(
        Table::new(rows, widths).header(head).block(
            Block::default()
                .borders(Borders::TOP)
                .title(" who sends IPIs, and for what (s: sort, S: reverse) ")
                .title_style(th.title),
        ),
        senders,
    );
    if let Some(top) = list.first() {
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(" hint: ", th.dim),
                Span::raw(pattern(&top.kind, &top.func)),
            ])),
            hint,
        );
    }
}
