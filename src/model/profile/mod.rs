//! Stack profiles: the samples a Sample carries (`sample`), the flame tree a view
//! draws from a window of them (`flame`), and the same samples with source lines
//! (`located`) for the pprof writer (`pprof`).

pub mod flame;
mod located;
pub mod pprof;
#[cfg(test)]
mod pprof_tests;
mod sample;

pub use located::*;
pub use sample::*;
