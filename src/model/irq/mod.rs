//! Inter-processor interrupts and TLB shootdowns: what the irq collector samples
//! (`sample`), the kernel's /proc/interrupts reference, and their per-interval Frame form
//! (`frame`).

#[cfg(any(test, feature = "fixtures"))]
mod fixtures;
mod frame;
mod sample;

#[cfg(any(test, feature = "fixtures"))]
pub use fixtures::*;
pub use frame::*;
pub use sample::*;
