//! The top view: /proc read as `top -H` reads it (the same files, in the same order, at
//! top's pace, with procps's rule for a thread gone at its turn), cheaply (kept
//! descriptors, nothing re-read that eBPF says has not changed), and never the files that
//! take a process's mmap_lock.

pub mod cgroup_of;
pub mod files;
pub mod scan;
pub mod system;
pub mod top_pace;

pub use scan::{ProcScanner, SystemFiles, procs_running, read_system};
