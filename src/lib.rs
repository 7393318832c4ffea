//! ttop: a terminal system monitor that puts what the kernel really does (eBPF) beside
//! what a /proc scan sees (the view `top` has), and shows where the scan is wrong.
//!
//! Pipeline: `collect` produces raw cumulative [`model::Sample`]s; [`model::derive`]
//! turns (sample, previous sample) into a [`model::Frame`]; `ui` renders a Frame
//! purely. Recording stores Samples; replay is another source of Samples.

pub mod app;
pub mod cli;
pub mod collect;
pub mod model;
pub mod probe_cmd;
pub mod profile_cmd;
pub mod record;
pub mod serve;
pub mod stop;
pub mod ui;
pub mod util;

#[cfg(test)]
mod field_table_tests;
