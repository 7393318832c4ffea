//! Collectors own the kernel: eBPF programs and the /proc scan. They produce Samples.
//!
//! One folder per capability, each with a small facade: `procfs` (the top view), `sched`
//! (the scheduler's truth), `contention` (futexes, kernel locks, mmap_lock), `irq` (IPIs
//! and TLB shootdowns), `profile` (stack profiles), `stacks` (naming them), and `bpf`
//! (the plumbing they share). `collector` runs them all once per tick.

pub mod bpf;
pub mod cgroup;
pub mod collector;
pub mod config;
pub mod contention;
pub mod filter;
pub mod futex_share;
pub mod irq;
pub mod overrides;
pub mod own;
pub mod procfs;
pub mod profile;
pub mod sched;
pub mod stacks;
pub mod thread;

pub use collector::{Collector, system_info};
pub use config::{Config, FutexChoice};
pub use thread::{Request, raise_priority, spawn, spawn_with_requests};
