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

/// A frame's source line as a Sample keeps it (`ProfileStack::lines`, one per frame
/// of the stack's `frames`, in their order), so that a recording or a live view can
/// write pprof with lines: the folded names alone lose them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FrameLine {
    /// The source file; "" when unknown (kernel frames, unnamed frames, no DWARF).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// 0 when unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub line: u32,
    /// Inlined into the frame before it (its caller): the two are one address, one
    /// pprof Location.
    #[serde(default, skip_serializing_if = "is_false")]
    pub inlined: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The lines of a stack's locations (outermost first), frame for frame as its folded
/// names list them: each location's functions outermost first.
pub fn frame_lines(locations: &[Location]) -> Vec<FrameLine> {
    let mut out = Vec::new();
    for l in locations {
        for (i, f) in l.iter().rev().enumerate() {
            out.push(FrameLine {
                file: f.file.clone(),
                line: f.line,
                inlined: i > 0,
            });
        }
    }
    out
}

/// The locations `frame_lines` was made from, given the frames' names; None when the
/// two do not pair (a stack kept without lines).
pub fn locations_of(frames: &[String], lines: &[FrameLine]) -> Option<Vec<Location>> {
    if frames.is_empty() || frames.len() != lines.len() || lines[0].inlined {
        return None;
    }
    let mut out: Vec<Location> = Vec::new();
    let mut cur: Vec<SrcFrame> = Vec::new();
    for (name, l) in frames.iter().zip(lines) {
        if !l.inlined && !cur.is_empty() {
            cur.reverse(); // a Location is innermost first
            out.push(std::mem::take(&mut cur).into());
        }
        cur.push(SrcFrame {
            name: name.clone(),
            file: l.file.clone(),
            line: l.line,
        });
    }
    cur.reverse();
    out.push(cur.into());
    Some(out)
}
