//! Stacks with their source files and lines, for the pprof writer (`pprof.rs`): the same
//! samples as the folded stacks (`sample.rs`), kept beside them only when asked
//! (`ttop profile --pprof`), since the folded lines, flame graphs and recordings hold
//! names only.
//!
//! A frame here is one address's functions (a pprof Location), innermost inlined call
//! first, each function with its file and the line within it. Kernel frames, unnamed
//! frames and the process, thread and off-CPU reason frames have a name only.

use std::sync::Arc;

/// One function at one source line (a pprof Line of a Location).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcFrame {
    pub name: String,
    /// The source file as the binary's DWARF names it; "" when unknown.
    pub file: String,
    /// The line within `name`; 0 when unknown.
    pub line: u32,
}

impl SrcFrame {
    /// A frame known by its name only.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            file: String::new(),
            line: 0,
        }
    }
}

/// The functions at one address, innermost inlined call first (a pprof Location).
pub type Location = Arc<[SrcFrame]>;

/// A Location with a name only.
pub fn named(name: impl Into<String>) -> Location {
    Arc::new([SrcFrame::named(name)])
}

/// One distinct stack with its lines: the folded `StackKey` it goes with, frame for
/// frame (each location's functions, outermost first, are the key's frames).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocatedStack {
    pub pid: u32,
    pub process: String,
    /// The thread's own name (comm).
    pub thread: String,
    /// Outermost first.
    pub locations: Vec<Location>,
}

/// A located stack ready for pprof: its locations outermost first, the process and
/// thread-group frames of the folded line at the root, and its count.
pub type PprofStack = (Vec<Location>, u64);
