//! Stacks whose bucket in their stack map holds another stack. The kernel refuses such a
//! stack (it would have to rename the entries that hold the bucket's id), and before the
//! spill maps every wait of that call path was named `?` for as long as the other stack
//! lived: CI once saw 24,211 of 212,851 mutex-storm waits so. Needs root.

mod common;

use common::locks::*;
use common::stream::*;
use common::*;
use serde_json::Value;

fn fill<'a>(f: &'a Value, map: &str) -> &'a Value {
    f["stack_maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["map"] == map)
        .unwrap_or_else(|| panic!("no {map} fill in the frame"))
}

/// With the kernel-lock stack map shrunk to one bucket (TTOP_STACK_MAPS=1) and every
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
        &[("TTOP_LOCK_STACK_CACHE", "off"), ("TTOP_STACK_MAPS", "1")],
        &[("TTOP_LOCK_STACK_CACHE", "off")],
    );
    if !kernel_locks_measured(&ft) || !kernel_locks_measured(&fr) {
        return;
    }
    // kstacks holds one stack; the spill map's 1,024 are counted with it.
    assert_eq!(u(&fill(&ft[0], "kstacks")["capacity"]), 1 + 1024);
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

/// Thread churn (seed 000) with the stack cache on and off: each new thread's kernel
/// stack holds other stale words, and many of its lock waits come a few frames below
/// the top of that stack (madvise and exit_mm from their system calls), where the key
/// is read from what there is up to the top, ending at the system call entry. The
/// callers named must agree with a walk of every event, as under the mutex storm.
#[test]
fn kernel_lock_stack_cache_names_churns_callers() {
    if !require_root("kernel_lock_stack_cache_names_churns_callers") {
        return;
    }
    let _g = kernel_lock();
    let (pid, fw, fc) = seen_twice(
        &[("TTOP_LOCK_STACK_CACHE", "off")],
        &[],
        &["--bpf-budget", "off"],
        ("bench_churn", &["4", "8", "20"]),
    );
    if !kernel_locks_measured(&fc) || !kernel_locks_measured(&fw) {
        return;
    }
    let (cached, walked) = (stacks_sum(&fc, "cached"), stacks_sum(&fc, "walked"));
    let caller = |r: &Value| r["caller"].as_str().unwrap_or("").to_string();
    let a = lock_waits_by(&fw, pid, caller);
    let b = lock_waits_by(&fc, pid, caller);
    eprintln!("with the cache: {cached} cached, {walked} walked\nwalked: {a:?}\ncached: {b:?}");
    assert!(
        cached > walked,
        "the cache answered too little under churn: {cached} cached, {walked} walked"
    );
    callers_agree((&a, &fw), (&b, &fc));
}

/// The futex waiter stacks: with the user-stack map shrunk to one bucket
/// (TTOP_STACK_MAPS=1), 8 pairs of threads ping-pong on 8 words, each pair from a
/// function of its own (manystacks' site0 ... site7, after one wait of its filler): at
/// most one of those stacks fits the map, the rest must spill and still be named through
/// their function. Two spilled stacks sharing a spill bucket (1,024 buckets, about ten
/// stacks: a few % of runs) cost a word its stack, counted as a stack lost; so 6 of the
/// 8 must be named, where a one-bucket map alone names one.
#[test]
fn futex_stacks_sharing_a_bucket_are_still_named() {
    if !require_root("futex_stacks_sharing_a_bucket_are_still_named") {
        return;
    }
    let _g = kernel_lock();
    let ttop = Stream::start_env(&["--json", "-d", "1"], &[("TTOP_STACK_MAPS", "1")]);
    let mut w = spawn_workload("manystacks", &["0", "0", "4"]);
    let (head, out) = first_line(&mut w);
    assert!(
        wait_timeout(&mut w, std::time::Duration::from_secs(30)),
        "manystacks hung"
    );
    let kv = rest(out);
    let frames = ttop.stop_after(1);
    let pid = num(&head, "pid") as u64;
    assert_eq!(u(&fill(&frames[0], "ustacks")["capacity"]), 1 + 1024);
    let sites: Vec<u64> = (0..8)
        .map(|i| u64::from_str_radix(kv[&format!("site{i}")].trim_start_matches("0x"), 16).unwrap())
        .collect();
    let mut named = vec![false; sites.len()];
    // What each site word's rows held (for a failure's message): rows, and the stacks
    // that did not name the site.
    let mut seen: Vec<(usize, Vec<String>)> = vec![(0, Vec::new()); sites.len()];
    for r in frames.iter().flat_map(|f| f["futexes"].as_array().unwrap()) {
        if u(&r["pid"]) != pid {
            continue;
        }
        if let Some(i) = sites.iter().position(|&a| a == u(&r["uaddr"])) {
            let stack = watch::names(r).join(" < ");
            let hit = stack.contains(&format!("site{i}+"));
            named[i] |= hit;
            seen[i].0 += 1;
            if !hit && seen[i].1.len() < 2 {
                seen[i]
                    .1
                    .push(format!("{} waits: [{stack}]", u(&r["contended"])));
            }
        }
    }
    let shed: Vec<String> = frames
        .iter()
        .map(|f| f["self"]["shed"].to_string())
        .collect();
    let futex_rows: usize = frames
        .iter()
        .map(|f| f["futexes"].as_array().unwrap().len())
        .sum();
    let lost: u64 = frames
        .iter()
        .map(|f| u(&f["contention_drops"]["stacks"]))
        .sum();
    eprintln!("site words named through their function: {named:?}; stacks lost {lost}");
    let n = named.iter().filter(|&&x| x).count();
    assert!(
        n >= 6,
        "{n} of 8 site words named from a one-bucket map: {named:?}; per word (rows, \
         unnamed stacks) {seen:?}; futex rows in all {futex_rows}; shed {shed:?}"
    );
    assert!(n == 8 || lost > 0, "a word unnamed, no stack counted lost");
}
