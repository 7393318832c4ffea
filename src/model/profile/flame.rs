//! A flame graph as data: folded stacks merged into a tree of frames (each with its
//! total and self samples), laid out on a grid of character cells, and the function
//! table of `perf report` (`--no-children` self, `--children` total). Pure: the
//! profile view and its snapshots draw from this.

use std::collections::BTreeMap;

/// One frame of the tree: a function at one position in the call chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    pub name: String,
    /// Samples in this frame and everything it called.
    pub total: u64,
    /// Samples in this frame itself (it was the leaf).
    pub self_: u64,
    /// Children by name, sorted by name as flamegraph.pl sorts them (so a graph does
    /// not reshuffle from one interval to the next).
    pub children: Vec<Node>,
}

impl Node {
    fn child(&mut self, name: &str) -> &mut Node {
        let i = match self
            .children
            .binary_search_by(|c| c.name.as_str().cmp(name))
        {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(
                    i,
                    Node {
                        name: name.to_string(),
                        ..Default::default()
                    },
                );
                i
            }
        };
        &mut self.children[i]
    }

    /// The node at `path` (names from this node's children down), if it exists.
    pub fn at(&self, path: &[String]) -> Option<&Node> {
        let mut n = self;
        for name in path {
            n = n.children.iter().find(|c| &c.name == name)?;
        }
        Some(n)
    }
}

/// The root ("all") of a tree built from `(stack, count)` pairs, `stack` being a folded
/// line without its count (`a;b;c`).
pub fn tree<'a>(stacks: impl IntoIterator<Item = (&'a str, u64)>) -> Node {
    let mut root = Node {
        name: "all".to_string(),
        ..Default::default()
    };
    for (stack, n) in stacks {
        root.total += n;
        let mut cur = &mut root;
        for f in stack.split(';').filter(|f| !f.is_empty()) {
            cur = cur.child(f);
            cur.total += n;
        }
        cur.self_ += n;
    }
    root
}

/// A frame drawn on the grid: its row (0 is the zoomed root), first column and width in
/// cells, and its path from the tree's root.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub depth: usize,
    pub x: u16,
    pub w: u16,
    pub path: Vec<String>,
    pub total: u64,
    pub self_: u64,
}

/// Lay out the subtree at `zoom` on `width` columns and `rows` rows: each frame as wide
/// as its share of the zoomed frame's samples (cells start at the rounded cumulative
/// position, so widths add up exactly); frames narrower than one cell are not drawn.
pub fn layout(root: &Node, zoom: &[String], width: u16, rows: usize) -> Vec<Cell> {
    let mut out = Vec::new();
    let Some(top) = root.at(zoom) else {
        return out;
    };
    if top.total == 0 || width == 0 || rows == 0 {
        return out;
    }
    let scale = f64::from(width) / top.total as f64;
    let mut path = zoom.to_vec();
    place(top, &mut path, 0, 0, scale, rows, &mut out);
    out
}

fn place(
    n: &Node,
    path: &mut Vec<String>,
    depth: usize,
    start: u64,
    scale: f64,
    rows: usize,
    out: &mut Vec<Cell>,
) {
    let x0 = (start as f64 * scale).round() as u16;
    let x1 = ((start + n.total) as f64 * scale).round() as u16;
    if x1 <= x0 || depth >= rows {
        return;
    }
    out.push(Cell {
        depth,
        x: x0,
        w: x1 - x0,
        path: path.clone(),
        total: n.total,
        self_: n.self_,
    });
    let mut at = start;
    for c in &n.children {
        path.push(c.name.clone());
        place(c, path, depth + 1, at, scale, rows, out);
        path.pop();
        at += c.total;
    }
}

/// One row of the function table: a function's samples as the leaf (self) and anywhere
/// on the stack (total, counted once per stack however often it recurses).
#[derive(Debug, Clone, PartialEq)]
pub struct FnRow {
    pub name: String,
    pub self_: u64,
    pub total: u64,
}

