//! `ttop man`: the man page (roff), generated from the clap definitions and the keymap
//! table, so it never drifts from the flags and keys: ttop(1) with a section per
//! subcommand, then KEYS, ENVIRONMENT, EXIT STATUS and EXAMPLES.

use clap::{Arg, Command};

use crate::app::keymap::{Binding, KEYMAP};
use crate::app::mouse::MOUSE_HELP;
use crate::app::replay_keys::REPLAY_KEYMAP;

/// The environment ttop reads: what each variable changes. Every `TTOP_*` variable the
/// source reads is here (a test checks it).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "When set and not empty, the dashboard uses no colour (as --color never; --color always overrides it). See https://no-color.org.",
    ),
    (
        "TTOP_UNPACED",
        "When set, the /proc scan reads every thread at once instead of at the pace top reads them: what a scan that never falls behind would see (for comparisons; the default is top's pace).",
    ),
    (
        "TTOP_SCHED_RAW_TP",
        "When set, the scheduler programs attach as raw tracepoints, as on a kernel without tp_btf (to check that fallback).",
    ),
    (
        "TTOP_FUTEX_RAW_SYSCALLS",
        "When set, futex calls are hooked through raw_syscalls, as on a kernel without the futex syscall tracepoints (to check that fallback).",
    ),
    (
        "TTOP_FUTEX_NO_SLEEPS",
        "When set, futex waits are counted from the syscall hooks, as on a kernel where the scheduler-side futex accounting does not load (to check that fallback).",
    ),
    (
        "TTOP_KERNEL_HIDE",
        "=NAME,...: act as if this kernel lacked these tracepoints, helpers, map types, fields or functions (kprobes: every kprobe; proc_interrupts: the x86 IPI lines of /proc/interrupts), so the fallbacks older kernels take run here (for tests; ttop probe shows the result).",
    ),
    (
        "TTOP_KALLSYMS",
        "=file: kernel symbols are read from /proc/kallsyms instead of by the kernel-symbol program (slower start).",
    ),
    (
        "TTOP_LOCK_STACK_CACHE",
        "=off: every kernel-lock wait takes a full kernel stack walk (no fingerprint cache; for comparisons).",
    ),
    (
        "TTOP_STACK_MAPS",
        "=N: the kernel-lock, futex and mmap_lock stack maps hold N stacks each (1-4096), so stacks share buckets and spill (for tests).",
    ),
    (
        "TTOP_USTACKS",
        "=off: no user stacks are kept for futex waiters (their callers show as -; what keeping them costs).",
    ),
    (
        "TTOP_OFF_PER_S",
        "=N: off-CPU profiles send N stacks a second over all CPUs (default 2000) before waits are kept one in N, each weighted N (for tests).",
    ),
    (
        "TTOP_NO_DWARF",
        "=1: user stacks are walked by frame pointers only, without unwinding from .eh_frame.",
    ),
    (
        "TTOP_BPF_FLOOR",
        "=1: every eBPF program returns at its first instruction, on the same hooks: the floor that ttop's overhead is netted of (benchmarks, the cost gate); the eBPF figures are then empty, and problems[] says so.",
    ),
    (
        "TTOP_IPI_SPLIT",
        "=1: IPIs received are split into function calls and single function calls from the start, as the IPI view does while it is open (otherwise the kernel's CAL total is shown alone).",
    ),
    (
        "TTOP_DETACH_INLINE",
        "=1: on quitting, the eBPF programs are detached by ttop itself, not by a child left to finish it (quitting then waits for the kernel).",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success, and a dashboard left with q, Ctrl-C, SIGTERM or SIGHUP, or whose terminal went away.",
    ),
    (
        "1",
        "An error, said in one line on standard error: no terminal for the dashboard, no such process for -p (or a thread's ID), a recording that cannot be read or written, eBPF refused for `ttop profile`.",
    ),
    ("2", "A command line that does not parse (with the usage)."),
];

const EXAMPLES: &[(&str, &str)] = &[
    (
        "sudo ttop",
        "The dashboard, with the kernel's view (eBPF) beside the /proc scan.",
    ),
    ("ttop --no-bpf", "The /proc view only: no root needed."),
    (
        "ssh -t db1 sudo ttop",
        "Over SSH: the dashboard needs a terminal (-t).",
    ),
    (
        "sudo ttop -p 4242 --comm postgres",
        "Watch these processes only, and postgres processes started later.",
    ),
    (
        "sudo ttop --json -n 10 -d 0.5 | jq .runnable",
        "Ten frames of JSON, half a second apart, without a dashboard.",
    ),
    (
        "sudo ttop record --dir /var/log/ttop --rotate 1h --keep 7d",
        "Record continuously, one file an hour, a week kept.",
    ),
    (
        "ttop replay /var/log/ttop",
        "Replay a directory of recordings in the dashboard (g goes to a time).",
    ),
    (
        "ttop replay incident.ttop --json > frames.jsonl",
        "The frames of a recording as JSON Lines.",
    ),
    (
        "sudo ttop serve --listen :9464",
        "OpenMetrics for Prometheus on port 9464.",
    ),
    (
        "sudo ttop profile -p 4242 --duration 10 --svg flame.svg",
        "Sample a process's stacks for 10 s and draw a flame graph.",
    ),
    ("ttop man | man -l -", "Read this page."),
];

