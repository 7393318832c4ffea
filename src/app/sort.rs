//! Sort columns for the process table, and the sorted row order (shared by the renderer
//! and by selection handling so both agree on what row N is).

use std::cmp::Ordering;

use crate::model::frame::{Frame, ProcFrame};

/// The process table's sort: one of the sortable fields of the field table.
use super::row::Row;
pub use crate::model::procs::fields::ProcField as ProcSort;
use crate::model::procs::fields::{Key, Sort};

impl ProcSort {
    /// How it sorts (a field that does not sort orders by PID).
    fn sort(self) -> Sort {
        self.field()
            .sort
            .or(ProcSort::Pid.field().sort)
            .expect("PID sorts")
    }

    /// Every sort key, in the table's order.
    pub fn all() -> Vec<ProcSort> {
        ProcSort::sortable().collect()
    }

    /// The next sort key to the right (`s`), round to the first.
    pub fn next(self) -> Self {
        let all = Self::all();
        let i = all.iter().position(|s| *s == self).unwrap_or(0);
        all[(i + 1) % all.len()]
    }

    /// The name in the title and the settings file.
    pub fn name(self) -> &'static str {
        self.sort().name
    }

    /// Text columns and PIDs sort ascending by default, numbers descending (biggest
    /// first).
    fn descending(self) -> bool {
        self.sort().descending
    }

    /// The row comparator the keyed order must match (tests).
    #[cfg(test)]
    fn cmp(self, a: &ProcFrame, b: &ProcFrame) -> Ordering {
        match self.sort().key {
            Key::Text(t) => t(a).cmp(t(b)),
            Key::Num(n) => {
                let f = |x: Option<f64>| x.unwrap_or(-1.0);
                f(n(a)).partial_cmp(&f(n(b))).unwrap_or(Ordering::Equal)
            }
        }
    }

    /// The sort key as a number, for every numeric column (the same order as `cmp`: a
    /// missing value sorts as -1); None for text.
    fn number(self, p: &ProcFrame) -> Option<f64> {
        match self.sort().key {
            Key::Num(n) => Some(n(p).unwrap_or(-1.0)),
            Key::Text(_) => None,
        }
    }
}

/// A row and its sort key, copied out of the row: comparing through the row references
/// costs two cache misses per comparison, and at 10,000 processes the sort was the largest
/// single cost of a render.
#[derive(Clone, Copy)]
struct Keyed<'a> {
    num: f64,
    pid: u32,
    /// Position in `Frame::procs`: rows equal in key and pid keep the frame's order.
    idx: u32,
    row: &'a ProcFrame,
}

/// The display order: by the column (COMM by text, the rest as numbers: integers up to
/// 2^53 are exact in an f64, and a missing value sorts as -1), then by pid, both in the
/// column's direction; then by position in the frame (what a stable sort keeps).
fn comparator(key: ProcSort, reverse: bool) -> impl Fn(&Keyed, &Keyed) -> Ordering {
    let desc = key.descending() != reverse;
    let text = match key.sort().key {
        Key::Text(t) => Some(t),
        Key::Num(_) => None,
    };
    move |a: &Keyed, b: &Keyed| {
        let o = match text {
            Some(t) => t(a.row).cmp(t(b.row)),
            None => a.num.partial_cmp(&b.num).unwrap_or(Ordering::Equal),
        }
        .then(a.pid.cmp(&b.pid));
        if desc { o.reverse() } else { o }.then(a.idx.cmp(&b.idx))
    }
}

/// The rows that pass `keep`, with their keys, and the largest scan miss among them.
fn keyed<'a>(
    frame: &'a Frame,
    key: ProcSort,
    keep: impl Fn(&ProcFrame) -> bool,
) -> (Vec<Keyed<'a>>, f64) {
    let mut worst = 0.0f64;
    let mut v = Vec::with_capacity(frame.procs.len());
    for (i, p) in frame.procs.iter().enumerate() {
        if !keep(p) {
            continue;
        }
        worst = worst.max(p.miss());
        v.push(Keyed {
            num: key.number(p).unwrap_or(-1.0),
            pid: p.pid,
            idx: i as u32,
            row: p,
        });
    }
    (v, worst)
}

/// Rows of the process table in display order.
pub fn sorted_procs(frame: &Frame, key: ProcSort, reverse: bool) -> Vec<&ProcFrame> {
    let (mut v, _) = keyed(frame, key, |_| true);
    v.sort_unstable_by(comparator(key, reverse));
    v.into_iter().map(|k| k.row).collect()
}

