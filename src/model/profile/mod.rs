//! Stack profiles: the samples a Sample carries (`sample`) and the flame tree a view
//! draws from a window of them (`flame`).

pub mod flame;
pub mod pprof;
mod sample;

pub use sample::*;
