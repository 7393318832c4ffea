//! The process table's rows: which processes it shows (the filter text, hidden exited
//! and kernel rows), in which order (sort, tree, threads under their process), and the
//! selection among them.

use super::App;
use crate::app::row::Row;
use crate::app::sort::{ProcWindow, proc_window, sorted_procs};
use crate::app::thread_rows::threads_of;
use crate::app::tree::{tree_order, tree_window};
use crate::model::Frame;
use crate::model::frame::ProcFrame;

impl App {
    /// The text rows are narrowed by (the prompt while typing, else the filter in force).
    pub fn narrow_text(&self) -> Option<&str> {
        self.prompt
            .as_deref()
            .or(self.filter_text.as_deref())
            .filter(|t| !t.is_empty())
    }

    /// Whether a row is in the process table: it matches the text narrowing it, and it
    /// is not a process that exited while those are hidden (x).
    pub fn shows(&self, p: &ProcFrame) -> bool {
        let hidden = (self.hide_exited && p.gone) || (self.hide_kernel && p.is_kernel_thread());
        !hidden && self.narrow_text().is_none_or(|t| matches_text(p, t))
    }

    /// Rows of the process table in display order, narrowed by the filter text (the
    /// processes only: thread rows of the tree are not in it).
    pub fn visible_procs<'a>(&self, f: &'a Frame) -> Vec<&'a ProcFrame> {
        if self.tree {
            return (self.tree_rows(f).into_iter())
                .filter_map(|(r, _)| r.proc())
                .collect();
        }
        let mut rows = sorted_procs(f, self.proc_sort, self.proc_reverse);
        rows.retain(|p| self.shows(p));
        rows
    }

    /// The tree's rows with their branches: the processes shown, with their threads
    /// under them when those are shown (H).
    fn tree_rows<'a>(&self, f: &'a Frame) -> Vec<(Row<'a>, String)> {
        let mut rows = sorted_procs(f, self.proc_sort, self.proc_reverse);
        rows.retain(|p| self.shows(p));
        let threads = (self.show_threads).then(|| threads_of(f, self.proc_sort, self.proc_reverse));
        tree_order(&rows, threads.as_ref())
    }

    /// What a process table `height` rows tall shows of `f` (see `sort::proc_window`):
    /// the same rows as `rows` around the selection, without sorting them all,
    /// starting where the last render's did as far as the selection allows.
    pub fn proc_window<'a>(&self, f: &'a Frame, height: usize) -> ProcWindow<'a> {
        let at = (
            self.selected_pid,
            (self.proc_table.as_ref())
                .filter(|t| t.kind == crate::app::mouse::TableKind::Procs)
                .map_or(0, |t| t.first),
        );
        if self.tree {
            return tree_window(self.tree_rows(f), at, height);
        }
        proc_window(
            f,
            self.proc_sort,
            self.proc_reverse,
            |p| self.shows(p),
            at,
            height,
        )
    }

    /// The process table's rows in display order: PIDs, and TIDs of the tree's thread
    /// rows (H).
    pub(in crate::app) fn rows(&self) -> Vec<u32> {
        let Some(f) = self.frame.as_ref() else {
            return Vec::new();
        };
        if self.tree {
            return self.tree_rows(f).iter().map(|(r, _)| r.id()).collect();
        }
        self.visible_procs(f).iter().map(|p| p.pid).collect()
    }

    /// The process of the selected row: its own PID, or for a thread row (H) the
    /// process the thread belongs to. None when the table is empty.
    pub(in crate::app) fn selected_process(&self) -> Option<u32> {
        let rows = self.rows();
        let id = *rows.get(self.selected_index(&rows))?;
        let Some(f) = self.frame.as_ref() else {
            return Some(id);
        };
        if !self.show_threads || f.procs.iter().any(|p| p.pid == id) {
            return Some(id);
        }
        Some(f.threads.iter().find(|t| t.tid == id).map_or(id, |t| t.pid))
    }

    /// Index of the selected row in display order.
    pub fn selected_index(&self, rows: &[u32]) -> usize {
        self.selected_pid
            .and_then(|p| rows.iter().position(|&r| r == p))
            .unwrap_or(0)
    }

    pub(super) fn move_selection(&mut self, to: impl Fn(usize, usize) -> usize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let i = to(self.selected_index(&rows), rows.len()).min(rows.len() - 1);
        self.selected_pid = Some(rows[i]);
    }
}

/// Does a row match typed text: a PID prefix, or a substring of its name or command.
pub fn matches_text(p: &ProcFrame, text: &str) -> bool {
    let t = text.to_lowercase();
    p.pid.to_string().starts_with(&t)
        || p.comm.to_lowercase().contains(&t)
        || p.cmdline.to_lowercase().contains(&t)
}
