//! Findings: the seeds' patterns named when they happen, from the last few Frames. The
//! rules (`rules`, thresholds with their reasons), the evidence they cite (`evidence`),
//! and the window that holds a condition for a few intervals before it shows (`window`).
//! Pure: unit-tested on fixture Frames.

pub mod evidence;
pub mod rules;
mod window;

pub use window::*;

#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod tests;
