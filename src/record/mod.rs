//! Recording files: writing, reading, indexing and rotating them. A recording stores
//! Samples (never Frames or screens), so a replay derives its Frames with the same
//! `derive` as the live screen did; playing one back (position, speed, go-to) is the
//! app's `player`, which reads through `Series`.
//!
//! Layout (details in `format`): a versioned file header with the recorded machine's
//! SystemInfo, then one checksummed, length-prefixed record per Sample, each handed to
//! the kernel as soon as it is made, and on a clean close an index record and a footer.
//! Samples are serialised JSON compressed with zstd; every KEYFRAME_EVERY-th stands
//! alone, the others are compressed against the previous Sample's bytes.

pub mod codec;
pub mod continuous;
pub mod dump;
pub mod format;
pub mod headless;
pub mod index;
pub mod live;
pub mod reader;
pub mod rotate;
pub mod series;
pub mod writer;

pub use reader::Reader;
pub use series::Series;
pub use writer::Writer;

#[cfg(test)]
mod tests;
