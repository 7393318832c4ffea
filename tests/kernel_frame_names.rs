//! How the frames of user stacks are named (issue 19): glibc's from its separate debug
//! file, a stripped program's from its build-id debug file or its MiniDebugInfo, C++
//! demangled with its inlined calls and lines, Go's from the Go runtime's own symbols.
//! The unwinding itself is checked in kernel_unwind.rs. Needs root.

mod common;

use std::process::Command;

use common::watch::*;
use common::*;
use serde_json::Value;

/// The workload's futex row with the longest stack (then the most contended): the test
/// is of naming, and now and then the hottest row's stack is a lone raw address (a CI
/// run: `["0x7f9a1e4b3f16"]`, its walk and copy lost; not reproduced in 4 runs by hand).
fn deepest(frames: &[Value], pid: u64) -> Value {
    let depth = |w: &Value| w["stack"].as_array().map_or(0, Vec::len);
    frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid && depth(w) > 0)
        .max_by_key(|w| (depth(w), w["contended"].as_u64().unwrap()))
        .unwrap_or_else(|| panic!("no futex row with a stack for {pid}"))
        .clone()
}

/// glibc's own frames are named from its separate debug file (libc6-dbg, found by
/// build-id under /usr/lib/debug), so the waiter's innermost frame reads as this glibc's
/// lock function instead of libc.so.6+0x...; the caller stays the program's.
#[test]
fn glibc_frames_are_named_from_its_debug_file() {
    if !require_root("glibc_frames_are_named_from_its_debug_file") {
        return;
    }
    if !require_glibc_debug() {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(4, &[], || spawn_workload("deepmutex", &["4", "2"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("with libc6-dbg: {stack:?}");
    // This glibc's names, as gdb shows them: its futex wait inlined into
    // __GI___lll_lock_wait (the name the debug file's symbol table gives), under
    // ___pthread_mutex_lock.
    let base = |f: &String| f.split(['+', ' ']).next().unwrap_or("").to_string();
    let lll = stack
        .iter()
        .position(|f| base(f).ends_with("__lll_lock_wait"))
        .unwrap_or_else(|| panic!("glibc's lock wait named: {stack:?}"));
    assert!(
        stack[lll + 1..]
            .iter()
            .any(|f| base(f).ends_with("pthread_mutex_lock")),
        "glibc's mutex lock named: {stack:?}"
    );
    assert!(stack[lll].contains("lowlevellock.c:"), "{stack:?}");
    assert!(
        w["caller"]
            .as_str()
            .unwrap()
            .starts_with("level3_takes_lock"),
        "{stack:?}"
    );
}

/// A stripped program whose symbols are in a debug file under
/// /usr/lib/debug/.build-id/ (what *-dbgsym packages install) is named as if it were not
/// stripped; without the debug file its frames read module+offset.
#[test]
fn a_stripped_program_is_named_from_its_build_id_debug_file() {
    if !require_root("a_stripped_program_is_named_from_its_build_id_debug_file") {
        return;
    }
    let _g = kernel_lock();
    let dir = std::env::temp_dir().join(format!("ttop-stripped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("deepmutex-stripped");
    let dbg = dir.join("deepmutex.debug");
    std::fs::copy(workload("deepmutex"), &bin).unwrap();
    let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
        let o = Command::new(cmd).args(args).output().expect(cmd);
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    run(
        "objcopy",
        &[
            "--only-keep-debug".as_ref(),
            bin.as_os_str(),
            dbg.as_os_str(),
        ],
    );
    run("strip", &["--strip-all".as_ref(), bin.as_os_str()]);
    let notes = run("readelf", &["-n".as_ref(), bin.as_os_str()]);
    let id = String::from_utf8_lossy(&notes.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .expect("the program has a build-id");
    let place = std::path::PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    let stack_of = |bin: &std::path::Path| {
        let (frames, pid) = watch_child(4, &[], || run_piped(bin, &["4", "2"]));
        (
            names(&deepest(&frames, pid)),
            user_frames(&frames, "no_symbol"),
        )
    };
    let (bare, unnamed) = stack_of(&bin);
    eprintln!("stripped, no debug file: {bare:?}");
    assert!(!bare.iter().any(|f| f.starts_with("level")), "{bare:?}");
    assert!(
        unnamed >= 4,
        "the 4 program frames are counted unnamed: {unnamed}"
    );
    // A debug file whose build-id is not the program's (another program's, at the
    // program's build-id path) is never used: the frames stay unnamed, not misnamed.
    std::fs::create_dir_all(place.parent().unwrap()).unwrap();
    let other = dir.join("cppmutex.debug");
    run(
        "objcopy",
        &[
            "--only-keep-debug".as_ref(),
            workload("cppmutex").as_os_str(),
            other.as_os_str(),
        ],
    );
    std::fs::copy(&other, &place).unwrap();
    let (wrong, _) = stack_of(&bin);
    eprintln!("stripped, a wrong debug file at its build-id: {wrong:?}");
    assert!(
        wrong
            .iter()
            .filter(|f| f.starts_with("deepmutex-stripped+0x"))
            .count()
            >= 4,
        "{wrong:?}"
    );
    assert!(
        !wrong.iter().any(|f| f.starts_with("Worker::")),
        "{wrong:?}"
    );
    std::fs::copy(&dbg, &place).unwrap();
    let (named, _) = stack_of(&bin);
    let _ = std::fs::remove_file(&place);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("stripped, with its debug file: {named:?}");
    assert!(
        has_chain(&named, &["level3_takes_lock", "level2", "level1"]),
        "{named:?}"
    );
}

/// A program stripped the way Fedora ships it (MiniDebugInfo): no .symtab, but an
/// xz-compressed ELF in `.gnu_debugdata` holding the function symbols `.dynsym` lacks,
/// and no debug file anywhere. Its frames are named from that section.
#[test]
fn a_program_with_minidebuginfo_is_named_from_gnu_debugdata() {
    if !require_root("a_program_with_minidebuginfo_is_named_from_gnu_debugdata") {
        return;
    }
    let _g = kernel_lock();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("minidebug");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("deepmutex-mini");
    std::fs::copy(workload("deepmutex"), &bin).unwrap();
    // Fedora's find-debuginfo recipe: function symbols not in .dynsym, from the
    // debug-only copy, xz-compressed into .gnu_debugdata of the stripped program.
    let script = r#"set -e
b="$1"; cd "$(dirname "$b")"
nm -D "$b" --format=posix --defined-only | awk '{print $1}' | sort > dynsyms
nm "$b" --format=posix --defined-only | awk '$2=="T"||$2=="t"||$2=="D"{print $1}' | sort > funcsyms
comm -13 dynsyms funcsyms > keep
objcopy --only-keep-debug "$b" debug
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep debug mini
xz -f mini
strip --strip-all "$b"
objcopy --add-section .gnu_debugdata=mini.xz "$b"
"#;
    let o = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(&bin)
        .output()
        .expect("sh");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sections = Command::new("readelf")
        .arg("-SW")
        .arg(&bin)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    assert!(sections.contains(".gnu_debugdata"), "{sections}");
    assert!(!sections.contains(".symtab"), "{sections}");
    let (frames, pid) = watch_child(4, &[], || run_piped(&bin, &["4", "2"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("MiniDebugInfo stack: {stack:?}, caller {}", w["caller"]);
    assert!(
        has_chain(&stack, &["level3_takes_lock", "level2", "level1"]),
        "{stack:?}"
    );
    assert!(
        w["caller"]
            .as_str()
            .unwrap()
            .starts_with("level3_takes_lock"),
        "caller {}",
        w["caller"]
    );
}

/// C++: names are demangled, a call inlined into its caller is a frame of its own (as
/// perf and gdb show it), and frames carry file:line from the program's DWARF.
#[test]
fn cpp_frames_are_demangled_with_inlined_calls_and_lines() {
    if !require_root("cpp_frames_are_demangled_with_inlined_calls_and_lines") {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(4, &[], || spawn_workload("cppmutex", &["4", "2"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("cppmutex stack: {stack:?}, caller {}", w["caller"]);
    let at = |name: &str| {
        stack
            .iter()
            .position(|f| f.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {stack:?}"))
    };
    let take = at("Worker::take_lock()+0x");
    assert!(
        stack[take + 1].starts_with("Worker::step() (inlined) cppmutex.cpp:")
            && stack[take + 2].starts_with("Worker::run()+0x"),
        "take_lock <- step (inlined) <- run: {stack:?}"
    );
    assert!(stack[take].contains(" cppmutex.cpp:"), "{stack:?}");
    assert!(
        w["caller"]
            .as_str()
            .unwrap()
            .starts_with("Worker::take_lock()+0x"),
        "caller {} for {stack:?}",
        w["caller"]
    );
}

/// Seed 003's idle Go program: its futex calls all come from the Go runtime, and its
/// stacks read as Go names (runtime.futex <- runtime.notesleep <- ...), the caller the
/// first frame outside the runtime's futex and note code (the M parking).
#[test]
fn go_futex_waits_are_named_from_the_go_runtime() {
    if !require_root("go_futex_waits_are_named_from_the_go_runtime") {
        return;
    }
    let Some(go) = go_bin() else {
        assert!(!is_ci(), "CI installs a Go toolchain (.ci/deps)");
        eprintln!("skipped: no Go toolchain (apt-get install golang-go)");
        return;
    };
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("go");
    std::fs::create_dir_all(&tmp).unwrap();
    let bin = tmp.join("goidle");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/goidle.go");
    let out = Command::new(&go)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(&src)
        .env("GOCACHE", tmp.join("cache"))
        .env("GOPATH", tmp.join("gopath"))
        .env("GO111MODULE", "off")
        .env("HOME", &tmp)
        .output()
        .expect("run go build");
    assert!(
        out.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _g = kernel_lock();
    let (frames, pid) = watch_child(4, &[], || run_piped(&bin, &["8", "2.5"]));
    let rows: Vec<&Value> = frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid && w["stack"].as_array().is_some_and(|s| !s.is_empty()))
        .collect();
    assert!(
        !rows.is_empty(),
        "no futex row with a stack for the Go program {pid}"
    );
    // Waits that slept (the default counts those, from the scheduler, not calls).
    let slept: u64 = frames
        .iter()
        .flat_map(|f| f["futexes"].as_array().unwrap())
        .filter(|w| w["pid"] == pid)
        .map(|w| w["contended"].as_u64().unwrap())
        .sum();
    // 8 goroutines waking every ms on 2 CPUs: the runtime parks and wakes Ms constantly.
    assert!(
        slept > 250,
        "the idle Go program slept in only {slept} futex waits"
    );
    for w in &rows {
        let stack = names(w);
        let caller = w["caller"].as_str().unwrap();
        eprintln!("go stack: {stack:?}, caller {caller}");
        assert!(stack[0].starts_with("runtime.futex+0x"), "{stack:?}");
        assert!(
            stack.iter().all(|f| f.starts_with("runtime.")),
            "every frame named, in the runtime: {stack:?}"
        );
        assert!(
            stack.iter().any(|f| f.contains(".go:")),
            "Go's DWARF gives lines: {stack:?}"
        );
        for lock in ["runtime.futex", "runtime.notesleep", "runtime.notetsleep"] {
            assert!(
                !caller.starts_with(lock),
                "caller {caller} is lock code: {stack:?}"
            );
        }
    }
    assert!(
        rows.iter()
            .any(|w| names(w).iter().any(|f| f.starts_with("runtime.notesleep+"))),
        "an M parking on its note"
    );
}