/// What a process table `height` rows tall shows: the rows around the selection, in
/// display order, found without sorting every row (a render formats only these).
pub struct ProcWindow<'a> {
    /// The rows on screen, in display order.
    pub rows: Vec<Row<'a>>,
    /// Display index of `rows[0]`.
    pub first: usize,
    /// Display index of the selected row (0 when nothing, or a row not shown, is selected).
    pub selected: usize,
    /// Rows in the table (after narrowing).
    pub total: usize,
    /// Of those, thread rows (the tree with `H`).
    pub threads: usize,
    /// The largest scan miss among all of them.
    pub worst: f64,
    /// The tree's branches before each row's command (empty in the flat table).
    pub prefix: Vec<String>,
}

/// Up to this many rows from the top (the window's end), the window is found in one pass
/// that keeps only the best rows so far; deeper windows select among all the rows' keys.
const TOP_PASS_MAX: usize = 512;

/// The display index of the first row a table `height` rows tall shows of `total`: the
/// one it showed last (`top`), moved only as far as keeps the selected row on screen, and
/// never so far down that the table's end leaves empty rows below it. So the selection
/// moves over still rows as in htop, and a row clicked is found where it was drawn.
pub fn window_first(selected: usize, top: usize, height: usize, total: usize) -> usize {
    let low = selected.saturating_sub(height.saturating_sub(1));
    top.clamp(low, selected.max(low))
        .min(total.saturating_sub(height))
}

