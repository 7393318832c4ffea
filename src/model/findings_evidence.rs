//! Evidence a rule cites from the Frame's tables beyond its own trigger figures: which
//! futex word a churning process's threads queue on (seed 000). Pure, like the rules.

use super::contention_frame::FutexFrame;
use super::frame::Frame;

/// glibc's thread-stack functions that take its stack-cache lock (`stack_cache_lock`):
/// pthread_create's side (allocate_stack, get_cached_stack) and pthread_join's
/// (__nptl_deallocate_stack, __nptl_free_stacks). A churning process whose threads sleep
/// in a lock wait under one of them queues on that one lock (seed 000's picture).
pub const STACK_CACHE_FNS: &[&str] = &[
    "allocate_stack",
    "get_cached_stack",
    "__nptl_deallocate_stack",
    "__nptl_free_stacks",
];

/// The futex word of `pid` that its threads sleep on inside glibc's thread-stack code:
/// a lock-wait frame with a thread-stack function (STACK_CACHE_FNS) further out. The
/// most contended such word; None when no waiter stack was named that way (no debug
/// names for the C library, or no such waits).
pub fn stack_cache_word(fr: &Frame, pid: u32) -> Option<&FutexFrame> {
    let base = |f: &String| {
        let name = f.split(['+', ' ']).next().unwrap_or("");
        name.strip_prefix("__GI_").unwrap_or(name).to_string()
    };
    fr.contention
        .futexes
        .iter()
        .filter(|w| w.pid == pid && w.contended > 0)
        .filter(|w| {
            let names: Vec<String> = w.stack.iter().map(base).collect();
            names
                .iter()
                .position(|f| f.ends_with("lll_lock_wait_private") || f.ends_with("lll_lock_wait"))
                .is_some_and(|i| {
                    names[i + 1..]
                        .iter()
                        .any(|f| STACK_CACHE_FNS.contains(&f.as_str()))
                })
        })
        .max_by_key(|w| w.contended)
}
