//! Kernel symbols asked of the kernel (bpf/ksym.bpf.c) against /proc/kallsyms, the
//! reference they replace on the start-up path: every answer must be the file's. Needs
//! root (CI runs as root and never skips).

use std::collections::HashMap;

use ttop::collect::stacks::kallsyms::Kallsyms;
use ttop::collect::stacks::ksym_prog::KsymProg;

fn table() -> (Kallsyms, Vec<(u64, String)>) {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
    let k = Kallsyms::parse(&text).expect("kallsyms shows addresses (run as root)");
    // (address, name) of the core kernel's text symbols, in address order.
    let mut core: Vec<(u64, String)> = text
        .lines()
        .filter(|l| !l.contains('['))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, t, n) = (f.next()?, f.next()?, f.next()?);
            let a = u64::from_str_radix(a, 16).ok()?;
            matches!(t, "t" | "T").then(|| (a, n.to_string()))
        })
        .collect();
    core.sort();
    (k, core)
}

#[test]
fn the_kernels_answers_are_the_files() {
    let (k, core) = table();
    let mut prog = KsymProg::load().expect("the ksym program loads on this kernel (6.18)");
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, n) in &core {
        *count.entry(n.as_str()).or_default() += 1;
    }
    let mut at: HashMap<u64, Vec<&str>> = HashMap::new();
    for (a, n) in &core {
        at.entry(*a).or_default().push(n);
    }

    // By name: 400 names spread over the kernel's text, plus the ones ttop needs at
    // start. Only names the kernel has once (static functions repeat).
    let step = (core.len() / 400).max(1);
    let mut names: Vec<&str> = core
        .iter()
        .step_by(step)
        .map(|(_, n)| n.as_str())
        .filter(|n| count[n] == 1)
        .collect();
    for n in [
        "flush_tlb_func",
        "do_syscall_64",
        "__lock_text_start",
        "_stext",
    ] {
        if count.get(n) == Some(&1) {
            names.push(n);
        }
    }
    assert!(names.len() > 300, "{} names", names.len());
    let got = prog.by_name(&names).unwrap();
    let mut sized = 0;
    for (n, g) in names.iter().zip(&got) {
        let g = g
            .as_ref()
            .unwrap_or_else(|| panic!("{n}: not found by the kernel"));
        assert_eq!(Some(g.start), k.addr_of(n), "{n}: address");
        // The size the kernel prints runs to the next symbol, as the file's span does
        // (where the file has a next text symbol at a higher address).
        if let Some((_, span)) = k.span_of(n) {
            assert_eq!(g.size, span, "{n}: size");
            sized += 1;
        }
    }
    assert!(sized > 300, "{sized} sizes compared");
    assert_eq!(
        prog.by_name(&["no_such_function_in_any_kernel"]).unwrap(),
        vec![None]
    );

    // By address: an address inside each of 400 functions names the function (or an
    // alias at the same address) and its start.
    let addrs: Vec<u64> = core
        .iter()
        .step_by(step)
        .filter_map(|(a, _)| {
            let (_, span) = k.lookup(*a).and_then(|(n, _)| k.span_of(n))?;
            Some(a + span / 2)
        })
        .collect();
    let got = prog.by_addr(&addrs).unwrap();
    for (a, g) in addrs.iter().zip(&got) {
        let (name, start) = k.lookup(*a).unwrap();
        let g = g
            .as_ref()
            .unwrap_or_else(|| panic!("{a:#x} ({name}): not named"));
        assert_eq!(g.start, start, "{a:#x}: start ({} vs {name})", g.name);
        assert!(
            at[&start].contains(&g.name.as_str()),
            "{a:#x}: {} is none of {:?}",
            g.name,
            at[&start]
        );
    }
    assert!(addrs.len() > 300);
    // A user-space address is in no kernel function.
    assert_eq!(prog.by_addr(&[0x40_1000]).unwrap(), vec![None]);
}

#[test]
fn the_shared_lookups_answer_from_the_kernel() {
    use ttop::collect::stacks::kallsyms;
    let (k, _) = table();
    assert!(
        kallsyms::from_kernel(),
        "the ksym program is the source here"
    );
    let flush = kallsyms::addr_of("flush_tlb_func");
    assert_eq!(Some(flush), k.addr_of("flush_tlb_func"));
    assert_eq!(
        kallsyms::span_of("do_syscall_64"),
        k.span_of("do_syscall_64")
    );
    // The kernel text's bounds, which the lock probes' stack cache needs.
    for n in ["_stext", "_etext", "__lock_text_start", "__lock_text_end"] {
        assert_eq!(Some(kallsyms::addr_of(n)), k.addr_of(n), "{n}");
    }
    let inside = flush + 3;
    kallsyms::prefetch([inside, flush, 0]);
    assert_eq!(kallsyms::lookup(inside), Some(("flush_tlb_func", flush)));
    assert_eq!(kallsyms::name_of(flush).as_deref(), Some("flush_tlb_func"));
}

/// Both sources give the probes what they need: `ttop probe` loads everything with the
/// kernel's answers and with the file's (`TTOP_KALLSYMS=file`, the fallback before 5.16),
/// and neither reports a missing kernel address (TLB shootdowns, IPI purposes).
#[test]
fn both_sources_load_every_probe() {
    for file in [false, true] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ttop"));
        cmd.arg("probe");
        if file {
            cmd.env("TTOP_KALLSYMS", "file");
        }
        cmd.args(["--json"]);
        let out = cmd.output().expect("run ttop probe");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ttop probe failed: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("probe's JSON");
        assert_eq!(v["mode"], "bpf", "file={file}: {text}");
        let problems: Vec<&str> = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        assert!(
            !problems
                .iter()
                .any(|p| p.contains("kernel symbol") || p.contains("IPI purposes")),
            "file={file}: {problems:?}"
        );
        // The figures that need a kernel address (flush_tlb_func) are measured.
        for f in v["features"].as_array().unwrap() {
            if ["tlb_shootdowns", "tlb_caused", "ipi_sent"].contains(&f["id"].as_str().unwrap()) {
                assert_ne!(f["status"], "missing", "file={file}: {f}");
            }
        }
    }
}
