//! Futexes, kernel locks and the mmap_lock: what the contention collector samples
//! (`sample`, cumulative) and their per-interval Frame rows (`frame`, `mmap`).

#[cfg(any(test, feature = "fixtures"))]
mod fixtures;
pub mod frame;
pub mod lock_types;
mod sample;

#[cfg(any(test, feature = "fixtures"))]
pub use fixtures::*;
pub use sample::*;