/// The same rows, in the same order, as `sorted_procs` (narrowed by `keep`) from
/// `window_first` on, `top` being the first row shown before. Partial selection instead
/// of a sort.
pub fn proc_window<'a>(
    frame: &'a Frame,
    key: ProcSort,
    reverse: bool,
    keep: impl Fn(&ProcFrame) -> bool,
    (selected_pid, top): (Option<u32>, usize),
    height: usize,
) -> ProcWindow<'a> {
    let cmp = comparator(key, reverse);
    let keyed_at = |i: usize, p: &'a ProcFrame| Keyed {
        num: key.number(p).unwrap_or(-1.0),
        pid: p.pid,
        idx: i as u32,
        row: p,
    };
    // The selected row's display index: how many rows sort before it.
    let selected = selected_pid
        .and_then(|pid| {
            let sel: Vec<Keyed> = (frame.procs.iter().enumerate())
                .filter(|(_, p)| p.pid == pid && keep(p))
                .map(|(i, p)| keyed_at(i, p))
                .collect();
            (!sel.is_empty()).then(|| {
                let mut before = vec![0usize; sel.len()];
                for (i, p) in frame.procs.iter().enumerate() {
                    if !keep(p) {
                        continue;
                    }
                    let k = keyed_at(i, p);
                    for (c, n) in sel.iter().zip(before.iter_mut()) {
                        *n += usize::from(cmp(&k, c) == Ordering::Less);
                    }
                }
                before.into_iter().min().unwrap_or(0)
            })
        })
        .unwrap_or(0);
    let first_of = |n: usize| window_first(selected, top, height, n);
    // Near the top, keep only the best `k` rows (those down to the window's end) in one
    // pass: no copy of every row's key, and most rows cost one comparison. (However many
    // rows there turn out to be, the window starts no lower than with unlimited rows.)
    let k = (first_of(usize::MAX) + height).max(selected + 1);
    if height > 0 && k <= TOP_PASS_MAX {
        let mut best: Vec<Keyed> = Vec::with_capacity(k + 1);
        let (mut total, mut worst) = (0usize, 0.0f64);
        for (i, p) in frame.procs.iter().enumerate() {
            if !keep(p) {
                continue;
            }
            total += 1;
            worst = worst.max(p.miss());
            let r = keyed_at(i, p);
            if best.len() == k && cmp(&r, &best[k - 1]) != Ordering::Less {
                continue;
            }
            let at = best.partition_point(|b| cmp(b, &r) == Ordering::Less);
            best.insert(at, r);
            best.truncate(k);
        }
        let first = first_of(total);
        return ProcWindow {
            rows: best.iter().skip(first).map(|k| Row::Proc(k.row)).collect(),
            first,
            selected,
            total,
            threads: 0,
            worst,
            prefix: Vec::new(),
        };
    }
    let (mut all, worst) = keyed(frame, key, keep);
    let n = all.len();
    let first = first_of(n);
    let end = (first + height).min(n);
    if first > 0 && first < n {
        all.select_nth_unstable_by(first, &cmp);
    }
    let rest = &mut all[first..];
    let k = end - first;
    if k > 0 && k < rest.len() {
        rest.select_nth_unstable_by(k - 1, &cmp);
    }
    rest[..k].sort_unstable_by(&cmp);
    ProcWindow {
        rows: rest[..k].iter().map(|k| Row::Proc(k.row)).collect(),
        first,
        selected,
        total: n,
        threads: 0,
        worst,
        prefix: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyed sort gives exactly the order of the row comparator, for every column.
    #[test]
    fn keyed_sort_matches_the_comparator() {
        let procs: Vec<ProcFrame> = (0..200u32)
            .map(|i| ProcFrame {
                pid: 1000 - i * 3,
                comm: format!("c{}", i % 7).into(),
                threads_seen: i % 5,
                threads_created: (i % 3 > 0).then_some(u64::from(i % 4)),
                cpu_pct_scan: (i % 5 > 0).then_some(f64::from(i % 9) * 0.5).into(),
                cpu_pct_true: (i % 4 > 0).then_some(f64::from(i % 6)),
                runq_wait_ms: (i % 2 > 0).then_some(f64::from(i % 11)),
                scan_miss: (i % 6 > 0).then_some(f64::from(i % 8)).into(),
                rss_kb: u64::from(i % 13) * 1024,
                ..Default::default()
            })
            .collect();
        let frame = Frame {
            procs,
            ..Default::default()
        };
        for key in ProcSort::all() {
            for reverse in [false, true] {
                let desc = key.descending() != reverse;
                let mut want: Vec<&ProcFrame> = frame.procs.iter().collect();
                want.sort_by(|a, b| {
                    let o = key.cmp(a, b).then_with(|| a.pid.cmp(&b.pid));
                    if desc { o.reverse() } else { o }
                });
                let got = sorted_procs(&frame, key, reverse);
                let pids = |v: &[&ProcFrame]| v.iter().map(|p| p.pid).collect::<Vec<_>>();
                assert_eq!(pids(&got), pids(&want), "{key:?} reverse={reverse}");
            }
        }
    }

    /// The window is the slice of the full order the table shows, for every column,
    /// selection, height and narrowing, with repeated pids and keys among the rows.
    #[test]
    fn window_is_the_slice_of_the_sorted_rows() {
        let mut procs: Vec<ProcFrame> = (0..120u32)
            .map(|i| ProcFrame {
                pid: 500 - (i * 7) % 113,
                comm: format!("c{}", i % 5).into(),
                threads_seen: i % 4,
                cpu_pct_true: (i % 3 > 0).then_some(f64::from(i % 6)),
                scan_miss: (i % 7 > 0).then_some(f64::from((i * 5) % 9)).into(),
                rss_kb: u64::from(i % 3),
                ..Default::default()
            })
            .collect();
        procs.push(procs[10].clone()); // the same pid and key twice
        let frame = Frame {
            procs,
            ..Default::default()
        };
        let keep = |p: &ProcFrame| p.pid % 10 != 3;
        for key in ProcSort::all() {
            for reverse in [false, true] {
                let mut want = sorted_procs(&frame, key, reverse);
                want.retain(|p| keep(p));
                let pids: Vec<u32> = want.iter().map(|p| p.pid).collect();
                let sels = [
                    None,
                    Some(pids[0]),
                    Some(pids[40]),
                    Some(pids[pids.len() - 1]),
                ];
                let cases = (sels.into_iter().chain([Some(3), Some(frame.procs[10].pid)]))
                    .flat_map(|s| [0, 4, 30, 95, 700].map(|top| (s, top)));
                for (sel, top) in cases {
                    for h in [1, 2, 5, 30, 500, 600] {
                        let w = proc_window(&frame, key, reverse, keep, (sel, top), h);
                        let at = sel.and_then(|s| pids.iter().position(|&p| p == s));
                        let at = at.unwrap_or(0);
                        // Where it was, unless that hides the selection or the end.
                        let first = if at < top {
                            at
                        } else if at >= top + h {
                            at + 1 - h
                        } else {
                            top
                        };
                        let first = first.min(want.len().saturating_sub(h));
                        let got: Vec<*const ProcFrame> = w
                            .rows
                            .iter()
                            .map(|r| r.proc().unwrap() as *const _)
                            .collect();
                        let exp: Vec<*const ProcFrame> = want
                            .iter()
                            .skip(first)
                            .take(h)
                            .map(|r| *r as *const _)
                            .collect();
                        let case = format!("{key:?} rev={reverse} sel={sel:?} top={top} h={h}");
                        assert_eq!(got, exp, "{case}");
                        assert_eq!(
                            (w.first, w.selected, w.total),
                            (first, at, want.len()),
                            "{case}"
                        );
                        let worst = want.iter().map(|p| p.miss()).fold(0.0, f64::max);
                        assert_eq!(w.worst, worst);
                    }
                }
            }
        }
    }
}
