//! The process tree (`t`, F5, as htop's): each process under its parent, siblings in
//! the table's sort order, with the branches drawn before the command. A process whose
//! parent is not shown (filtered out, hidden, or outside the scan) is a root.

use std::collections::{HashMap, HashSet};

use super::sort::ProcWindow;
use crate::model::frame::ProcFrame;

/// `rows` (already sorted and narrowed) in tree order, each with its branch prefix
/// ("" for a root, then "├─ ", "│  └─ " ...).
pub fn tree_order<'a>(rows: &[&'a ProcFrame]) -> Vec<(&'a ProcFrame, String)> {
    let shown: HashSet<u32> = rows.iter().map(|p| p.pid).collect();
    let is_root = |p: &ProcFrame| p.ppid == p.pid || !shown.contains(&p.ppid);
    let mut children: HashMap<u32, Vec<&'a ProcFrame>> = HashMap::new();
    for p in rows.iter().filter(|p| !is_root(p)) {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::with_capacity(rows.len());
    // Depth first, without recursion: (row, the prefix of its children's lines, the
    // prefix of its own line).
    let mut stack: Vec<(&'a ProcFrame, String, String)> = rows
        .iter()
        .rev()
        .filter(|p| is_root(p))
        .map(|p| (*p, String::new(), String::new()))
        .collect();
    let mut done: HashSet<u32> = HashSet::with_capacity(rows.len());
    while let Some((p, indent, line)) = stack.pop() {
        // A pid listed twice (a gone row and a new one) is drawn once under its parent.
        if !done.insert(p.pid) {
            continue;
        }
        out.push((p, line));
        if let Some(kids) = children.get(&p.pid) {
            for (i, c) in kids.iter().enumerate().rev() {
                let last = i + 1 == kids.len();
                let line = format!("{indent}{}", if last { "└─ " } else { "├─ " });
                let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
                stack.push((c, deeper, line));
            }
        }
    }
    out
}

/// What a table `height` rows tall shows of the tree around `selected_pid`: the
/// selection is the last row on screen once it is past the first screenful, as in the
/// flat table.
pub fn tree_window<'a>(
    order: Vec<(&'a ProcFrame, String)>,
    (selected_pid, top): (Option<u32>, usize),
    height: usize,
) -> ProcWindow<'a> {
    let total = order.len();
    let selected = selected_pid
        .and_then(|s| order.iter().position(|(p, _)| p.pid == s))
        .unwrap_or(0);
    let first = crate::app::sort::window_first(selected, top, height, total);
    let worst = order.iter().map(|(p, _)| p.miss()).fold(0.0, f64::max);
    let (rows, prefix) = order.into_iter().skip(first).take(height).unzip();
    ProcWindow {
        rows,
        first,
        selected,
        total,
        worst,
        prefix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let got: Vec<(u32, String)> = tree_order(&refs)
            .into_iter()
            .map(|(p, s)| (p.pid, s))
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
        let w = tree_window(tree_order(&refs), (Some(8), 0), 3);
        assert_eq!(w.rows.iter().map(|p| p.pid).collect::<Vec<_>>(), [6, 7, 8]);
        assert_eq!((w.first, w.selected, w.total), (5, 7, 10));
        assert_eq!(w.prefix.len(), 3);
    }
}
