//! What the collecting loop feeds each Frame to: it judges findings, adds the frame to
//! the counters and renders the whole scrape once, then publishes it on the Exporter.
//! It is owned by the collecting thread; the HTTP side only ever sees finished text.

use prometheus_client::encoding::text::encode;

use super::Exporter;
use super::cgroup_counters::CgroupGroups;
use super::findings::FindingTotals;
use super::groups::{Groups, TopBy};
use super::out::Out;
use super::totals::Totals;
use crate::model::Frame;
use crate::model::findings::Window;

pub struct Publisher {
    exporter: Exporter,
    top: usize,
    window: Window,
    pub totals: Totals,
    pub groups: Groups,
    pub cgroups: CgroupGroups,
    pub findings: FindingTotals,
}

impl Publisher {
    /// `top` bounds every per-process family (the old per-pid gauges and the new
    /// per-name counters) and the per-cgroup counters; `by` ranks both.
    pub fn new(exporter: Exporter, top: usize, by: &[TopBy]) -> Publisher {
        Publisher {
            exporter,
            top,
            window: Window::new(),
            totals: Totals::default(),
            groups: Groups::new(top, by),
            cgroups: CgroupGroups::new(top, by),
            findings: FindingTotals::default(),
        }
    }

    /// Count `f` and make the scrape that includes it what the server answers.
    pub fn push(&mut self, mut f: Frame) {
        self.window.push(&mut f);
        self.totals.add(&f);
        self.groups.add(&f);
        self.cgroups.add_cgroups(&f);
        self.findings.add(&f);
        self.exporter.set(self.render(&f));
    }

    /// The OpenMetrics text: last-interval gauges, then counters, groups, cgroups and findings.
    pub fn render(&self, f: &Frame) -> String {
        let mut o = Out::new();
        super::metrics::gauges(&mut o, f, self.top);
        super::counters::totals(&mut o, &self.totals);
        super::counters::groups(&mut o, &self.groups);
        super::cgroup_counters::render(&mut o, &self.cgroups);
        super::findings::render(&mut o, f, &self.findings);
        let mut text = String::new();
        encode(&mut text, &o.reg).expect("writing to a String cannot fail");
        text
    }
}
