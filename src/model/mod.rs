//! Data model: raw Samples (what a tick collected) and Frames (what the screen shows).

pub mod canon;
pub mod cgroup;
pub mod contention;
pub mod derive;
#[cfg(test)]
mod derive_cgroup_tests;
pub mod features;
pub mod findings;
/// Deterministic Samples for tests and benchmarks: not in the shipped library (the
/// `fixtures` feature, on for tests, benches and examples through the dev-dependency).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures_everyday;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures_latency;
pub mod frame;
pub mod irq;
pub mod join;
pub mod latency;
pub mod name;
pub mod opt;
pub mod own;
pub mod procs;
pub mod profile;
pub mod rates;
pub mod sample;
pub mod scope;
pub mod shed;

pub use derive::derive;
pub use frame::Frame;
pub use sample::Sample;
