//! Kernel-side cost of eBPF programs: run time and run count per program, which the
//! kernel keeps only while BPF statistics are enabled (BPF_ENABLE_STATS: the returned fd
//! keeps them on while it is open, and closing it turns them off again; the kernel
//! counts the holders, so another tool's window is not cut short). Used by ttop for its
//! own cost (collect/own.rs, `ttop probe`) and by the benchmark.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{FromRawFd, OwnedFd};

/// One program's cumulative counters.
#[derive(Debug, Clone, Default)]
pub struct ProgStat {
    pub name: String,
    pub run_time_ns: u64,
    pub run_cnt: u64,
    pub recursion_misses: u64,
}

/// Turn run-time statistics on for as long as the returned fd lives.
pub fn enable_stats() -> Result<OwnedFd, String> {
    const BPF_ENABLE_STATS: libc::c_long = 32;
    const BPF_STATS_RUN_TIME: u32 = 0;
    // union bpf_attr's enable_stats member is one u32; the rest of the union is zero.
    let attr = [BPF_STATS_RUN_TIME, 0u32, 0, 0];
    // SAFETY: the bpf syscall reads `size` bytes of attr, which we own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_ENABLE_STATS,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    };
    if fd < 0 {
        return Err(format!(
            "BPF_ENABLE_STATS: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a new fd returned by the kernel, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// IDs of the BPF programs a process holds open (its skeleton's program fds and links),
/// from /proc/PID/fdinfo, so another ttop running on the machine is not counted.
pub fn prog_ids_of(pid: u32) -> Vec<u32> {
    let mut ids = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return ids;
    };
    for e in dir.flatten() {
        // Only BPF programs and links: ttop keeps thousands of /proc files open.
        let bpf = std::fs::read_link(e.path())
            .is_ok_and(|t| t.to_string_lossy().starts_with("anon_inode:bpf"));
        if !bpf {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            e.file_name().to_string_lossy()
        )) else {
            continue;
        };
        for l in text.lines() {
            if let Some(v) = l.strip_prefix("prog_id:")
                && let Ok(id) = v.trim().parse::<u32>()
            {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Counters of the given programs, by id, named through `names` (a cache by program
/// id: a program's name is read from its BTF once).
pub fn snapshot_named(ids: &[u32], names: &mut HashMap<u32, String>) -> BTreeMap<u32, ProgStat> {
    let opts = libbpf_rs::query::ProgInfoQueryOptions::default().include_func_info(true);
    libbpf_rs::query::ProgInfoIter::with_query_opts(opts)
        .filter(|p| ids.contains(&p.id))
        .map(|p| {
            let name = names
                .entry(p.id)
                .or_insert_with(|| {
                    let short = p.name.to_string_lossy().into_owned();
                    p.func_info
                        .first()
                        .and_then(|f| btf_name(p.btf_id, f.type_id))
                        .filter(|n| n.starts_with(&short))
                        .unwrap_or(short)
                })
                .clone();
            (
                p.id,
                ProgStat {
                    name,
                    run_time_ns: p.run_time_ns,
                    run_cnt: p.run_cnt,
                    recursion_misses: p.recursion_misses,
                },
            )
        })
        .collect()
}

/// Counters of the given programs, by id. Names are the programs' full function names
/// from their BTF: the kernel's own name is cut at 15 characters, which made
/// `ttop_contention_begin` and `ttop_contention_end` one row.
pub fn snapshot(ids: &[u32]) -> BTreeMap<u32, ProgStat> {
    snapshot_named(ids, &mut HashMap::new())
}

/// The name of BTF type `type_id` in the kernel's BTF object `btf_id`.
fn btf_name(btf_id: u32, type_id: u32) -> Option<String> {
    use libbpf_rs::libbpf_sys as sys;
    if btf_id == 0 {
        return None;
    }
    // SAFETY: libbpf returns an owned BTF object (or an error pointer, checked), which
    // is only read here and freed before returning; the name is copied out first.
    unsafe {
        let btf = sys::btf__load_from_kernel_by_id(btf_id);
        if btf.is_null() || sys::libbpf_get_error(btf.cast()) != 0 {
            return None;
        }
        let t = sys::btf__type_by_id(btf, type_id);
        let name = if t.is_null() {
            None
        } else {
            let n = sys::btf__name_by_offset(btf, (*t).name_off);
            (!n.is_null()).then(|| std::ffi::CStr::from_ptr(n).to_string_lossy().into_owned())
        };
        sys::btf__free(btf);
        name
    }
}

/// What each program did between two snapshots, merged by name.
pub fn diff(a: &BTreeMap<u32, ProgStat>, b: &BTreeMap<u32, ProgStat>) -> Vec<ProgStat> {
    let mut by_name: BTreeMap<String, ProgStat> = BTreeMap::new();
    for (id, s) in b {
        let p = a.get(id).cloned().unwrap_or_default();
        let e = by_name.entry(s.name.clone()).or_insert_with(|| ProgStat {
            name: s.name.clone(),
            ..Default::default()
        });
        e.run_time_ns += s.run_time_ns.saturating_sub(p.run_time_ns);
        e.run_cnt += s.run_cnt.saturating_sub(p.run_cnt);
        e.recursion_misses += s.recursion_misses.saturating_sub(p.recursion_misses);
    }
    by_name.into_values().collect()
}
