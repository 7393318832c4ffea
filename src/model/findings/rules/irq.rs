//! IPI rules: tlb_storm.

use super::*;

pub(super) fn tlb_storm(fr: &Frame, secs: f64, out: &mut Vec<Finding>) {
    let received: u64 = fr.cpus.iter().filter_map(|c| c.tlb_shootdowns).sum();
    for p in &fr.procs {
        let Some(n) = p.tlb_shootdowns_caused.get() else {
            continue;
        };
        let rate = n as f64 / secs;
        if rate < TLB_STORM_PER_S {
            continue;
        }
        let mut cpus: Vec<_> = fr
            .cpus
            .iter()
            .filter(|c| c.tlb_shootdowns.unwrap_or(0) > 0)
            .collect();
        cpus.sort_by_key(|c| std::cmp::Reverse(c.tlb_shootdowns.unwrap_or(0)));
        out.push(Finding {
            kind: "tlb_storm",
            severity: if rate >= TLB_STORM_CRIT_PER_S {
                Severity::Critical
            } else {
                Severity::Warning
            },
            pids: vec![p.pid],
            cpus: cpus.iter().map(|c| c.cpu).collect(),
            summary: format!(
                "{} makes other CPUs flush their TLBs {rate:.0} times/s (munmap, mprotect, \
                 madvise while its threads run elsewhere): map and unmap less often, \
                 reuse memory",
                name(fr, p.pid)
            ),
            figures: fig(&[
                ("shootdowns_per_s", rate),
                ("received_per_s", received as f64 / secs),
                (
                    "ipis_per_s",
                    p.tlb_ipis_caused.get().unwrap_or(0) as f64 / secs,
                ),
            ]),
            view: FindingView::Ipi,
            key: key(&[u64::from(p.pid)]),
            ..Default::default()
        });
    }
}
