//! The one table of the process rows' fields: what each is called on screen, what it
//! means and its unit (the help screen), how wide it is and from which screen width it
//! shows, how it sorts (the sort names are the settings file's and the keys'), what it
//! shows (a value the screen writes as text), and the OpenMetrics gauge it is exported
//! as, if any. The process table's columns, the sort keys, the column chooser and the
//! per-process metric families are made from it; `field_table_tests.rs` checks that
//! they agree. It lives in the model so the screen (app/, ui/) and `serve` read the
//! same rows; how a `Value` is written is the screen's (`ui::procs::text`).

use crate::model::frame::ProcFrame;

/// A field of a process row. The sort order of the process table is one of them (the
/// sortable ones: `Field::sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcField {
    Pid,
    User,
    Priority,
    Nice,
    Comm,
    State,
    Threads,
    Running,
    Created,
    Exited,
    Ghosts,
    GhostCpu,
    CpuScan,
    CpuThreads,
    CpuTrue,
    Miss,
    RunqWait,
    Rss,
    CpuTime,
    Start,
    CtxVoluntary,
    CtxInvoluntary,
    MajFlt,
}

/// What a value is written against: the interval's length and the frame's time.
#[derive(Debug, Clone, Copy)]
pub struct At {
    pub secs: f64,
    pub now: f64,
}

/// How a field sorts.
#[derive(Clone, Copy)]
pub enum Key {
    /// As a number (integers up to 2^53 are exact in an f64); a missing value sorts
    /// as -1.
    Num(fn(&ProcFrame) -> Option<f64>),
    /// As text.
    Text(fn(&ProcFrame) -> &str),
}

#[derive(Clone, Copy)]
pub struct Sort {
    /// The name in the title, the settings file and `s`'s cycle (a public contract).
    pub name: &'static str,
    pub key: Key,
    /// Biggest first (numbers); text and PIDs go up.
    pub descending: bool,
}

pub struct Field {
    pub id: ProcField,
    pub title: &'static str,
    /// What the column means and its unit (the help screen lists it).
    pub help: &'static str,
    pub width: u16,
    /// Shown only when the table is at least this wide.
    pub min_screen: u16,
    pub sort: Option<Sort>,
    /// What it shows of a row, at `At`.
    pub value: fn(&ProcFrame, At) -> Value<'_>,
    /// Its bounded per-name counter family, if it has one.
    pub group: Option<GroupCounter>,
    /// Its per-process metric family, if it has one.
    pub metric: Option<Metric>,
}

/// What a field shows, before the screen writes it as text (`ui::procs::text`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// Not measured: "-".
    Missing,
    /// Written as it is.
    Plain(String),
    /// A name from the system, written with control characters made inert.
    Name(&'a str),
    /// A number in at most this many characters.
    Num(f64, usize),
    /// A percentage.
    Pct(f64),
    /// Kilobytes, written in K, M, G of 1024.
    Kb(u64),
    /// A duration in microseconds.
    Micros(f64),
    /// Seconds as top's TIME+.
    TimePlus(f64),
    /// A start time (seconds since the epoch), against the frame's time.
    Start { t: f64, now: f64 },
}

/// A field's OpenMetrics family: a gauge about the last interval for each of the top
/// processes (labels `pid` and `comm`), named `ttop_` + `name` (a public contract). The
/// name carries the unit (`_per_second`, `_percent`) and `value` gives the figure in it,
/// from the row and the interval's length in seconds. Per-process series are gauges:
/// a counter per pid would grow without bound; the bounded per-name counters are
/// `serve::groups`'.
#[derive(Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
    pub value: fn(&ProcFrame, f64) -> Option<f64>,
}

/// A field's counter per process name (`serve::groups`: the top names by comm and
/// `comm=""` for the rest, so the series stay bounded where a pid's would not): named
/// `ttop_` + `name`, then `_seconds` when in seconds, then `_total` (a public contract).
/// `amount` is what a process row adds in its interval, in seconds or as a count, given
/// the interval's length in seconds. Futex wait seconds and the processes count are
/// such families too but no field's (no column shows them; the row has its futex wait
/// time, but a column for it would change the screen): `serve::counters` writes them.
#[derive(Clone, Copy)]
pub struct GroupCounter {
    pub name: &'static str,
    pub help: &'static str,
    /// In seconds (else a count, without a unit).
    pub seconds: bool,
    pub amount: fn(&ProcFrame, f64) -> f64,
}

