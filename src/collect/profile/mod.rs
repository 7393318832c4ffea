//! On-CPU and off-CPU stack profiles (bpf/profile.bpf.c): the profiler and the thread
//! that drains it beside the collector.

mod offcpu;
mod profiler;
pub mod runner;

pub use profiler::*;
