//! The ceiling's steps and hysteresis, fed windows with chosen costs.

use super::*;

const S: u64 = 1_000_000_000;

/// A one-second window where contention_begin ran for `begin` (all of it its kernel
/// stacks), the futex user stack walks for `walks` and sched_switch (which the walks run
/// in) for `sched` + `walks` shares of one CPU (%).
fn window(begin: f64, walks: f64, sched: f64) -> WindowCosts {
    window_k(begin, begin, walks, sched)
}

/// The same, with contention_begin's kernel stacks clocked at `kstacks` of its `begin`.
fn window_k(begin: f64, kstacks: f64, walks: f64, sched: f64) -> WindowCosts {
    let ns = |pct: f64| (pct / 100.0 * S as f64) as u64;
    let progs = [
        ("ttop_contention_begin", begin),
        ("ttop_sched_switch", sched + walks),
    ]
    .into_iter()
    .map(|(name, pct)| ProgRun {
        name: name.into(),
        run_time_ns: ns(pct),
        run_cnt: 1000,
    })
    .collect();
    WindowCosts {
        progs,
        parts: PartClocks {
            kernel_stacks_ns: ns(kstacks),
            user_walk_ns: ns(walks),
        },
    }
}

#[test]
fn off_never_sheds() {
    assert!(Ceiling::new(None).is_none());
    assert!(Ceiling::new(Some(0.0)).is_none());
}

#[test]
fn under_budget_sheds_nothing() {
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    for _ in 0..10 {
        assert!(!c.judge(&window(1.0, 1.0, 0.9), S, 5));
    }
    let s = c.shed();
    assert!(!s.active());
    assert_eq!(s.kernel_stacks_1_in, Some(1));
    assert!(!s.user_stacks_off);
    assert_eq!(s.bpf_kstack_shed(), 0);
    assert_eq!(s.text(), None);
    assert_eq!(s.decided_at_pct, 2.9);
}

#[test]
fn kernel_stacks_halve_then_stop_then_user_stacks_go() {
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    let storm = window(20.0, 2.0, 1.0);
    for (i, n) in [2u64, 4, 8, 16, 32, 64].into_iter().enumerate() {
        assert!(c.judge(&storm, S, 100 + i as u64));
        let s = c.shed();
        assert_eq!(s.kernel_stacks_1_in, Some(n));
        assert_eq!(s.bpf_kstack_shed(), n.trailing_zeros());
        // Since the first step, not the latest.
        assert_eq!(s.since_mono_ns, Some(100));
    }
    assert!(c.judge(&storm, S, 200));
    assert_eq!(c.shed().kernel_stacks_1_in, None);
    assert_eq!(c.shed().bpf_kstack_shed(), BPF_KSHED_OFF);
    assert!(!c.shed().user_stacks_off);
    assert!(c.judge(&storm, S, 201));
    assert!(c.shed().user_stacks_off);
    assert_eq!(
        c.shed().text().as_deref(),
        Some("shed: kernel stacks off, user stacks off")
    );
    // Nothing left to shed: it stays as it is.
    assert!(!c.judge(&storm, S, 202));
}

#[test]
fn a_part_that_costs_little_is_not_shed() {
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    // Over budget, but contention_begin runs for less than a quarter of it: the futex
    // programs' user stacks go first, and kernel stacks stay whole.
    assert!(c.judge(&window(0.5, 4.0, 1.0), S, 7));
    let s = c.shed();
    assert!(s.user_stacks_off);
    assert_eq!(s.kernel_stacks_1_in, Some(1));
    assert_eq!(s.text().as_deref(), Some("shed: user stacks off"));
    // Over budget in programs that shed nothing (sched_switch): no step.
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    assert!(!c.judge(&window(0.1, 0.1, 9.0), S, 7));
    assert!(!c.shed().active());
}

#[test]
fn kernel_stacks_are_judged_by_their_own_clock() {
    // A kernel-lock storm whose counting alone is over the budget: contention_begin runs
    // for 4% of a CPU, of which its stacks 2.4% with all kept, half that at 1 in 2 ...
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    let storm = |kept_1_in: u64| window_k(4.0, 2.4 / kept_1_in as f64, 0.0, 1.0);
    assert!(c.judge(&storm(1), S, 1));
    assert!(c.judge(&storm(2), S, 2));
    assert_eq!(c.shed().kernel_stacks_1_in, Some(4));
    // At 1 in 4 the stacks cost 0.6%, under a quarter of the budget: they stay so, though
    // the programs are still over it.
    assert!(!c.judge(&storm(4), S, 3));
    assert!(!c.judge(&storm(4), S, 4));
    assert_eq!(c.shed().kernel_stacks_1_in, Some(4));
    assert_eq!(c.shed().text().as_deref(), Some("shed: kernel stacks 1/4"));
    // contention_begin's run time is not what is judged: the same program with its stacks
    // clocked at nothing sheds nothing.
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    assert!(!c.judge(&window_k(9.0, 0.0, 0.0, 1.0), S, 5));
    assert!(!c.shed().active());
}

#[test]
fn gives_back_last_step_first_after_calm_windows() {
    let mut c = Ceiling::new(Some(4.0)).unwrap();
    assert!(c.judge(&window(10.0, 0.0, 0.0), S, 1));
    assert!(c.judge(&window(10.0, 0.0, 0.0), S, 2));
    assert!(c.judge(&window(0.0, 5.0, 0.0), S, 3));
    assert_eq!(
        c.shed().text().as_deref(),
        Some("shed: kernel stacks 1/4, user stacks off")
    );
    // Between half the budget and the budget: held (the band of the hysteresis), and
    // the calm windows counted so far start again.
    assert!(!c.judge(&window(1.0, 0.0, 0.0), S, 4));
    assert!(!c.judge(&window(3.0, 0.0, 0.0), S, 5));
    assert!(!c.judge(&window(1.0, 0.0, 0.0), S, 6));
    assert!(c.shed().user_stacks_off);
    // RECOVER_WINDOWS calm windows in a row give back one step: the last one taken.
    assert!(c.judge(&window(1.0, 0.0, 0.0), S, 7));
    assert!(!c.shed().user_stacks_off);
    assert_eq!(c.shed().kernel_stacks_1_in, Some(4));
    for _ in 1..RECOVER_WINDOWS {
        assert!(!c.judge(&window(1.0, 0.0, 0.0), S, 8));
    }
    assert!(c.judge(&window(1.0, 0.0, 0.0), S, 9));
    assert_eq!(c.shed().kernel_stacks_1_in, Some(2));
    assert!(c.shed().active());
    for _ in 1..RECOVER_WINDOWS {
        assert!(!c.judge(&window(1.0, 0.0, 0.0), S, 10));
    }
    assert!(c.judge(&window(1.0, 0.0, 0.0), S, 11));
    let s = c.shed();
    assert!(!s.active());
    assert_eq!(s.since_mono_ns, None);
    assert_eq!(s.kernel_stacks_1_in, Some(1));
}

#[test]
fn window_length_scales_the_share() {
    // 60 ms of run time over a 2 s window is 3%: at the budget, not over it.
    let mut c = Ceiling::new(Some(3.0)).unwrap();
    let w = WindowCosts {
        progs: vec![ProgRun {
            name: "ttop_contention_begin".into(),
            run_time_ns: 60_000_000,
            run_cnt: 1,
        }],
        parts: PartClocks {
            kernel_stacks_ns: 60_000_000,
            user_walk_ns: 0,
        },
    };
    assert!(!c.judge(&w, 2 * S, 1));
    assert!(c.judge(&w, S, 2));
}
