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
    let out = Command::new(ttop_bin())
        .arg("profile")
        .args(args)
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
