//! `ttop profile` run on real files: the folded stacks and the profile carried in live
//! frames, shared by the on-CPU and off-CPU profile tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// A file in this test run's profile directory.
pub fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run `ttop profile ARGS`; returns (folded lines as (stack, count), stderr).
pub fn profile(args: &[&str]) -> (Vec<(String, u64)>, String) {
    profile_env(args, &[])
}

/// `profile` with these environment variables set.
pub fn profile_env(args: &[&str], env: &[(&str, &str)]) -> (Vec<(String, u64)>, String) {
    let out = Command::new(ttop_bin())
        .arg("profile")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run ttop profile");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ttop profile {args:?}: {err}");
    (parse_folded(&String::from_utf8_lossy(&out.stdout)), err)
}

pub fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .map(|l| {
            let (stack, n) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no count: {l:?}"));
            (
                stack.to_string(),
                n.parse().unwrap_or_else(|_| panic!("bad count: {l:?}")),
            )
        })
        .collect()
}

/// From `ttop profile --off-cpu`'s summary line: (waits kept, waits seen) when it kept
/// one in N, None when it kept every one.
pub fn waits_kept(stderr: &str) -> Option<(u64, u64)> {
    // "..., 6023 of 46929 waits kept their stack (1 in 8; ...)"
    let head = stderr.split_once(" waits kept their stack (1 in")?.0;
    let (kept, seen) = head.rsplit_once(", ")?.1.split_once(" of ")?;
    Some((kept.parse().ok()?, seen.parse().ok()?))
}

/// From the same line: the records lost to a full ring buffer (0 when none was).
pub fn ring_lost(stderr: &str) -> u64 {
    stderr
        .split_once("(lost: ")
        .and_then(|(_, r)| r.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// From `ttop profile`'s summary line ("... distinct stacks over 3.0 s (counts ..." or
/// "... over 6.1 s at 99 Hz"): the seconds the profile covers.
pub fn summary_window(stderr: &str) -> f64 {
    stderr
        .split_once(" distinct stacks over ")
        .and_then(|(_, rest)| rest.split_once(" s")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no window in the summary: {stderr}"))
}

/// How far a share `p` measured from `n` independent samples may fall from the truth
/// by chance: four standard deviations of the binomial (1 run in 16,000 beyond it),
/// plus one point for what is not chance (a unit cut short at the window's ends).
pub fn share_band(n: u64, p: f64) -> f64 {
    4.0 * (p * (1.0 - p) / n.max(1) as f64).sqrt() + 0.01
}
