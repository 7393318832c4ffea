//! User stacks without frame pointers (issue 19, item 1): a pthread mutex contended
//! three calls deep in a program built -O2 (no frame pointers, as glibc here) must come
//! out whole in `futexes[].stack`, unwound from the modules' .eh_frame, with the
//! program's function as the caller; and the walk holds up where unwinding is hard (JIT
//! code, a corrupt .eh_frame, a deleted binary). How the frames are named is checked in
//! kernel_frame_names.rs, which stack a word keeps in kernel_stack_copies.rs. Needs root.

mod common;

use std::process::{Command, Stdio};

use common::watch::*;
use common::*;

#[test]
fn a_stack_without_frame_pointers_comes_out_whole() {
    if !require_root("a_stack_without_frame_pointers_comes_out_whole") {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(5, &[], || spawn_workload("deepmutex", &["4", "3"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("deepmutex stack: {stack:?}, caller {}", w["caller"]);
    assert!(
        has_chain(&stack, &["level3_takes_lock", "level2", "level1"]),
        "the chain in order: {stack:?}"
    );
    // The thread's start is reached too: the walk got through the program and past it.
    let l1 = stack.iter().position(|f| f.starts_with("level1")).unwrap();
    assert!(stack.len() > l1 + 1, "the walk ends at level1: {stack:?}");
    // Built with -g: each of the program's frames says where in the source it is.
    assert!(
        stack[l1].contains(" deepmutex.c:"),
        "no file:line: {stack:?}"
    );
    assert!(
        w["caller"]
            .as_str()
            .unwrap()
            .starts_with("level3_takes_lock"),
        "caller {} for {stack:?}",
        w["caller"]
    );
}

/// JIT code (an anonymous executable mapping, no file, no unwind table) between the
/// thread and the lock: glibc's frames are still named, the JIT frame reads as its
/// address and is counted as in no file mapping; nothing fails.
#[test]
fn jit_code_is_kept_as_an_address_and_counted() {
    if !require_root("jit_code_is_kept_as_an_address_and_counted") {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(4, &[], || spawn_workload("jitmutex", &["4", "2"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("jit stack: {stack:?}, caller {}", w["caller"]);
    let lock = stack
        .iter()
        .position(|f| f.contains("pthread_mutex_lock+"))
        .unwrap_or_else(|| panic!("glibc's frames named: {stack:?}"));
    assert!(
        stack.get(lock + 1).is_some_and(|f| f.starts_with("0x")),
        "the JIT frame after the lock reads as an address: {stack:?}"
    );
    assert!(
        user_frames(&frames, "no_mapping") >= 1,
        "counted as in no mapping"
    );
    // Nothing outside the lock code is named: the caller is the JIT address.
    assert!(
        w["caller"].as_str().unwrap().starts_with("0x"),
        "{}",
        w["caller"]
    );
}

/// A program whose .eh_frame is garbage (overwritten in place, same size): ttop keeps the
/// stack as far as it can (glibc's frames and the first program frame, reached with
/// glibc's own tables), and neither crashes nor invents frames past it.
#[test]
fn a_corrupt_eh_frame_keeps_what_it_can() {
    if !require_root("a_corrupt_eh_frame_keeps_what_it_can") {
        return;
    }
    let _g = kernel_lock();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("corrupt");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("deepmutex-badcfi");
    let junk = dir.join("junk");
    let src = workload("deepmutex");
    let dump = Command::new("readelf")
        .args(["-SW"])
        .arg(&src)
        .output()
        .unwrap();
    let size = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .find(|l| l.contains(" .eh_frame ") && !l.contains("_hdr"))
        .and_then(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let i = f.iter().position(|x| *x == ".eh_frame")?;
            usize::from_str_radix(f.get(i + 4)?, 16).ok()
        })
        .expect("the program's .eh_frame size");
    let garbage: Vec<u8> = (0..size).map(|i| (i * 37 + 11) as u8).collect();
    std::fs::write(&junk, garbage).unwrap();
    let o = Command::new("objcopy")
        .arg(format!("--update-section=.eh_frame={}", junk.display()))
        .arg(&src)
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (frames, pid) = watch_child(4, &[], || run_piped(&bin, &["4", "2"]));
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("corrupt .eh_frame: {stack:?}");
    let l3 = stack
        .iter()
        .position(|f| f.starts_with("level3_takes_lock+"))
        .unwrap_or_else(|| panic!("glibc's tables reach the program: {stack:?}"));
    assert!(
        stack[..l3]
            .iter()
            .any(|f| f.contains("pthread_mutex_lock+")),
        "{stack:?}"
    );
}

/// The control: the frame-pointer walk alone (TTOP_NO_DWARF=1) loses the chain in the
/// C library, which is why the stacks are unwound from .eh_frame.
#[test]
fn frame_pointers_alone_lose_the_chain() {
    if !require_root("frame_pointers_alone_lose_the_chain") {
        return;
    }
    let _g = kernel_lock();
    let (frames, pid) = watch_child(4, &[("TTOP_NO_DWARF", "1")], || {
        spawn_workload("deepmutex", &["4", "2"])
    });
    let stack = names(&hottest(&frames, pid));
    eprintln!("frame pointers only: {stack:?}");
    assert!(
        !has_chain(&stack, &["level3_takes_lock", "level2", "level1"]),
        "this glibc has frame pointers after all: {stack:?}"
    );
}

/// A binary deleted after it started: its path no longer opens, but the file it mapped
/// is still there through /proc/PID/map_files, so its frames unwind and are named.
#[test]
fn a_deleted_binary_does_not_break_the_walk() {
    if !require_root("a_deleted_binary_does_not_break_the_walk") {
        return;
    }
    let _g = kernel_lock();
    let src = workload("deepmutex");
    let copy = std::env::temp_dir().join(format!("deepmutex-deleted-{}", std::process::id()));
    std::fs::copy(&src, &copy).unwrap();
    let mut pid = 0;
    let frames = watch(4, || {
        let mut w = Command::new(&copy)
            .args(["4", "2"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        pid = pid_of(&mut w);
        std::fs::remove_file(&copy).unwrap();
        w
    });
    let w = hottest(&frames, pid);
    let stack = names(&w);
    eprintln!("deleted binary's stack: {stack:?}");
    // Read through /proc/PID/map_files, the deleted file still unwinds and is named.
    assert!(
        has_chain(&stack, &["level3_takes_lock", "level2", "level1", "worker"]),
        "the deleted program's chain: {stack:?}"
    );
}
