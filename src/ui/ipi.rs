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

/// The tables' columns (the help screen lists them). Per second, per CPU.
pub const COLUMNS: &[(&str, &str)] = &[
    ("CPU", "CPU number"),
    (
        "CALL/s",
        "function-call IPIs this CPU received (sent to many CPUs at once)",
    ),
    ("CALL1/s", "single-target function-call IPIs received"),
    (
        "RESCH/s",
        "reschedule IPIs received: another CPU woke a thread to run here",
    ),
    ("IRQW/s", "irq_work IPIs received"),
    (
        "TLB/s",
        "TLB shootdowns this CPU ran for another CPU's unmap or protection change (eBPF)",
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
    let cpu_h = (ncpu + 2).min(area.height.saturating_sub(6) / 2).max(3);
    let [cpus, reasons, senders, hint] = Layout::vertical([
        Constraint::Length(cpu_h),
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);

    let head = Row::new(CPU_HEADER.map(Cell::from)).style(th.header);
    let rows: Vec<Row> = fr
        .cpus
        .iter()
        .map(|c| {
            let r = c.ipi.clone().unwrap_or_default();
            let s = c.ipi_sent.clone().unwrap_or_default();
            let ktlb = c
                .interrupts
                .get("TLB")
                .map_or_else(|| "-".into(), |v| rate(*v, secs));
            Row::new(vec![
                Cell::from(c.cpu.to_string()),
                Cell::from(rate(r.call_function, secs)),
                Cell::from(rate(r.call_function_single, secs)),
                Cell::from(rate(r.reschedule, secs)),
                Cell::from(rate(r.irq_work, secs)),
                Cell::from(rate(c.tlb_shootdowns.unwrap_or(0), secs)).style(th.truth),
                Cell::from(ktlb),
                Cell::from(rate(s.tlb, secs)),
                Cell::from(rate(s.call, secs)),
                Cell::from(rate(s.reschedule, secs)),
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
            rate(tlb.remote_shootdown, secs).trim(),
            rate(tlb.local_mm_shootdown, secs).trim(),
            rate(tlb.local_shootdown, secs).trim(),
            rate(tlb.task_switch, secs).trim(),
            rate(tlb.remote_wrong_cpu, secs).trim(),
        )),
    ]);
    let line2 = Line::from(vec![
        Span::styled(" shootdowns/s ", th.header),
        Span::styled(rate(tlb.shootdowns, secs).trim().to_string(), th.truth),
        Span::raw(format!(
            " (kernel {}) · their IPIs {} · send intents {}",
            tlb.proc_interrupts
                .map_or_else(|| "-".into(), |v| rate(v, secs).trim().to_string()),
            rate(tlb.ipis, secs).trim(),
            rate(tlb.remote_send_ipi, secs).trim(),
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
                Cell::from(rate(s.ipis, secs)),
                Cell::from(rate(s.queued, secs)),
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
