//! Futexes, kernel locks and the mmap_lock: what the contention collector samples
//! (`sample`, cumulative) and their per-interval Frame rows (`frame`, `mmap`).

pub mod frame;
pub mod lock_types;
mod sample;

pub use sample::*;