/// Functions by self samples, then total, then name (`perf report --no-children`; the
/// total column is `--children`'s). The first two frames (process, thread group) are
/// not functions and are left out.
pub fn functions<'a>(stacks: impl IntoIterator<Item = (&'a str, u64)>) -> Vec<FnRow> {
    let mut m: BTreeMap<&'a str, (u64, u64)> = BTreeMap::new();
    for (stack, n) in stacks {
        let frames: Vec<&str> = stack.split(';').skip(2).collect();
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for f in &frames {
            if !seen.contains(f) {
                seen.push(f);
                m.entry(f).or_default().1 += n;
            }
        }
        if let Some(leaf) = frames.last() {
            m.entry(leaf).or_default().0 += n;
        }
    }
    let mut rows: Vec<FnRow> = m
        .into_iter()
        .map(|(name, (self_, total))| FnRow {
            name: name.to_string(),
            self_,
            total,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.self_
            .cmp(&a.self_)
            .then(b.total.cmp(&a.total))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// Samples in frames whose name contains `needle` (case-insensitive), each sample
/// counted once however many matching frames its stack has: the share a search
/// highlights.
pub fn matching_samples<'a>(stacks: impl IntoIterator<Item = (&'a str, u64)>, needle: &str) -> u64 {
    let needle = needle.to_lowercase();
    stacks
        .into_iter()
        .filter(|(s, _)| {
            s.split(';')
                .skip(2)
                .any(|f| f.to_lowercase().contains(&needle))
        })
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks() -> Vec<(&'static str, u64)> {
        vec![
            ("db-7;db;main;run;burn_a", 6),
            ("db-7;db;main;run;burn_b", 2),
            ("db-7;db;main;idle", 2),
        ]
    }

    #[test]
    fn the_tree_sums_totals_and_self() {
        let t = tree(stacks());
        assert_eq!(t.total, 10);
        let run = t
            .at(&["db-7".into(), "db".into(), "main".into(), "run".into()])
            .unwrap();
        assert_eq!((run.total, run.self_), (8, 0));
        assert_eq!(run.children[0].name, "burn_a");
        assert_eq!((run.children[0].total, run.children[0].self_), (6, 6));
    }

    #[test]
    fn widths_are_proportional_and_add_up() {
        let t = tree(stacks());
        let cells = layout(&t, &[], 40, 10);
        let w = |name: &str| {
            cells
                .iter()
                .find(|c| c.path.last().map(String::as_str) == Some(name))
                .map(|c| (c.x, c.w))
        };
        assert_eq!(cells[0].w, 40, "the root spans the width");
        // Siblings in name order: idle before run.
        assert_eq!(w("idle"), Some((0, 8)));
        assert_eq!(w("run"), Some((8, 32)));
        assert_eq!(w("burn_a"), Some((8, 24)));
        assert_eq!(w("burn_b"), Some((32, 8)));
    }

    #[test]
    fn zoom_gives_a_frame_the_full_width_and_narrow_frames_drop() {
        let t = tree(stacks());
        let zoom: Vec<String> = ["db-7", "db", "main", "run"].map(String::from).to_vec();
        let cells = layout(&t, &zoom, 8, 10);
        assert_eq!(cells[0].path, zoom);
        assert_eq!((cells[0].x, cells[0].w, cells[0].depth), (0, 8, 0));
        assert_eq!(cells.len(), 3);
        // A frame under a tenth of a column is not drawn.
        let small = tree(vec![("p-1;t;big", 99), ("p-1;t;tiny", 1)]);
        let cells = layout(&small, &[], 10, 10);
        assert!(cells.iter().all(|c| c.w >= 1));
        assert!(
            cells
                .iter()
                .any(|c| c.path.last().is_some_and(|n| n == "big"))
        );
        assert!(
            !cells
                .iter()
                .any(|c| c.path.last().is_some_and(|n| n == "tiny"))
        );
        assert!(layout(&t, &["nope".into()], 8, 10).is_empty());
    }

    #[test]
    fn functions_count_self_and_total_once_per_stack() {
        let rows = functions(vec![("p-1;t;a;b;a", 3), ("p-1;t;a;c", 1)]);
        assert_eq!(
            rows,
            vec![
                FnRow {
                    name: "a".into(),
                    self_: 3,
                    total: 4
                },
                FnRow {
                    name: "c".into(),
                    self_: 1,
                    total: 1
                },
                FnRow {
                    name: "b".into(),
                    self_: 0,
                    total: 3
                },
            ]
        );
        assert_eq!(matching_samples(stacks(), "BURN"), 8);
        assert_eq!(
            matching_samples(stacks(), "db"),
            0,
            "process and thread are not frames"
        );
    }
}
