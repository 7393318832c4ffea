//! The figures of a process row an htop user reads every day: USER, PR and NI, TIME+,
//! START, context switches and major faults per second. All from the /proc scan (stat
//! and status); each is null where the scan did not read it, and a rate is null in the
//! process's first interval (nothing to take a difference from): not measured, never 0.

use crate::model::name::Name;
use crate::model::opt::Opt;
use crate::model::procs::threads::Interval;
use crate::model::rates::delta;
use crate::model::sample::ProcScan;

/// A process row's everyday figures (see ProcFrame for each).
#[derive(Default)]
pub struct Everyday {
    pub user: Name,
    pub uid: Option<u32>,
    pub priority: Option<i8>,
    pub nice: Option<i8>,
    pub cpu_time_s: Opt<f64>,
    pub start_time: Opt<f64>,
    pub ctx_voluntary_per_s: Opt<f64>,
    pub ctx_involuntary_per_s: Opt<f64>,
    pub majflt_per_s: Opt<f64>,
}

/// Per second between the previous scan's count and this one's.
fn per_s(prev: Option<Option<u64>>, cur: Option<u64>, at: &Interval) -> Opt<f64> {
    match (prev, cur) {
        (Some(Some(p)), Some(c)) => Opt::some(delta(p, c) as f64 / at.s),
        _ => Opt::NONE,
    }
}

/// `p`'s figures; `prev` is the previous scan's reading of the same process (same pid
/// and start time), if any.
#[inline]
pub fn everyday(prev: Option<&ProcScan>, p: &ProcScan, at: &Interval) -> Everyday {
    let user = match (p.uid, p.user.is_empty()) {
        (Some(uid), true) => Name::from(uid.to_string()),
        (Some(_), false) => Name::from(&p.user),
        (None, _) => Name::default(),
    };
    Everyday {
        user,
        uid: p.uid,
        priority: p.priority.and_then(|v| i8::try_from(v).ok()),
        nice: p.nice.and_then(|v| i8::try_from(v).ok()),
        cpu_time_s: Opt::some((p.utime + p.stime) as f64 / at.tck),
        start_time: match at.boot_s {
            Some(boot) => Opt::some(boot + p.starttime as f64 / at.tck),
            None => Opt::NONE,
        },
        ctx_voluntary_per_s: per_s(prev.map(|q| q.ctx_voluntary), p.ctx_voluntary, at),
        ctx_involuntary_per_s: per_s(prev.map(|q| q.ctx_involuntary), p.ctx_involuntary, at),
        majflt_per_s: per_s(prev.map(|q| q.majflt), p.majflt, at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Interval = Interval {
        ns: 2_000_000_000,
        s: 2.0,
        tck: 100.0,
        has_prev: true,
        bpf: false,
        boot_s: Some(1_700_000_000.0),
    };

    #[test]
    fn rates_need_two_readings_and_names_fall_back_to_the_uid() {
        let prev = ProcScan {
            ctx_voluntary: Some(10),
            ctx_involuntary: Some(4),
            majflt: Some(1),
            ..Default::default()
        };
        let cur = ProcScan {
            uid: Some(4242),
            utime: 150,
            stime: 50,
            starttime: 1000,
            nice: Some(5),
            priority: Some(25),
            ctx_voluntary: Some(30),
            ctx_involuntary: Some(4),
            majflt: Some(9),
            ..Default::default()
        };
        let e = everyday(Some(&prev), &cur, &AT);
        assert_eq!(&*e.user, "4242");
        assert_eq!((e.priority, e.nice), (Some(25), Some(5)));
        assert_eq!(e.cpu_time_s.get(), Some(2.0));
        assert_eq!(e.start_time.get(), Some(1_700_000_010.0));
        assert_eq!(e.ctx_voluntary_per_s.get(), Some(10.0));
        assert_eq!(e.ctx_involuntary_per_s.get(), Some(0.0));
        assert_eq!(e.majflt_per_s.get(), Some(4.0));
        // The first interval, and a recording made before these were kept: not measured.
        let first = everyday(None, &cur, &AT);
        assert_eq!(first.ctx_voluntary_per_s.get(), None);
        assert_eq!(first.majflt_per_s.get(), None);
        let old = everyday(Some(&ProcScan::default()), &ProcScan::default(), &AT);
        assert_eq!((old.user.is_empty(), old.nice), (true, None));
        assert_eq!(old.majflt_per_s.get(), None);
    }
}
