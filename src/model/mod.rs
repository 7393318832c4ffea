//! Data model: raw Samples (what a tick collected) and Frames (what the screen shows).

pub mod derive;
pub mod frame;
pub mod sample;

pub use derive::derive;
pub use frame::Frame;
pub use sample::Sample;
