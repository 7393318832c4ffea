//! Kernel-lock stacks whose bucket in the stack map holds another stack. The kernel
//! refuses such a stack (it would have to rename the entries that hold the bucket's id),
//! and before the spill map every wait of that call path was named `?` for as long as
//! the other stack lived: CI once saw 24,211 of 212,851 mutex-storm waits so. Needs root.

mod common;

use common::locks::*;
use common::stream::*;
use common::*;
use serde_json::Value;

fn kstacks_fill(f: &Value) -> &Value {
    f["stack_maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["map"] == "kstacks")
        .expect("no kstacks fill in the frame")
}

/// With the kernel-lock stack map shrunk to one bucket (TTOP_KSTACKS=1) and every
/// contention walked, every call path but the first shares that bucket: they must go to
/// the spill map and be named as a ttop with room names them. Both ttops walk every
/// contention, so the only differences allowed are the few waits each one's own
/// programs cause or miss, and the waits a run counted as stacks lost (two spilled
/// paths sharing a spill bucket: 1,024 buckets, a few dozen paths).
#[test]
fn kernel_lock_stacks_sharing_a_bucket_are_still_named() {
    if !require_root("kernel_lock_stacks_sharing_a_bucket_are_still_named") {
        return;
    }
    let _g = kernel_lock();
    let (pid, ft, fr) = storm_seen_twice(
        &[("TTOP_LOCK_STACK_CACHE", "off"), ("TTOP_KSTACKS", "1")],
        &[("TTOP_LOCK_STACK_CACHE", "off")],
    );
    if !kernel_locks_measured(&ft) || !kernel_locks_measured(&fr) {
        return;
    }
    // kstacks holds one stack; the spill map's 1,024 are counted with it.
    assert_eq!(u(&kstacks_fill(&ft[0])["capacity"]), 1 + 1024);
    let spilled = stacks_sum(&ft, "spilled");
    let caller = |r: &Value| r["caller"].as_str().unwrap_or("").to_string();
    let a = lock_waits_by(&ft, pid, caller);
    let b = lock_waits_by(&fr, pid, caller);
    eprintln!("{spilled} spilled\none bucket: {a:?}\nroomy: {b:?}");
    assert!(spilled > 0, "nothing spilled from a one-bucket map");
    let named: Vec<&String> = a.keys().filter(|c| *c != "?").collect();
    // The storm's futex hash-bucket waits come from at least two call sites (wake and
    // wait): a one-bucket map alone could name one.
    assert!(
        named.len() >= 2,
        "only {named:?} named from a one-bucket map: the spill map's stacks were not read"
    );
    callers_agree((&a, &ft), (&b, &fr));
}
