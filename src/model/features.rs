//! What ttop measures on this kernel, and how: one entry per figure family, with the hook
//! that measured it (the modern one, an older one standing in for it, or none) and the
//! reason in one plain sentence. Collected once at start (collect/), carried in every
//! Sample's `Mode` (so a replay knows what the recorded kernel could measure), shown by
//! `ttop probe`, in the banner, and where a figure is `-` on screen.

use serde::{Deserialize, Serialize};

/// How a figure family is measured here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Through the hook ttop prefers.
    Measured,
    /// Through an older hook that measures the same thing (the note says what differs).
    Fallback,
    /// Not measured on this kernel: shown as `-` / null, never 0.
    Missing,
    /// Turned off by the user (`--no-bpf`, `--no-futex`).
    Off,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Measured => "measured",
            Status::Fallback => "fallback",
            Status::Missing => "not available",
            Status::Off => "off",
        }
    }

    /// The figure has numbers (through either hook).
    pub fn measured(self) -> bool {
        matches!(self, Status::Measured | Status::Fallback)
    }
}

/// One figure family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Stable id (one of IDS): scripts may match on it.
    pub id: String,
    pub status: Status,
    /// The hook(s) in use, e.g. `tp_btf/sched_switch`, `kprobe/flush_tlb_func`.
    #[serde(default)]
    pub hook: String,
    /// Why it is not the preferred hook, or why it is missing (empty when measured).
    #[serde(default)]
    pub note: String,
}

impl Feature {
    pub fn new(id: &str, status: Status, hook: impl Into<String>, note: impl Into<String>) -> Self {
        Self {
            id: id.to_string(),
            status,
            hook: hook.into(),
            note: note.into(),
        }
    }

    pub fn measured(id: &str, hook: impl Into<String>) -> Self {
        Self::new(id, Status::Measured, hook, "")
    }

    pub fn missing(id: &str, note: impl Into<String>) -> Self {
        Self::new(id, Status::Missing, "", note)
    }

    /// The banner / problems[] sentence for a fallback or a missing figure (None when
    /// measured the preferred way or turned off by the user, who knows).
    pub fn problem(&self) -> Option<String> {
        let what = label_of(&self.id);
        match self.status {
            Status::Measured | Status::Off => None,
            Status::Fallback => Some(format!("{what}: {} (through {})", self.note, self.hook)),
            Status::Missing => Some(format!("{what}: not measured: {}", self.note)),
        }
    }
}

/// The figure families, in the order `ttop probe` lists them, with their labels.
pub const IDS: &[(&str, &str)] = &[
    (
        "runnable",
        "runnable threads (time-weighted), per-CPU run queues",
    ),
    (
        "cpu_time",
        "on-CPU time per process and thread, exited threads included",
    ),
    ("thread_churn", "threads created and exited, ghost threads"),
    ("sched_latency", "run-queue wait and scheduling latency"),
    (
        "time_split",
        "wall time per thread split by cause (on CPU, runnable, futex, I/O, fault...)",
    ),
    (
        "time_split_locks",
        "the time split's kernel-lock and mmap_lock parts",
    ),
    ("futex_waits", "futex waits that slept"),
    ("futex_calls", "futex calls, EAGAIN returns and wakes"),
    ("kernel_locks", "kernel-lock contention"),
    ("mmap_lock", "mmap_lock waits and holders"),
    ("ipi_received", "IPIs received, by type, per CPU"),
    ("ipi_sent", "IPIs sent, by purpose and sender"),
    ("tlb_shootdowns", "TLB shootdowns received, per CPU"),
    ("tlb_caused", "TLB shootdowns caused, per process"),
    ("tlb_reasons", "TLB flushes by reason"),
    (
        "user_stacks",
        "user stacks of waiters (frame pointers and .eh_frame)",
    ),
    ("kernel_stacks", "kernel stacks of lock waiters"),
    ("profile", "on-CPU profile (ttop profile, --profile)"),
    ("off_cpu", "off-CPU profile (--off-cpu)"),
];

pub fn label_of(id: &str) -> &str {
    IDS.iter().find(|(i, _)| *i == id).map_or(id, |(_, l)| *l)
}

/// Every figure family, none measured, for one reason (eBPF off).
pub fn all_not_measured(status: Status, why: &str) -> Vec<Feature> {
    IDS.iter()
        .map(|(id, _)| Feature::new(id, status, "", why))
        .collect()
}

/// `found` in the order of IDS (anything unknown after them).
pub fn in_order(mut found: Vec<Feature>) -> Vec<Feature> {
    found.sort_by_key(|f| {
        IDS.iter()
            .position(|(id, _)| *id == f.id)
            .unwrap_or(usize::MAX)
    });
    found
}

/// The entry for `id`, if collected.
pub fn find<'a>(features: &'a [Feature], id: &str) -> Option<&'a Feature> {
    features.iter().find(|f| f.id == id)
}

/// Whether `id` was collected and measured: for figures newer than some recordings,
/// which must read as not measured there.
pub fn is_known_measured(features: &[Feature], id: &str) -> bool {
    find(features, id).is_some_and(|f| f.status.measured())
}

/// Whether `id` was measured. Recordings made before features were kept have none:
/// they were made on kernels where every figure they hold was measured.
pub fn is_measured(features: &[Feature], id: &str) -> bool {
    features.is_empty() || find(features, id).is_none_or(|f| f.status.measured())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_say_what_is_missing_and_what_stands_in() {
        let f = Feature::new(
            "tlb_shootdowns",
            Status::Fallback,
            "tp/tlb:tlb_flush",
            "no csd:csd_function_entry before Linux 6.3",
        );
        let p = f.problem().unwrap();
        assert!(
            p.starts_with("TLB shootdowns received, per CPU: no csd"),
            "{p}"
        );
        assert!(p.ends_with("(through tp/tlb:tlb_flush)"), "{p}");
        let m = Feature::missing("kernel_locks", "needs Linux 5.19 (lock:contention_begin)");
        assert_eq!(
            m.problem().unwrap(),
            "kernel-lock contention: not measured: needs Linux 5.19 (lock:contention_begin)"
        );
        assert_eq!(
            Feature::measured("runnable", "tp_btf/sched_switch").problem(),
            None
        );
    }

    #[test]
    fn old_recordings_count_as_measured() {
        assert!(is_measured(&[], "tlb_shootdowns"));
        let fs = vec![Feature::missing("tlb_shootdowns", "x")];
        assert!(!is_measured(&fs, "tlb_shootdowns"));
        assert!(is_measured(&fs, "runnable"));
    }

    #[test]
    fn every_id_has_a_label() {
        for (id, label) in IDS {
            assert_eq!(label_of(id), *label);
        }
    }
}
