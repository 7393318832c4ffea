//! The mouse: where the last render drew the table the mouse acts on (the process
//! table, the futex and kernel-lock views' tables, the cgroup tree: its header's columns
//! and its rows), and what a click or a wheel notch there means. The render is pure, so it
//! hands this geometry back and the event loop keeps it in the App; `action` maps an
//! event to what it does, with no I/O.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::contention_view::{FutexSort, LockSort};
use super::sort::ProcSort;

/// Rows one wheel notch moves the selection (three arrow-key presses).
pub const WHEEL_ROWS: usize = 3;

/// What the mouse does, for the help screen (`?`) and the man page's KEYS: (what, what
/// it does).
pub const MOUSE_HELP: &[(&str, &str)] = &[
    (
        "click",
        "on a column's title: sort by it (again: reverse), in the process, futex and kernel-lock tables; on a row: select it (a process, a thread in the tree with H, a cgroup)",
    ),
    (
        "wheel",
        "move the selection 3 rows a notch, wherever the pointer is (it scrolls the findings screen and turns the help's pages)",
    ),
    (
        "Shift",
        "hold it to select text with the mouse (ttop has the mouse otherwise, in most terminals)",
    ),
];

/// A column a title click sorts by, in the table it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Proc(ProcSort),
    Futex(FutexSort),
    Lock(LockSort),
}

impl From<FutexSort> for SortKey {
    fn from(k: FutexSort) -> Self {
        SortKey::Futex(k)
    }
}

impl From<LockSort> for SortKey {
    fn from(k: LockSort) -> Self {
        SortKey::Lock(k)
    }
}

/// Which table was drawn: what a row click selects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TableKind {
    /// The process table: a row of `App::rows`.
    #[default]
    Procs,
    /// The cgroup tree (7): `CgroupView::sel`.
    Cgroups,
    /// The futex and kernel-lock tables: they sort by a title click, and have no selected
    /// row (`rows` is 0).
    Sorted,
}

/// One header cell: the screen columns `x0..x1` it covers, and the sort it stands for
/// (None: a column that does not sort, such as S or COMMAND).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderCell {
    pub x0: u16,
    pub x1: u16,
    pub sort: Option<SortKey>,
}

/// Where the last render drew the table the mouse acts on (screen cells).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableGeom {
    pub kind: TableKind,
    /// The table's columns on screen: `x..x + width`.
    pub x: u16,
    pub width: u16,
    /// The header's row.
    pub header_y: u16,
    /// The first row of processes, and how many were drawn below it.
    pub body_y: u16,
    pub rows: u16,
    /// Display index (in `App::rows` order, or the cgroup tree's) of the first row drawn.
    pub first: usize,
    pub header: Vec<HeaderCell>,
}

/// What a mouse event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseAction {
    /// Sort by this column (again on the sorted one: reverse the order).
    SortBy(SortKey),
    /// Select the row at this display index.
    Select(usize),
    /// Move the selection this many rows (negative: up).
    Scroll(isize),
}

