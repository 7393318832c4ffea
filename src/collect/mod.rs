//! Collectors own the kernel: eBPF programs and the /proc scan. They produce Samples.

pub mod bpf_common;
pub mod collector;
pub mod contention;
pub mod detach;
pub mod dirty;
pub mod file_names;
pub mod filter;
pub mod irq;
pub mod kallsyms;
pub mod kernel;
pub mod ksym_prog;
pub mod lock_fns;
pub mod map_read;
pub mod perf_event;
pub mod proc_files;
pub mod proc_scan;
pub mod proc_system;
pub mod profile;
pub mod profile_runner;
pub mod sched;
pub mod symbols;
pub mod top_pace;
pub mod tracefs;
pub mod unwind;
pub mod vma;

pub use collector::{Collector, Config};
