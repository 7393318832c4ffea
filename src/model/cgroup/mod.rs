//! Containers and services by cgroup v2: what the cgroup collector read (`sample`), the
//! readable names (`name`) and the per-interval figures (`frame`).

#[cfg(any(test, feature = "fixtures"))]
mod fixtures;
mod frame;
mod name;
mod sample;

#[cfg(any(test, feature = "fixtures"))]
pub use fixtures::*;
pub use frame::*;
pub use name::readable;
pub use sample::*;
