//! CI's short run of the benchmark suite (benches/system): every measurement runs in
//! quick mode and the table is printed with every row. Timings are not enforced (a
//! shared CI machine cannot hold them); they are printed so a broken measurement shows.
//! One ratio is: ttop's eBPF cost per context switch against the empty-program build's,
//! both measured in this run (the cost gate, `FLOOR_GATE`).
//! Needs root (eBPF and BPF statistics).

mod common;

#[path = "../benches/system/suite/mod.rs"]
#[allow(dead_code)]
mod suite;

#[test]
fn quick_suite_prints_every_row() {
    if !common::require_root("quick_suite_prints_every_row") {
        return;
    }
    let _g = common::kernel_lock();
    let opts = suite::Opts::quick();
    let rows = suite::run(&opts);
    let load = suite::loadavg();
    let table = suite::markdown(&rows, &opts, &load, &load);
    println!("{table}");
    for key in suite::ROW_KEYS {
        let row = rows
            .iter()
            .find(|r| r.key == *key)
            .unwrap_or_else(|| panic!("row {key} is missing from the table:\n{table}"));
        assert!(
            table.contains(&row.what),
            "row {key} is not in the printed table"
        );
        assert!(
            !row.ttop.is_empty() && !row.ttop.contains("NaN") && !row.ttop.starts_with("n/a"),
            "row {key} measured nothing: {:?}",
            row.ttop
        );
    }
    // Per-program rows exist for both workloads (at least sched_switch ran).
    for w in ["churn", "mutex"] {
        assert!(
            rows.iter()
                .any(|r| r.key.starts_with(&format!("bpf-{w}-ttop_"))),
            "no per-program BPF row under {w}:\n{table}"
        );
    }
    // The cost gate (issue 51): BPF statistics' ns per switch under the switch storm
    // over the empty-program build's, both measured here. A ratio, not a timing: the
    // floor moves with the machine as ttop does.
    let net = rows.iter().find(|r| r.key == "bpf-switch-net").unwrap();
    let ratio: f64 = net
        .ratio
        .parse()
        .unwrap_or_else(|_| panic!("no ratio to the floor: {net:?}"));
    assert!(
        ratio <= suite::bpf_cost::FLOOR_GATE,
        "ttop's programs cost {ratio:.2} × the empty-program build's under the switch \
         storm (gate {}): {net:?}",
        suite::bpf_cost::FLOOR_GATE
    );
    // The thread-creation storm was counted by ttop (numbers, not timings).
    let count = rows.iter().find(|r| r.key == "scale-count").unwrap();
    assert!(
        count.verdict == "met",
        "ttop lost thread creations without reporting them: {count:?}"
    );
}
