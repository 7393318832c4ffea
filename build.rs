//! Compiles every `bpf/*.bpf.c` into a libbpf-rs skeleton (`$OUT_DIR/<name>.skel.rs`).
//!
//! The Rust types for the structs in `bpf/ttop.h` come from the objects' BTF through
//! the skeleton (`types::cpu_stats`, ...), so C and Rust share one definition.

use std::env;
use std::path::PathBuf;
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    if Command::new(&clang).arg("--version").output().is_err() {
        panic!(
            "\n\nttop needs clang to compile its eBPF programs, and `{clang}` was not found.\n\
             On Debian/Ubuntu: sudo apt-get install -y clang libelf-dev\n\
             (or run `bash .ci/deps` from the repository root).\n\n"
        );
    }
    // One vmlinux.h per supported architecture, in bpf/<arch>/ (generated from that
    // architecture's kernel BTF: `bpftool btf dump file /sys/kernel/btf/vmlinux format c`).
    // Another architecture's types would compile and then read the wrong offsets.
    let target = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let arch = match target.as_str() {
        "x86_64" => "x86",
        other => panic!(
            "\n\nttop's eBPF programs are built for x86_64 only: there is no \
             bpf/<arch>/vmlinux.h for {other:?}.\nAdd one (bpftool btf dump file \
             /sys/kernel/btf/vmlinux format c > bpf/<arch>/vmlinux.h on that architecture) \
             and map {other:?} to it in build.rs.\n\n"
        ),
    };
    // Every header and program (a directory is watched whole, new files included).
    println!("cargo:rerun-if-changed=bpf");
    let mut entries: Vec<_> = std::fs::read_dir("bpf")
        .expect("bpf/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    entries.sort();
    for src in entries {
        println!("cargo:rerun-if-changed={}", src.display());
        let stem = src
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".bpf.c")
            .to_string();
        let skel = out.join(format!("{stem}.skel.rs"));
        SkeletonBuilder::new()
            .source(&src)
            .clang(&clang)
            .clang_args([
                format!("-D__TARGET_ARCH_{arch}"),
                "-Ibpf".to_string(),
                format!("-Ibpf/{arch}"),
                "-Wall".to_string(),
                "-Wno-unused-function".to_string(),
            ])
            .build_and_generate(&skel)
            .unwrap_or_else(|e| panic!("building the eBPF program {}: {e:#}", src.display()));
    }
}