/// Text made safe for roff: a backslash doubled, a line starting with . or ' escaped,
/// and a character beyond ASCII written as its groff name (\[u2190] for ←), which
/// troff reads without preconv.
fn roff(text: &str) -> String {
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => ascii.push_str("\\\\"),
            c if c.is_ascii() => ascii.push(c),
            c => ascii.push_str(&format!("\\[u{:04X}]", c as u32)),
        }
    }
    ascii
        .lines()
        .map(|l| {
            if l.starts_with(['.', '\'']) {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tagged paragraph: `tag` (already roff) and its text.
fn tp(tag: &str, text: &str) -> String {
    format!(".TP\n{tag}\n{}\n", roff(text))
}

/// How an option takes its value: ` VALUE`, `[=VALUE]` (optional, after =), or nothing.
fn value_syntax(arg: &Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    let names = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("\\fI{n}\\fR"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
    match (optional, arg.is_require_equals_set()) {
        (true, _) => format!("[={names}]"),
        (false, true) => format!("={names}"),
        (false, false) if names.is_empty() => String::new(),
        (false, false) => format!(" {names}"),
    }
}

/// A subcommand's section: what it does, and each of its options.
fn sub_section(sub: &Command) -> String {
    let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
    let mut out = format!(
        ".SH \"TTOP {}\"\n{}\n",
        sub.get_name().to_uppercase(),
        roff(&about)
    );
    for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
        let name = match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => format!("\\fB-{s}\\fR, \\fB--{l}\\fR"),
            (None, Some(l)) => format!("\\fB--{l}\\fR"),
            (Some(s), None) => format!("\\fB-{s}\\fR"),
            (None, None) => arg
                .get_value_names()
                .and_then(|v| v.first())
                .map(|n| format!("\\fI{n}\\fR"))
                .unwrap_or_default(),
        };
        let value = if arg.get_long().is_some() || arg.get_short().is_some() {
            value_syntax(arg)
        } else {
            String::new()
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&tp(&format!("{name}{value}"), &help));
    }
    out
}

/// The subcommands, each pointing at its section of this page (clap_mangen names
/// ttop-record(1) and the like, pages that do not exist).
fn subcommands(cmd: &Command) -> String {
    let mut out = String::from(".SH SUBCOMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let name = sub.get_name();
        out.push_str(&tp(
            &format!("\\fBttop {name}\\fR"),
            &format!(
                "{}. See TTOP {} below.",
                about.trim_end_matches('.'),
                name.to_uppercase()
            ),
        ));
    }
    out
}

/// The dashboard's keys, from the keymap table (the replay's own after), and the mouse.
fn keys() -> String {
    let mut out = String::from(
        ".SH KEYS\nIn the dashboard (? shows them too, for the view on screen). Keys \
         marked with a view apply there only.\n",
    );
    let row = |b: &Binding| {
        let views = b.views.map_or(String::new(), |v| {
            let names: Vec<&str> = v.iter().map(|v| v.title()).collect();
            format!(" (in {})", names.join(", "))
        });
        tp(
            &format!("\\fB{}\\fR", roff(b.label)),
            &format!("{}{views}", b.help),
        )
    };
    for b in KEYMAP {
        out.push_str(&row(b));
    }
    out.push_str(".PP\nWhile replaying a recording, also (before the keys above):\n");
    for b in REPLAY_KEYMAP {
        out.push_str(&row(b));
    }
    out.push_str(".PP\nThe mouse, live and in replay:\n");
    for (what, help) in MOUSE_HELP {
        out.push_str(&tp(&format!("\\fB{what}\\fR"), help));
    }
    out
}

fn table(head: &str, rows: &[(&str, &str)], tag: impl Fn(&str) -> String) -> String {
    let mut out = format!(".SH {head}\n");
    for (k, v) in rows {
        out.push_str(&tp(&tag(k), v));
    }
    out
}

/// The man page (roff), generated from these definitions: ttop(1) with a section per
/// subcommand, and the keys, environment, exit status and examples.
pub fn man_page() -> Vec<u8> {
    use clap::CommandFactory;
    let cmd = super::Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render(&mut out).expect("writing to a Vec cannot fail");
    let mut page = String::from_utf8(out).expect("clap_mangen writes UTF-8");
    // Its SUBCOMMANDS names pages that are not generated; VERSION goes last.
    let cut = |page: &mut String, head: &str| -> String {
        let Some(a) = page.find(&format!(".SH {head}\n")) else {
            return String::new();
        };
        let b = page[a + 1..]
            .find("\n.SH ")
            .map_or(page.len(), |i| a + i + 2);
        page.drain(a..b).collect()
    };
    let version = cut(&mut page, "VERSION");
    let at = page.find(".SH SUBCOMMANDS\n");
    cut(&mut page, "SUBCOMMANDS");
    page.insert_str(at.unwrap_or(page.len()), &subcommands(&cmd));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        page.push_str(&sub_section(sub));
    }
    page.push_str(&keys());
    page.push_str(&table("ENVIRONMENT", ENVIRONMENT, |k| {
        format!("\\fB{k}\\fR")
    }));
    page.push_str(&table("EXIT STATUS", EXIT_STATUS, |k| {
        format!("\\fB{k}\\fR")
    }));
    page.push_str(&table("EXAMPLES", EXAMPLES, |k| {
        format!("\\fB{}\\fR", roff(k).replace('-', "\\-"))
    }));
    page.push_str(&version);
    page.into_bytes()
}