/// What `ev` does, given where the table was drawn (None: no such table on screen).
/// Left clicks act on the press; the wheel scrolls wherever the pointer is.
pub fn action(ev: &MouseEvent, table: Option<&TableGeom>) -> Option<MouseAction> {
    let step = WHEEL_ROWS as isize;
    match ev.kind {
        MouseEventKind::ScrollDown => return Some(MouseAction::Scroll(step)),
        MouseEventKind::ScrollUp => return Some(MouseAction::Scroll(-step)),
        MouseEventKind::Down(MouseButton::Left) => {}
        _ => return None,
    }
    let t = table?;
    let (x, y) = (ev.column, ev.row);
    if x < t.x || x >= t.x.saturating_add(t.width) {
        return None;
    }
    if y == t.header_y {
        return t
            .header
            .iter()
            .find(|c| (c.x0..c.x1).contains(&x))
            .and_then(|c| c.sort)
            .map(MouseAction::SortBy);
    }
    let row = y.checked_sub(t.body_y).filter(|r| *r < t.rows)?;
    Some(MouseAction::Select(t.first + usize::from(row)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn ev(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    fn click(x: u16, y: u16) -> MouseEvent {
        ev(MouseEventKind::Down(MouseButton::Left), x, y)
    }

    /// A table at x 2..82, header on row 10, 5 rows drawn from 11, scrolled to row 40.
    fn geom() -> TableGeom {
        TableGeom {
            kind: TableKind::Procs,
            x: 2,
            width: 80,
            header_y: 10,
            body_y: 11,
            rows: 5,
            first: 40,
            header: vec![
                HeaderCell {
                    x0: 2,
                    x1: 9,
                    sort: Some(SortKey::Proc(ProcSort::Pid)),
                },
                HeaderCell {
                    x0: 10,
                    x1: 25,
                    sort: Some(SortKey::Proc(ProcSort::Comm)),
                },
                HeaderCell {
                    x0: 26,
                    x1: 27,
                    sort: None,
                },
                HeaderCell {
                    x0: 28,
                    x1: 34,
                    sort: Some(SortKey::Lock(LockSort::Max)),
                },
            ],
        }
    }

    #[test]
    fn a_header_click_sorts_by_its_column() {
        let g = geom();
        let at = |x| action(&click(x, 10), Some(&g));
        let by = |k| Some(MouseAction::SortBy(k));
        assert_eq!(at(2), by(SortKey::Proc(ProcSort::Pid)));
        assert_eq!(at(8), by(SortKey::Proc(ProcSort::Pid)));
        assert_eq!(at(10), by(SortKey::Proc(ProcSort::Comm)));
        // Any table's key: the map does not care whose it is.
        assert_eq!(at(33), by(SortKey::Lock(LockSort::Max)));
        // The gap between columns, a column that does not sort, past the last header.
        assert_eq!(at(9), None);
        assert_eq!(at(26), None);
        assert_eq!(at(40), None);
    }

    #[test]
    fn a_row_click_selects_its_display_index_past_the_scroll() {
        let g = geom();
        assert_eq!(
            action(&click(5, 11), Some(&g)),
            Some(MouseAction::Select(40))
        );
        assert_eq!(
            action(&click(70, 15), Some(&g)),
            Some(MouseAction::Select(44))
        );
        // Below the rows drawn: nothing.
        assert_eq!(action(&click(5, 16), Some(&g)), None);
    }

    #[test]
    fn the_wheel_moves_three_rows_a_notch() {
        let g = geom();
        let down = ev(MouseEventKind::ScrollDown, 0, 0);
        let up = ev(MouseEventKind::ScrollUp, 50, 12);
        assert_eq!(action(&down, Some(&g)), Some(MouseAction::Scroll(3)));
        assert_eq!(action(&up, Some(&g)), Some(MouseAction::Scroll(-3)));
        // Another view: the wheel still moves its selection as the arrows do.
        assert_eq!(action(&down, None), Some(MouseAction::Scroll(3)));
    }

    #[test]
    fn clicks_outside_the_table_do_nothing() {
        let g = geom();
        for (x, y) in [(0, 12), (1, 10), (82, 12), (5, 9), (5, 0), (5, 30)] {
            assert_eq!(action(&click(x, y), Some(&g)), None, "({x}, {y})");
        }
        // No table on screen, other buttons, releases, drags, moves.
        assert_eq!(action(&click(5, 11), None), None);
        for kind in [
            MouseEventKind::Down(MouseButton::Right),
            MouseEventKind::Up(MouseButton::Left),
            MouseEventKind::Drag(MouseButton::Left),
            MouseEventKind::Moved,
        ] {
            assert_eq!(action(&ev(kind, 5, 11), Some(&g)), None, "{kind:?}");
        }
    }
}
