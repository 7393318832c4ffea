//! What the scheduler probes measure on this kernel (model::features), given which of
//! them attached: a figure whose probes all ran is measured, else missing with the
//! probes that did not run.

use super::lock_split;
use crate::model::features::Feature;

/// What the scheduler probes measure, given which of them attached.
pub fn features(switch: &str, problems: &[String]) -> Vec<Feature> {
    let lacks = |p: &str| {
        problems
            .iter()
            .any(|x| x.starts_with(&format!("probe {p}:")))
    };
    let why = |ps: &[&str]| {
        let missing: Vec<&str> = ps.iter().copied().filter(|p| lacks(p)).collect();
        format!("probe {} did not run", missing.join(", "))
    };
    let f = |id: &str, needs: &[&str], hook: String| {
        if needs.iter().any(|p| lacks(p)) {
            Feature::missing(id, why(needs))
        } else {
            Feature::measured(id, hook)
        }
    };
    vec![
        f(
            "runnable",
            &["sched_switch", "sched_wakeup", "sched_wakeup_new"],
            format!("{switch}, sched_wakeup(_new)"),
        ),
        f("cpu_time", &["sched_switch"], switch.to_string()),
        match problems.iter().find(|p| p.starts_with(lock_split::PROBE)) {
            Some(p) => Feature::missing(
                "time_split_locks",
                p.trim_start_matches(lock_split::PROBE).trim(),
            ),
            None => Feature::measured(
                "time_split_locks",
                "raw_tp/contention_begin, raw_tp/contention_end",
            ),
        },
        f(
            "thread_churn",
            &["task_newtask", "sched_process_exit"],
            "task_newtask, sched_process_exit".into(),
        ),
        f(
            "time_split",
            &[
                "sched_switch",
                "sched_wakeup",
                "sched_wakeup_new",
                "seed_sleepers",
            ],
            format!(
                "{switch} (state, system call, iowait at switch-out), sched_wakeup(_new), iter/task"
            ),
        ),
        f(
            "sched_latency",
            &["sched_switch", "sched_wakeup", "sched_wakeup_new"],
            format!("{switch}, sched_wakeup(_new)"),
        ),
    ]
}
