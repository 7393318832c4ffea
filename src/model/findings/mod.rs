//! Findings: the seeds' patterns named when they happen, from the last few Frames. The
//! rules (`rules`, thresholds with their reasons), the evidence they cite (`evidence`),
//! the window that holds a condition for a few intervals before it shows (`window`), and
//! the view that shows each finding's evidence (`view`).
//! Pure: unit-tested on fixture Frames.

pub mod cgroup;
pub mod evidence;
pub mod rules;
mod view;
mod window;

pub use view::FindingView;
pub use window::*;

#[cfg(test)]
mod cgroup_tests;
#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod tests;
