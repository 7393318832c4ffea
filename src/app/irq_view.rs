//! State of the IPI/TLB and latency views: their sort columns, and the sorted rows
//! (shared by the renderers and the tests so both agree on the order).

use std::cmp::Ordering;

use super::contention_view::next;
use super::keymap::Action;
use super::view::View;
use crate::model::Frame;
use crate::model::irq::IpiSenderFrame;
use crate::model::latency::LatThreadRow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatSort {
    Max,
    P99,
    P50,
    Avg,
    Count,
    Tid,
}

impl LatSort {
    pub const ALL: [LatSort; 6] = [
        LatSort::Max,
        LatSort::P99,
        LatSort::P50,
        LatSort::Avg,
        LatSort::Count,
        LatSort::Tid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LatSort::Max => "MAX",
            LatSort::P99 => "P99",
            LatSort::P50 => "P50",
            LatSort::Avg => "AVG",
            LatSort::Count => "WAITS/s",
            LatSort::Tid => "TID",
        }
    }

    fn cmp(self, a: &LatThreadRow, b: &LatThreadRow) -> Ordering {
        let n = |x: f64, y: f64| x.total_cmp(&y);
        match self {
            LatSort::Max => n(a.max_us, b.max_us),
            LatSort::P99 => n(a.p99_us, b.p99_us),
            LatSort::P50 => n(a.p50_us, b.p50_us),
            LatSort::Avg => n(a.avg_us, b.avg_us),
            LatSort::Count => a.count.cmp(&b.count),
            // TID ascends by default: reversed here, undone by the descending default.
            LatSort::Tid => b.tid.cmp(&a.tid),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderSort {
    Ipis,
    Queued,
    Pid,
}

impl SenderSort {
    pub const ALL: [SenderSort; 3] = [SenderSort::Ipis, SenderSort::Queued, SenderSort::Pid];

    pub fn name(self) -> &'static str {
        match self {
            SenderSort::Ipis => "IPI/s",
            SenderSort::Queued => "CALLS/s",
            SenderSort::Pid => "PID",
        }
    }

    fn cmp(self, a: &IpiSenderFrame, b: &IpiSenderFrame) -> Ordering {
        match self {
            // Where IPIs sent are not measured (before Linux 6.3), by what was queued.
            SenderSort::Ipis => a.ipis.cmp(&b.ipis).then(a.queued.cmp(&b.queued)),
            SenderSort::Queued => a.queued.cmp(&b.queued).then(a.ipis.cmp(&b.ipis)),
            SenderSort::Pid => b.pid.cmp(&a.pid),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqView {
    pub lat_sort: LatSort,
    pub lat_reverse: bool,
    pub sender_sort: SenderSort,
    pub sender_reverse: bool,
}

impl Default for IrqView {
    fn default() -> Self {
        Self {
            lat_sort: LatSort::Max,
            lat_reverse: false,
            sender_sort: SenderSort::Ipis,
            sender_reverse: false,
        }
    }
}

impl IrqView {
    /// The sort keys mean these views' columns while they are on screen. True when the
    /// action was used here.
    pub fn handle(&mut self, view: View, a: Action) -> bool {
        match (view, a) {
            (View::Latency, Action::SortNext) => self.lat_sort = next(&LatSort::ALL, self.lat_sort),
            (View::Latency, Action::SortReverse) => self.lat_reverse = !self.lat_reverse,
            (View::Ipi, Action::SortNext) => {
                self.sender_sort = next(&SenderSort::ALL, self.sender_sort)
            }
            (View::Ipi, Action::SortReverse) => self.sender_reverse = !self.sender_reverse,
            _ => return false,
        }
        true
    }

    /// Latency rows in display order (worst first unless reversed).
    pub fn threads<'a>(&self, f: &'a Frame) -> Vec<&'a LatThreadRow> {
        let mut rows: Vec<&LatThreadRow> =
            f.latency.iter().flat_map(|l| l.threads.iter()).collect();
        rows.sort_by(|a, b| {
            let o = self.lat_sort.cmp(b, a).then(a.tid.cmp(&b.tid));
            if self.lat_reverse { o.reverse() } else { o }
        });
        rows
    }

    /// IPI senders in display order.
    pub fn senders<'a>(&self, f: &'a Frame) -> Vec<&'a IpiSenderFrame> {
        let mut rows: Vec<&IpiSenderFrame> = f.ipi_senders.iter().collect();
        rows.sort_by(|a, b| {
            let o = self
                .sender_sort
                .cmp(b, a)
                .then(a.pid.cmp(&b.pid))
                .then(a.func.cmp(&b.func));
            if self.sender_reverse { o.reverse() } else { o }
        });
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::latency::LatencyFrame;

    #[test]
    fn latency_rows_sort_by_column_and_reverse() {
        let row = |tid, max_us, p99_us| LatThreadRow {
            tid,
            max_us,
            p99_us,
            count: u64::from(tid),
            ..Default::default()
        };
        let f = Frame {
            latency: Some(LatencyFrame {
                threads: vec![row(1, 900.0, 10.0), row(2, 50.0, 40.0), row(3, 300.0, 30.0)],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut v = IrqView::default();
        let tids = |v: &IrqView| v.threads(&f).iter().map(|r| r.tid).collect::<Vec<_>>();
        assert_eq!(tids(&v), [1, 3, 2]);
        assert!(v.handle(View::Latency, Action::SortNext));
        assert_eq!(tids(&v), [2, 3, 1]);
        assert!(v.handle(View::Latency, Action::SortReverse));
        assert_eq!(tids(&v), [1, 3, 2]);
        assert!(!v.handle(View::Main, Action::SortNext));
    }
}
