//! Futexes, kernel locks and the mmap_lock: what the contention collector samples
//! (`sample`, cumulative) and their per-interval Frame rows (`frame`, `mmap`).

pub mod frame;
mod sample;

pub use sample::*;
