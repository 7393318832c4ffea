//! The eBPF plumbing every collector shares: libbpf's log and errors in words a person
//! can act on, loading an object while leaving out what this kernel cannot take
//! (`common::load_degrading`, from the kernel's own answers in `kernel`), reading maps
//! cheaply (`map_read`), tracefs, perf events, and detaching without waiting at exit.

pub mod common;
pub mod detach;
pub mod kernel;
pub mod map_read;
pub mod perf_event;
pub mod stats;
pub mod tracefs;
