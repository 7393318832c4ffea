//! `ttop profile`'s on-CPU shares.

use std::collections::HashMap;

use super::super::common::watch::pid_of;
use super::super::common::*;
use super::in_vm;

/// Two functions that burn CPU 3:1 get 75% and 25% of the profile's samples (±5).
#[test]
fn profile_shares_come_out_3_to_1() {
    if !require_root("profile_shares_come_out_3_to_1") {
        return;
    }
    let _g = kernel_lock();
    let secs = if in_vm() { 8 } else { 4 };
    let mut w = spawn_workload("burn31", &["1", &(secs + 4).to_string()]);
    let pid = pid_of(&mut w);
    let out = std::process::Command::new(ttop_bin())
        .args([
            "profile",
            "-p",
            &pid.to_string(),
            "--duration",
            &secs.to_string(),
        ])
        .output()
        .expect("run ttop profile");
    let _ = w.kill();
    let _ = w.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ttop profile: {err}");
    let mut leaf: HashMap<String, u64> = HashMap::new();
    let mut total = 0;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        total += n;
        *leaf
            .entry(stack.rsplit(';').next().unwrap().to_string())
            .or_default() += n;
    }
    let share = |k: &str| 100.0 * *leaf.get(k).unwrap_or(&0) as f64 / total.max(1) as f64;
    eprintln!(
        "burn_a {:.1}%, burn_b {:.1}% of {total} samples",
        share("burn_a"),
        share("burn_b")
    );
    assert!(total >= 100, "{total} samples");
    assert!(
        (share("burn_a") - 75.0).abs() <= 5.0,
        "burn_a {:.1}",
        share("burn_a")
    );
    assert!(
        (share("burn_b") - 25.0).abs() <= 5.0,
        "burn_b {:.1}",
        share("burn_b")
    );
}
