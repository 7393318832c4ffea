//! The scheduler's truth (bpf/sched.bpf.c): run queues integrated over time, on-CPU time,
//! thread churn and ghost threads, run-queue wait and latency; and which threads the
//! /proc scan must read again (`dirty`).

mod collector;
pub mod dirty;

pub use collector::SchedCollector;
