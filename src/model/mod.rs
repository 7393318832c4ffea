//! Data model: raw Samples (what a tick collected) and Frames (what the screen shows).

pub mod contention;
pub mod contention_frame;
pub mod derive;
pub mod features;
pub mod findings;
pub mod findings_evidence;
#[cfg(test)]
mod findings_evidence_tests;
pub mod findings_rules;
#[cfg(test)]
mod findings_tests;
pub mod fixtures;
pub mod flame;
pub mod frame;
pub mod ghosts;
pub mod irq;
pub mod join;
pub mod latency;
pub mod name;
pub mod opt;
pub mod prev_tasks;
pub mod proc_rows;
pub mod proc_totals;
pub mod profile;
pub mod sample;
pub mod scope;
pub mod thread_rows;
pub mod top_view;

pub use derive::derive;
pub use frame::Frame;
pub use sample::Sample;
