//! The process tree (`t`, F5, as htop's): each process under its parent, siblings in
//! the table's sort order, with the branches drawn before the command. A process whose
//! parent is not shown (filtered out, hidden, or outside the scan) is a root. With `H`,
//! each process's threads (all but its main thread, whose row is the process's) come
//! first under it, in the same order, then its child processes.

use std::collections::{HashMap, HashSet};

use super::row::Row;
use super::sort::ProcWindow;
use super::thread_rows::ThreadsOf;
use crate::model::frame::ProcFrame;

/// `rows` (already sorted and narrowed) in tree order, each with its branch prefix
/// ("" for a root, then "├─ ", "│  └─ " ...); under each process its threads in
/// `threads` (None: threads not shown).
pub fn tree_order<'a>(
    rows: &[&'a ProcFrame],
    threads: Option<&ThreadsOf<'a>>,
) -> Vec<(Row<'a>, String)> {
    let shown: HashSet<u32> = rows.iter().map(|p| p.pid).collect();
    let is_root = |p: &ProcFrame| p.ppid == p.pid || !shown.contains(&p.ppid);
    let mut children: HashMap<u32, Vec<Row<'a>>> = HashMap::new();
    for p in rows.iter().filter(|p| !is_root(p)) {
        children.entry(p.ppid).or_default().push(Row::Proc(p));
    }
    let mut out = Vec::with_capacity(rows.len());
    // Depth first, without recursion: (row, the prefix of its children's lines, the
    // prefix of its own line).
    let mut stack: Vec<(Row<'a>, String, String)> = rows
        .iter()
        .rev()
        .filter(|p| is_root(p))
        .map(|p| (Row::Proc(p), String::new(), String::new()))
        .collect();
    let mut done: HashSet<u32> = HashSet::with_capacity(rows.len());
    let none = Vec::new();
    while let Some((r, indent, line)) = stack.pop() {
        let Row::Proc(p) = r else {
            out.push((r, line));
            continue;
        };
        // A pid listed twice (a gone row and a new one) is drawn once under its parent.
        if !done.insert(p.pid) {
            continue;
        }
        out.push((r, line));
        // A gone process has no thread rows (the scan did not read it).
        let own = match threads {
            Some(t) if !p.gone => t.get(&p.pid).unwrap_or(&none),
            _ => &none,
        };
        let procs = children.get(&p.pid).map_or(&[][..], Vec::as_slice);
        let kids: Vec<Row<'a>> = (own.iter().map(|t| Row::Thread(t)))
            .chain(procs.iter().copied())
            .collect();
        for (i, c) in kids.iter().enumerate().rev() {
            let last = i + 1 == kids.len();
            let line = format!("{indent}{}", if last { "└─ " } else { "├─ " });
            let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
            stack.push((*c, deeper, line));
        }
    }
    out
}

/// What a table `height` rows tall shows of the tree around the selected row (`sel`,
/// a PID or a TID): the selection is the last row on screen once it is past the first
/// screenful, as in the flat table.
pub fn tree_window<'a>(
    order: Vec<(Row<'a>, String)>,
    (sel, top): (Option<u32>, usize),
    height: usize,
) -> ProcWindow<'a> {
    let total = order.len();
    let threads = order
        .iter()
        .filter(|(r, _)| matches!(r, Row::Thread(_)))
        .count();
    let selected = sel
        .and_then(|s| order.iter().position(|(r, _)| r.id() == s))
        .unwrap_or(0);
    let first = crate::app::sort::window_first(selected, top, height, total);
    let worst = (order.iter().filter_map(|(r, _)| r.proc()))
        .map(ProcFrame::miss)
        .fold(0.0, f64::max);
    let (rows, prefix) = order.into_iter().skip(first).take(height).unzip();
    ProcWindow {
        rows,
        first,
        selected,
        total,
        threads,
        worst,
        prefix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::frame::ThreadFrame;

    fn row(pid: u32, ppid: u32) -> ProcFrame {
        ProcFrame {
            pid,
            ppid,
            ..Default::default()
        }
    }

    #[test]
    fn children_follow_their_parent_with_branches_in_sort_order() {
        // Sorted by something else: a child may come before its parent.
        let rows = [
            row(30, 10),
            row(1, 0),
            row(10, 1),
            row(20, 1),
            row(40, 10),
            row(99, 77),
        ];
        let refs: Vec<&ProcFrame> = rows.iter().collect();
        let got: Vec<(u32, String)> = tree_order(&refs, None)
            .into_iter()
            .map(|(r, s)| (r.id(), s))
            .collect();
        let want = [
            (1, ""),
            (10, "├─ "),
            (30, "│  ├─ "),
            (40, "│  └─ "),
            (20, "└─ "),
            (99, ""),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(p, s)| (*p, s.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_window_keeps_the_selection_on_screen() {
        let rows: Vec<ProcFrame> = (1..=10).map(|p| row(p, p - 1)).collect();
        let refs: Vec<&ProcFrame> = rows.iter().collect();
        let w = tree_window(tree_order(&refs, None), (Some(8), 0), 3);
        assert_eq!(w.rows.iter().map(Row::id).collect::<Vec<_>>(), [6, 7, 8]);
        assert_eq!((w.first, w.selected, w.total), (5, 7, 10));
        assert_eq!(w.prefix.len(), 3);
    }

    #[test]
    fn threads_come_first_under_their_process_then_its_children() {
        use crate::model::frame::Frame;
        let mut gone = row(50, 1);
        gone.gone = true;
        let rows = [row(1, 0), row(10, 1), row(20, 10), gone];
        let thread = |pid, tid| ThreadFrame {
            tid,
            pid,
            ..Default::default()
        };
        let f = Frame {
            // Main threads (tid = pid) are their process's row; a gone process's
            // threads (a stale tid) are not drawn.
            threads: [(1, 1), (10, 10), (10, 12), (10, 11), (20, 20), (20, 21)]
                .into_iter()
                .chain([(50, 51)])
                .map(|(p, t)| thread(p, t))
                .collect(),
            ..Default::default()
        };
        let by = crate::app::thread_rows::threads_of(&f, crate::app::sort::ProcSort::Pid, false);
        let refs: Vec<&ProcFrame> = rows.iter().collect();
        let got: Vec<(u32, bool, String)> = tree_order(&refs, Some(&by))
            .into_iter()
            .map(|(r, s)| (r.id(), r.proc().is_none(), s))
            .collect();
        let want = [
            (1, false, ""),
            (10, false, "├─ "),
            (11, true, "│  ├─ "),
            (12, true, "│  ├─ "),
            (20, false, "│  └─ "),
            (21, true, "│     └─ "),
            (50, false, "└─ "),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(p, t, s)| (*p, *t, s.to_string()))
                .collect::<Vec<_>>()
        );
        // The window counts thread rows apart and finds a selected thread by its TID.
        let w = tree_window(tree_order(&refs, Some(&by)), (Some(21), 0), 2);
        assert_eq!((w.total, w.threads, w.selected, w.first), (7, 3, 5, 4));
    }
}
