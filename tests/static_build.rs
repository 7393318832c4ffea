//! The one-file build (issue 23): `.ci/static-build` produces a ttop with no ELF
//! interpreter and no shared-library dependency (glibc, libbpf, libelf, zlib and zstd linked
//! in), and it runs `--json -n 1` with eBPF. The build goes to target/static and cargo
//! skips it when it is up to date, so only the first run pays for it. It is built with
//! the script's every flag but under Cargo.toml's static-check profile (release, not
//! optimised): the linkage checked here is the same at any optimisation level, and a
//! from-scratch build takes well under half the release one's time (165 s against 458 s on
//! two busy cores; seconds afterwards).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::*;

#[test]
fn static_build_depends_on_nothing_but_the_kernel() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let t0 = Instant::now();
    let o = Command::new("bash")
        .arg(root.join(".ci/static-build"))
        .env("CARGO_QUIET", "1")
        .env("STATIC_PROFILE", "static-check")
        // The outer `cargo test` sets these for its own build; the static build has its own.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run .ci/static-build");
    assert!(
        o.status.success(),
        "static build failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!(
        "static build (or up-to-date check): {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let bin = root.join(String::from_utf8(o.stdout).unwrap().trim());
    let dynamic = Command::new("readelf")
        .args(["-d", "-l", "-W"])
        .arg(&bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.status.success(),
        "readelf: {}",
        String::from_utf8_lossy(&dynamic.stderr)
    );
    assert!(
        !text.contains("(NEEDED)"),
        "links shared libraries:\n{text}"
    );
    assert!(
        !text.contains("INTERP"),
        "has an ELF interpreter (a dynamic executable):\n{text}"
    );
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout) + String::from_utf8_lossy(&ldd.stderr);
    assert!(
        ldd.contains("statically linked") || ldd.contains("not a dynamic executable"),
        "{ldd}"
    );
    let run = Command::new(&bin)
        .args(["--json", "-n", "1", "-d", "0.3"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let line = String::from_utf8(run.stdout).unwrap();
    let frame: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON frame");
    assert!(frame["procs"].as_array().is_some_and(|p| !p.is_empty()));
    if require_root("static_build_depends_on_nothing_but_the_kernel (eBPF part)") {
        assert_eq!(
            frame["mode"], "bpf",
            "the static binary runs without eBPF: {:?}",
            frame["problems"]
        );
    }
}