/// The fields with a group counter, with it, in the table's order.
pub fn group_counters() -> impl Iterator<Item = (ProcField, &'static GroupCounter)> {
    FIELDS
        .iter()
        .filter_map(|f| f.group.as_ref().map(|g| (f.id, g)))
}

/// A figure of the /proc scan: "-" for a process that was gone when /proc was scanned
/// (the scan never read it this interval: not measured, not 0).
fn scanned(p: &ProcFrame, v: impl FnOnce() -> Value<'static>) -> Value<'static> {
    if p.gone { Value::Missing } else { v() }
}

fn rate(v: Option<u64>, secs: f64) -> Value<'static> {
    v.map_or(Value::Missing, |v| Value::Num(v as f64 / secs, 6))
}

fn per_s(v: Option<f64>) -> Value<'static> {
    v.map_or(Value::Missing, |v| Value::Num(v, 7))
}

fn int<T: ToString>(v: Option<T>) -> Value<'static> {
    v.map_or(Value::Missing, |v| Value::Plain(v.to_string()))
}

fn pct(v: Option<f64>) -> Value<'static> {
    v.map_or(Value::Missing, Value::Pct)
}

/// A count in the interval as a rate per second of it (none for an empty interval).
fn per_second(n: Option<u64>, secs: f64) -> Option<f64> {
    n.and_then(|n| (secs > 0.0).then(|| n as f64 / secs))
}

const fn num(name: &'static str, key: fn(&ProcFrame) -> Option<f64>) -> Option<Sort> {
    Some(Sort {
        name,
        key: Key::Num(key),
        descending: true,
    })
}

fn u(v: Option<u64>) -> Option<f64> {
    v.map(|v| v as f64)
}

