//! A row of the process table: a process, or one of its threads (the tree with `H`).
//! Its own module so that the sort, the tree and the thread rows share it without
//! importing one another in a circle.

use crate::model::frame::{ProcFrame, ThreadFrame};

/// A row of the process table: a process, or one of its threads (the tree with `H`).
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    Proc(&'a ProcFrame),
    Thread(&'a ThreadFrame),
}

impl<'a> Row<'a> {
    /// What the selection holds: the PID, or the thread's TID (one number space).
    pub fn id(&self) -> u32 {
        match self {
            Row::Proc(p) => p.pid,
            Row::Thread(t) => t.tid,
        }
    }

    /// The process row, None for a thread.
    pub fn proc(&self) -> Option<&'a ProcFrame> {
        match self {
            Row::Proc(p) => Some(p),
            Row::Thread(_) => None,
        }
    }
}
