//! What `ttop probe` says this kernel can measure, against tracefs and kallsyms.

use std::collections::HashMap;

use serde_json::Value;

use super::super::common::*;
use super::{kallsyms_has, kprobes, tracepoint};

/// `ttop probe --json`: each figure family's status and note, by id.
fn probe() -> (Value, HashMap<String, (String, String)>) {
    let out = std::process::Command::new(ttop_bin())
        .args(["probe", "--json"])
        .output()
        .expect("run ttop probe");
    assert!(out.status.success(), "ttop probe failed");
    let v: Value = serde_json::from_slice(&out.stdout).expect("probe's JSON");
    let feats = v["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                (
                    f["status"].as_str().unwrap().to_string(),
                    format!(
                        "{} {}",
                        f["hook"].as_str().unwrap(),
                        f["note"].as_str().unwrap()
                    ),
                ),
            )
        })
        .collect();
    (v, feats)
}

fn status<'a>(feats: &'a HashMap<String, (String, String)>, id: &str) -> &'a str {
    feats.get(id).map_or("absent", |s| s.0.as_str())
}

/// ttop says what this kernel can measure, as tracefs and kallsyms show it: the
/// modern hook where the kernel has it, the fallback (with the reason) where not,
/// and nothing left to an "unexpected error".
#[test]
fn probe_reports_what_this_kernel_has() {
    if !require_root("probe_reports_what_this_kernel_has") {
        return;
    }
    let _g = kernel_lock();
    let (v, feats) = probe();
    eprintln!("{}", serde_json::to_string_pretty(&v["features"]).unwrap());
    assert_eq!(v["mode"], "bpf", "eBPF did not start: {:?}", v["problems"]);
    for id in ["runnable", "cpu_time", "thread_churn", "sched_latency"] {
        assert_eq!(status(&feats, id), "measured", "{id}: {:?}", feats.get(id));
    }
    let locks = tracepoint("lock", "contention_begin");
    assert_eq!(
        status(&feats, "kernel_locks"),
        if locks { "measured" } else { "missing" },
        "kernel locks: {:?}",
        feats.get("kernel_locks")
    );
    if !locks {
        assert!(
            feats["kernel_locks"].1.contains("5.19"),
            "{:?}",
            feats["kernel_locks"]
        );
    }
    let csd = tracepoint("csd", "csd_function_entry");
    // x86 counts them itself: /proc/interrupts' TLB line is read, whatever the hooks.
    let tlb_line = std::fs::read_to_string("/proc/interrupts")
        .is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with("TLB:")));
    let want = if csd || tlb_line {
        "measured"
    } else {
        "fallback"
    };
    assert_eq!(
        status(&feats, "tlb_shootdowns"),
        want,
        "{:?}",
        feats.get("tlb_shootdowns")
    );
    if tlb_line {
        let hook = &feats["tlb_shootdowns"].1;
        assert!(hook.contains("/proc/interrupts TLB"), "{hook}");
        for id in ["tlb_shootdowns", "ipi_received"] {
            assert_eq!(status(&feats, id), "measured", "{:?}", feats.get(id));
        }
    } else if !csd {
        let hook = &feats["tlb_shootdowns"].1;
        let by = if kprobes() {
            "kprobe/flush_tlb_func"
        } else {
            "tlb:tlb_flush"
        };
        assert!(hook.contains(by) && hook.contains("6.3"), "{hook}");
    }
    let ipi_sent = tracepoint("ipi", "ipi_send_cpu");
    assert_eq!(
        status(&feats, "ipi_sent"),
        if ipi_sent { "measured" } else { "missing" }
    );
    // Scheduler-side futex waits need bpf_task_pt_regs (5.15).
    let regs = kallsyms_has("bpf_task_pt_regs");
    assert_eq!(
        status(&feats, "futex_waits"),
        if regs { "measured" } else { "fallback" },
        "{:?}",
        feats.get("futex_waits")
    );
    // ... and, where they run, from the scheduler's own switch program (one program per
    // context switch), not the contention object's fallback one.
    if regs {
        let hook = &feats["futex_waits"].1;
        assert!(hook.contains("the scheduler's program"), "{hook}");
    }
    let problems: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    assert!(
        !problems
            .iter()
            .any(|p| p.contains("unexpected") || p.contains("verifier rejected")),
        "a failure nobody foresaw: {problems:#?}"
    );
}
