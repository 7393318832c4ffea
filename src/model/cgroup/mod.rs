//! Containers and services by cgroup v2: what the cgroup collector read (`sample`), the
//! readable names (`name`) and the per-interval figures (`frame`).

mod fixtures;
mod frame;
mod name;
mod sample;

pub use fixtures::*;
pub use frame::*;
pub use name::readable;
pub use sample::*;

#[cfg(test)]
mod frame_tests;
