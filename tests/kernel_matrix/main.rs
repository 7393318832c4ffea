//! The kernel matrix: ttop's core kernel checks, on this machine's kernel and on the
//! kernels servers run (Debian's 5.10, 6.1 and 6.12, booted under QEMU by the `vm_*`
//! tests, which run this same binary's `checks::` inside the guest). Each check compares
//! ttop with an independent reference (the workload's own count, the kernel's counters,
//! tracefs) and knows what the kernel it runs on can measure, from tracefs and
//! /proc/kallsyms rather than from ttop: a figure measured through a fallback hook must
//! meet the same reference and tolerance as the modern hook, and a figure this kernel
//! cannot measure must be null with its reason, never 0.
//!
//! Under QEMU (TCG, several times slower than the host) only correctness is checked:
//! windows are longer where a check needs it and no speed is asserted. The guests run
//! side by side (each on one host thread), never beside a check on this machine. Needs
//! root; under CI=true a missing kernel or QEMU is a failure.
//!
//! The checks are in checks/, one file per subject; this file boots the guests.

#[path = "../common/mod.rs"]
mod common;

mod checks;

use std::time::Duration;

use common::*;

/// The subjects of the first of 6.12's two guests; its second runs every other
/// `checks::` (so a new subject cannot be left out). The guests run two at a time
/// (below), in libtest's order: 5.10 and 6.1 whole, side by side, then 6.12 in two
/// halves side by side, where it ran whole and alone with one CPU idle (2026-11-29, on
/// this machine: whole guests took 125-135 s; halves 77-91 s, a fresh guest's start-up
/// being paid twice, so splitting every kernel saved nothing).
const FIRST_HALF: [&str; 4] = [
    "checks::blocked::",
    "checks::contention::",
    "checks::probe::",
    "checks::profile::",
];

/// Boot `series` and run its `checks::` inside it, all (`part` 0) or one half (1: the
/// subjects of FIRST_HALF, 2: the others); print the guest's test log.
fn matrix(series: &'static str, part: u8) {
    let name = match part {
        0 => format!("vm_{series}"),
        _ => format!("vm_{series}_{part}"),
    };
    if !require_root(&name) {
        return;
    }
    // TTOP_VM_CHECKS=checks::split runs one subject in the guests (by hand): in the
    // first guest of each kernel.
    let by_hand = std::env::var("TTOP_VM_CHECKS").ok();
    if by_hand.is_some() && part > 1 {
        return;
    }
    // The guests run side by side, as many as libtest runs at once (one per CPU by
    // default): each is one host thread (single-threaded TCG) measuring its own kernel,
    // so two on two CPUs take the time of one; host checks still run alone. What they
    // share is made before the first boots, once: the workloads, built alone (the guest
    // could compile them, at a tenth of the speed). Taking kernel_lock() for that in each
    // guest would wait for the guest already running.
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let _alone = kernel_lock();
        for w in checks::WORKLOADS {
            workload(w);
        }
    });
    // One fetch at a time (tests/vm/fetch-kernels.sh fetches them all).
    static FETCH: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let k = {
        let _f = FETCH.lock().unwrap_or_else(|e| e.into_inner());
        vm::kernel(series)
    };
    let Some(k) = k else {
        return;
    };
    let _g = kernel_lock_shared();
    let exe = std::env::current_exe().unwrap();
    // The log goes to the guest's tmpfs and is copied out at the end (a 9p write must
    // not be what a check waits on); the console shows each check as it begins and ends
    // (its `ok` line), so a guest that hangs still says where and each check's time can
    // be read.
    let script = format!(
        "cd {dir}\nexport TTOP_VM={series} CI={ci} PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         {{ {exe} --test-threads=1 --nocapture {filter}; echo $? > /tmp/rc; }} 2>&1 \
         | tee /tmp/test.log | grep --line-buffered -E '^test |^(ok|FAILED)$|panicked|^test result' \
         | while IFS= read -r l; do read -r up _ < /proc/uptime; printf '[%s s] %s\\n' \"$up\" \"$l\"; done\n\
         cp /tmp/test.log /out/test.log\n( exit $(cat /tmp/rc) )",
        dir = env!("CARGO_MANIFEST_DIR"),
        ci = if is_ci() { "true" } else { "" },
        exe = exe.display(),
        filter = match (by_hand, part) {
            (Some(f), _) => f,
            (None, 0) => "checks::".into(),
            (None, 1) => FIRST_HALF.join(" "),
            (None, _) => format!("checks:: --skip {}", FIRST_HALF.join(" --skip ")),
        },
    );
    let b = vm::boot_in(&k, &name, &script, Duration::from_secs(420));
    let log = b.file("test.log");
    // The init's line once the guest is up, then each check's first line and its `ok`
    // on the console, with the guest's uptime when they were printed.
    let timed: Vec<&str> = b
        .console
        .lines()
        .map(str::trim_end)
        .filter(|l| {
            l.contains("ttop-vm: up")
                || l.contains(" s] test ")
                || l.ends_with(" s] ok")
                || l.ends_with(" s] FAILED")
        })
        .collect();
    eprintln!(
        "===== Linux {} ({name}) under QEMU, {:.0} s =====\n{log}\nboot, and each check's first line and end (guest uptime):\n{}",
        k.release,
        b.secs,
        timed.join("\n")
    );
    if b.rc != Some(0) {
        let tail: Vec<&str> = b.console.lines().rev().take(60).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        eprintln!("console:\n{}", tail.join("\n"));
    }
    assert_eq!(
        b.rc,
        Some(0),
        "the checks failed or never finished on Linux {} (log above)",
        k.release
    );
    assert!(
        log.contains("test result: ok") && !log.contains(" 0 passed"),
        "no check ran on Linux {}",
        k.release
    );
}

#[test]
fn vm_5_10() {
    matrix("5.10", 0);
}

#[test]
fn vm_6_1() {
    matrix("6.1", 0);
}

#[test]
fn vm_6_12_1() {
    matrix("6.12", 1);
}

#[test]
fn vm_6_12_2() {
    matrix("6.12", 2);
}