pub const FIELDS: &[Field] = &[
    Field {
        id: ProcField::Pid,
        title: "PID",
        help: "process ID",
        width: 7,
        min_screen: 0,
        sort: Some(Sort {
            name: "PID",
            key: Key::Num(|p| Some(f64::from(p.pid))),
            descending: false,
        }),
        value: |p, _| Value::Plain(p.pid.to_string()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::User,
        title: "USER",
        help: "the user it runs as: its real uid's name in /etc/passwd (/proc/PID/status), else the uid",
        width: 8,
        min_screen: 150,
        sort: Some(Sort {
            name: "USER",
            key: Key::Text(|p| &p.user),
            descending: false,
        }),
        value: |p, _| match p.user.is_empty() {
            true => Value::Missing,
            false => Value::Name(&p.user),
        },
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Priority,
        title: "PR",
        help: "the kernel's priority, as top's PR: 20 + nice for a normal process, rt for a real-time one at the top priority, negative for the other real-time ones",
        width: 3,
        min_screen: 180,
        sort: num("PR", |p| p.priority.map(f64::from)),
        value: |p, _| match p.priority {
            Some(v) if v <= -100 => Value::Plain("rt".to_string()),
            v => int(v),
        },
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Nice,
        title: "NI",
        help: "nice value, -20 (first) to 19 (last) (/proc/PID/stat)",
        width: 3,
        min_screen: 180,
        sort: num("NI", |p| p.nice.map(f64::from)),
        value: |p, _| int(p.nice),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Comm,
        title: "COMM",
        help: "process name, as the kernel keeps it (/proc/PID/comm, 15 characters)",
        width: 15,
        min_screen: 0,
        sort: Some(Sort {
            name: "COMM",
            key: Key::Text(|p| &p.comm),
            descending: false,
        }),
        value: |p, _| Value::Name(&p.comm),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::State,
        title: "S",
        help: "state at the scan: R running or runnable, S sleeping, D uninterruptible, I idle kernel thread, T stopped, Z zombie; X gone before the scan",
        width: 1,
        min_screen: 56,
        sort: None,
        value: |p, _| Value::Plain(p.state.to_string()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Threads,
        title: "THR",
        help: "threads the /proc scan found",
        width: 4,
        min_screen: 60,
        sort: num("THR", |p| Some(f64::from(p.threads_seen))),
        value: |p, _| scanned(p, || Value::Num(f64::from(p.threads_seen), 4)),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Running,
        title: "R",
        help: "of those, threads in state R (running or waiting for a CPU) at the scan",
        width: 3,
        min_screen: 100,
        sort: None,
        value: |p, _| scanned(p, || Value::Plain(p.running_seen.to_string())),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Created,
        title: "NEW/s",
        help: "threads created per second (eBPF)",
        width: 6,
        min_screen: 70,
        sort: num("NEW/s", |p| u(p.threads_created)),
        value: |p, at| rate(p.threads_created, at.secs),
        group: Some(GroupCounter {
            name: "process_group_threads_created",
            help: "Threads these processes created",
            seconds: false,
            amount: |p, _| p.threads_created.unwrap_or(0) as f64,
        }),
        metric: Some(Metric {
            name: "process_threads_created_per_second",
            help: "Threads created (top processes by creations)",
            value: |p, secs| per_second(p.threads_created, secs),
        }),
    },
    Field {
        id: ProcField::Exited,
        title: "EXIT/s",
        help: "threads that exited per second (eBPF)",
        width: 7,
        min_screen: 70,
        sort: num("EXIT/s", |p| u(p.threads_exited)),
        value: |p, at| rate(p.threads_exited, at.secs),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Ghosts,
        title: "GHOST/s",
        help: "ghost threads per second: born and dead between two scans, so no scan (top, htop, ps) ever lists them (eBPF)",
        width: 8,
        min_screen: 48,
        sort: num("GHOST/s", |p| u(p.ghost_threads)),
        value: |p, at| rate(p.ghost_threads, at.secs),
        group: None,
        metric: Some(Metric {
            name: "process_ghost_threads_per_second",
            help: "Threads born and dead between two scans (no scan saw them)",
            value: |p, secs| per_second(p.ghost_threads, secs),
        }),
    },
    Field {
        id: ProcField::GhostCpu,
        title: "GHOST%",
        help: "CPU the ghost threads used, in % of one CPU: the CPU a per-thread scan cannot attribute",
        width: 6,
        min_screen: 110,
        sort: None,
        value: |p, at| {
            p.ghost_cpu_ms
                .get()
                .map_or(Value::Missing, |v| Value::Pct(v / 10.0 / at.secs))
        },
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::CpuScan,
        title: "SCAN%",
        help: "CPU as top computes it per process, from utime+stime in /proc/PID/stat between two scans (its exited threads' CPU included), in % of one CPU; - in its first interval and when it was gone at the scan",
        width: 6,
        min_screen: 0,
        sort: num("SCAN%", |p| p.cpu_pct_scan.get()),
        value: |p, _| pct(p.cpu_pct_scan.get()),
        group: None,
        metric: Some(Metric {
            name: "process_cpu_scan_percent",
            help: "CPU% from /proc utime+stime (top's figure)",
            value: |p, _| p.cpu_pct_scan.get(),
        }),
    },
    // What the threads' own counters add up to: TRUE% less this is what a per-thread
    // scan misses (the X sort and the highlight).
    Field {
        id: ProcField::CpuThreads,
        title: "THRD%",
        help: "what its threads' own counters add up to: the per-thread view (top -H, htop showing threads), in % of one CPU; TRUE% above it is what that view misses",
        width: 6,
        min_screen: 130,
        sort: None,
        value: |p, _| pct(p.cpu_pct_scan_threads.get()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::CpuTrue,
        title: "TRUE%",
        help: "CPU measured at every context switch (eBPF), exited threads included, in % of one CPU",
        width: 6,
        min_screen: 0,
        sort: num("TRUE%", |p| p.cpu_pct_true),
        value: |p, _| pct(p.cpu_pct_true),
        // eBPF's on-CPU time where measured, else the scan's.
        group: Some(GroupCounter {
            name: "process_group_cpu",
            help: "On-CPU seconds of the processes with this comm (comm=\"\": every other process)",
            seconds: true,
            amount: |p, secs| p.cpu_pct_true.or(p.cpu_pct_scan.get()).unwrap_or(0.0) / 100.0 * secs,
        }),
        metric: Some(Metric {
            name: "process_cpu_true_percent",
            help: "On-CPU time from eBPF, exited threads included (100 = one CPU)",
            value: |p, _| p.cpu_pct_true,
        }),
    },
    Field {
        id: ProcField::Miss,
        title: "MISS%",
        help: "CPU a per-thread scan misses, in % of one CPU: TRUE% above THRD% (threads that ended between two scans, ghosts whole); all of TRUE% for a process gone at the scan; - without eBPF and in its first interval",
        width: 6,
        min_screen: 140,
        sort: num("MISS", |p| p.scan_miss.get()),
        value: |p, _| pct(p.scan_miss.get()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::RunqWait,
        title: "RQWAIT/s",
        help: "time its threads spent runnable but waiting for a CPU, per second of the interval (over 1s: several threads waiting at once)",
        width: 9,
        min_screen: 77,
        sort: num("RQWAIT", |p| p.runq_wait_ms),
        value: |p, at| {
            p.runq_wait_ms
                .map_or(Value::Missing, |v| Value::Micros(v * 1e3 / at.secs))
        },
        group: Some(GroupCounter {
            name: "process_group_runqueue_wait",
            help: "Seconds the threads of these processes waited for a CPU",
            seconds: true,
            amount: |p, _| p.runq_wait_ms.unwrap_or(0.0) / 1e3,
        }),
        metric: None,
    },
    Field {
        id: ProcField::Rss,
        title: "RSS",
        help: "resident memory (K, M, G of 1024)",
        width: 6,
        min_screen: 120,
        sort: num("RSS", |p| Some(p.rss_kb as f64)),
        value: |p, _| scanned(p, || Value::Kb(p.rss_kb)),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::CpuTime,
        title: "TIME+",
        help: "CPU time used since it started, as top's TIME+ (minutes:seconds.hundredths): utime+stime of /proc/PID/stat, its exited threads included",
        width: 9,
        min_screen: 170,
        sort: num("TIME+", |p| p.cpu_time_s.get()),
        value: |p, _| p.cpu_time_s.get().map_or(Value::Missing, Value::TimePlus),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::Start,
        title: "START",
        help: "when it started (UTC): HH:MM today, else the date",
        width: 6,
        min_screen: 190,
        sort: num("START", |p| p.start_time.get()),
        value: |p, at| {
            p.start_time
                .get()
                .map_or(Value::Missing, |t| Value::Start { t, now: at.now })
        },
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::CtxVoluntary,
        title: "VCSW/s",
        help: "voluntary context switches per second (it blocked or slept), of its main thread as /proc/PID/status counts them; - in its first interval",
        width: 7,
        min_screen: 200,
        sort: num("VCSW/s", |p| p.ctx_switches_voluntary_per_s.get()),
        value: |p, _| per_s(p.ctx_switches_voluntary_per_s.get()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::CtxInvoluntary,
        title: "ICSW/s",
        help: "involuntary context switches per second (preempted), of its main thread as /proc/PID/status counts them; - in its first interval",
        width: 7,
        min_screen: 200,
        sort: num("ICSW/s", |p| p.ctx_switches_involuntary_per_s.get()),
        value: |p, _| per_s(p.ctx_switches_involuntary_per_s.get()),
        group: None,
        metric: None,
    },
    Field {
        id: ProcField::MajFlt,
        title: "MAJFLT/s",
        help: "major page faults per second: faults that waited for a read from disk (majflt in /proc/PID/stat); - in its first interval",
        width: 9,
        min_screen: 200,
        sort: num("MAJFLT/s", |p| p.majflt_per_s.get()),
        value: |p, _| per_s(p.majflt_per_s.get()),
        group: None,
        metric: None,
    },
];

impl ProcField {
    /// Its row in `FIELDS`.
    pub fn field(self) -> &'static Field {
        FIELDS
            .iter()
            .find(|f| f.id == self)
            .expect("every field is in FIELDS")
    }

    /// Every sortable field, in the table's (the screen's) order: `s` steps through them.
    pub fn sortable() -> impl Iterator<Item = ProcField> {
        FIELDS.iter().filter(|f| f.sort.is_some()).map(|f| f.id)
    }
}
