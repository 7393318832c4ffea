//! Why threads that should run do not (bpf/contention.bpf.c): futex waits (from the
//! scheduler, or every call), kernel-lock contention and mmap_lock waits, with the
//! waiters' stacks.

mod collector;

pub use collector::{ContentionCollector, FutexHooks};
