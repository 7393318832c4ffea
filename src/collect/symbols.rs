//! Symbol names for the contention views: kernel stacks from /proc/kallsyms (read once,
//! shared with the other collectors through `kallsyms`), user stacks from the ELF
//! symbol tables of the binaries a process maps.
//!
//! Cost, and why it is safe: a user stack is symbolised only for the few futex words
//! at the top of the table, once per (process, stack id), and the result is cached.
//! That needs the process's memory map, read from /proc/PID/maps at most once per
//! process every `MAPS_TTL_NS` (never from the per-tick /proc scan). Reading maps takes
//! the target's mmap_lock for reading on kernels before 6.17 (seed 002: a reader that
//! is descheduled while holding it stalls the target's writers), so it is rare and
//! bounded: `MAX_NEW_PER_TICK` new stacks per tick at most. ELF symbol tables are
//! parsed once per file (a few ms for libc; more for a large static binary).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

use super::kallsyms;

/// A process's maps are re-read at most this often (a new library may appear).
const MAPS_TTL_NS: u64 = 30_000_000_000;
/// New user stacks symbolised per tick at most (each may read one maps file).
pub const MAX_NEW_PER_TICK: usize = 4;

#[derive(Debug, Clone)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

/// Function symbols of one ELF file, by file virtual address.
struct ElfSyms {
    /// (address, size, name) sorted by address.
    syms: Vec<(u64, u64, String)>,
    /// PT_LOAD segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

impl ElfSyms {
    fn load(path: &std::path::Path) -> Option<Self> {
        // Mapped, not read: only the pages holding the symbol tables are touched, so a
        // 150 MB binary does not become 150 MB of ttop's memory.
        let f = std::fs::File::open(path).ok()?;
        // SAFETY: a read-only private mapping that is dropped before `load` returns (the
        // names are copied out). A file truncated under us could fault; binaries are
        // replaced by rename, not truncated in place, by every package manager and linker.
        let data = unsafe { memmap2::Mmap::map(&f) }.ok()?;
        let file = object::File::parse(&*data).ok()?;
        let mut syms: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        Some(Self { syms, segments })
    }

    /// File offset -> virtual address of the ELF (through its PT_LOAD segments).
    fn vaddr(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(o, sz, _)| off >= *o && off < o + sz)
            .map(|(o, _, va)| off - o + va)
    }

    fn lookup(&self, vaddr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= vaddr);
        let (a, size, name) = self.syms.get(i.checked_sub(1)?)?;
        // Size 0 (asm functions): accept within 64 KiB of the symbol.
        let within = if *size > 0 {
            vaddr < a + size
        } else {
            vaddr - a < 0x10000
        };
        within.then_some((name.as_str(), vaddr - a))
    }
}

#[derive(Default)]
pub struct Symbolizer {
    maps: HashMap<u32, (u64, Arc<Vec<Mapping>>)>,
    elfs: HashMap<PathBuf, Option<Arc<ElfSyms>>>,
    user: HashMap<(u32, i32), (String, Vec<String>)>,
    kernel: HashMap<i32, (String, Vec<String>)>,
    lock_text: Option<(u64, u64)>,
    kernel_loaded: bool,
}

/// Kernel functions that are the locking machinery (or the tracing of it), not a caller.
fn is_kernel_lock_fn(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "bpf_",
        "__bpf_",
        "__traceiter_",
        "trace_",
        "perf_",
        "_raw_",
        "raw_spin",
        "queued_",
        "native_queued",
        "__pv_queued",
        "pv_",
        "do_raw_",
        "mutex_",
        "__mutex_",
        "ww_mutex",
        "down_",
        "__down",
        "up_",
        "rwsem_",
        "__rwsem",
        "rt_mutex",
        "__rt_mutex",
        "rt_spin",
        "rtlock_",
        "percpu_down",
        "__percpu_down",
        "percpu_rwsem",
        "osq_",
        "lock_",
        "__lock_",
        "spin_",
        "read_lock",
        "write_lock",
        "_read_lock",
        "_write_lock",
        "mmap_read_lock",
        "mmap_write_lock",
        "lock_mm_and_find_vma",
        "contention_",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// User functions that are the futex/lock wrappers of libc and friends, not a caller.
fn is_user_lock_fn(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "syscall",
        "__syscall",
        "futex",
        "__futex",
        "__GI___futex",
        "__lll_",
        "lll_",
        "__pthread_",
        "pthread_",
        "___pthread_",
        "__GI___pthread",
        "sem_",
        "__new_sem",
        "__old_sem",
        "runtime.futex",
        "runtime.lock",
        "runtime.unlock",
        "runtime.notesleep",
        "runtime.notetsleep",
        "runtime.semasleep",
        "std::sys::",
        "std::sync::",
        "__libc_",
        "___lll",
        "__GI___lll",
        "do_futex_wait",
        "__new_sem_wait",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

impl Symbolizer {
    fn load_kernel(&mut self) {
        if self.kernel_loaded {
            return;
        }
        self.kernel_loaded = true;
        let (s, e) = (
            kallsyms::addr_of("__lock_text_start"),
            kallsyms::addr_of("__lock_text_end"),
        );
        if s != 0 && e > s {
            self.lock_text = Some((s, e));
        }
    }

    fn kernel_name(&self, ip: u64) -> String {
        match kallsyms::name_of(ip) {
            Some(n) => {
                let base = kallsyms::addr_of(&n);
                if base != 0 && ip >= base {
                    format!("{n}+{:#x}", ip - base)
                } else {
                    n
                }
            }
            None => format!("{ip:#x}"),
        }
    }

    /// (caller, frames) of a kernel stack: the caller is the first frame that is not
    /// in the lock text section and not a locking or tracing function.
    pub fn kernel_stack(&mut self, id: i32, ips: &[u64]) -> (String, Vec<String>) {
        if let Some(v) = self.kernel.get(&id) {
            return v.clone();
        }
        self.load_kernel();
        let mut caller = String::new();
        let mut frames = Vec::with_capacity(ips.len());
        for &ip in ips {
            let name = kallsyms::name_of(ip).unwrap_or_default();
            let in_lock_text = self.lock_text.is_some_and(|(s, e)| ip >= s && ip < e);
            let full = self.kernel_name(ip);
            if caller.is_empty() && !name.is_empty() && !in_lock_text && !is_kernel_lock_fn(&name) {
                caller = full.clone();
            }
            frames.push(full);
        }
        if caller.is_empty() {
            caller = frames.first().cloned().unwrap_or_default();
        }
        let v = (caller, frames);
        if id >= 0 {
            self.kernel.insert(id, v.clone());
        }
        v
    }

    pub fn has_user(&self, pid: u32, id: i32) -> bool {
        self.user.contains_key(&(pid, id))
    }

    /// (caller, frames) of a user stack of `pid`: the caller is the first frame outside
    /// libc's futex and pthread wrappers.
    pub fn user_stack(
        &mut self,
        pid: u32,
        id: i32,
        ips: &[u64],
        now_ns: u64,
    ) -> (String, Vec<String>) {
        if let Some(v) = self.user.get(&(pid, id)) {
            return v.clone();
        }
        let maps = self.maps_of(pid, now_ns);
        let mut caller = String::new();
        let mut frames = Vec::with_capacity(ips.len());
        for &ip in ips {
            let (name, full) = self.user_name(pid, &maps, ip);
            if caller.is_empty() && !name.is_empty() && !is_user_lock_fn(&name) {
                caller = full.clone();
            }
            frames.push(full);
        }
        if caller.is_empty() {
            caller = frames.first().cloned().unwrap_or_default();
        }
        let v = (caller, frames);
        self.user.insert((pid, id), v.clone());
        v
    }

    /// Forget what belongs to processes that are gone.
    pub fn retain_pids(&mut self, live: impl Fn(u32) -> bool) {
        self.maps.retain(|p, _| live(*p));
        self.user.retain(|(p, _), _| live(*p));
    }

    fn maps_of(&mut self, pid: u32, now_ns: u64) -> Arc<Vec<Mapping>> {
        if let Some((t, m)) = self.maps.get(&pid)
            && now_ns.saturating_sub(*t) < MAPS_TTL_NS
        {
            return m.clone();
        }
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        let maps: Vec<Mapping> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let range = it.next()?;
                let perms = it.next()?;
                let offset = u64::from_str_radix(it.next()?, 16).ok()?;
                let _dev = it.next()?;
                let _ino = it.next()?;
                let path: String = it.collect::<Vec<_>>().join(" ");
                if !perms.contains('x') || !path.starts_with('/') {
                    return None;
                }
                let (s, e) = range.split_once('-')?;
                Some(Mapping {
                    start: u64::from_str_radix(s, 16).ok()?,
                    end: u64::from_str_radix(e, 16).ok()?,
                    offset,
                    path,
                })
            })
            .collect();
        let m = Arc::new(maps);
        self.maps.insert(pid, (now_ns, m.clone()));
        m
    }

    fn elf(&mut self, pid: u32, path: &str) -> Option<Arc<ElfSyms>> {
        // Through the process's root, so binaries inside containers resolve too.
        let p = PathBuf::from(format!("/proc/{pid}/root{path}"));
        let key = PathBuf::from(path);
        if let Some(e) = self.elfs.get(&key) {
            return e.clone();
        }
        let e = ElfSyms::load(&p).map(Arc::new);
        self.elfs.insert(key, e.clone());
        e
    }

    /// (bare symbol name, "symbol+0xoff" or "file+0xoff" or "0xaddr").
    fn user_name(&mut self, pid: u32, maps: &[Mapping], ip: u64) -> (String, String) {
        let Some(m) = maps.iter().find(|m| ip >= m.start && ip < m.end) else {
            return (String::new(), format!("{ip:#x}"));
        };
        let off = ip - m.start + m.offset;
        let file = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let Some(elf) = self.elf(pid, &m.path.clone()) else {
            return (String::new(), format!("{file}+{off:#x}"));
        };
        match elf.vaddr(off).and_then(|va| elf.lookup(va)) {
            Some((name, d)) => (name.to_string(), format!("{name}+{d:#x}")),
            None => (String::new(), format!("{file}+{off:#x}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_machinery_is_not_a_caller() {
        for n in [
            "_raw_spin_lock",
            "__mutex_lock.constprop.0",
            "rwsem_down_write_slowpath",
            "down_read",
            "__traceiter_contention_begin",
        ] {
            assert!(is_kernel_lock_fn(n), "{n}");
        }
        for n in [
            "do_mmap",
            "__x64_sys_munmap",
            "environ_read",
            "ext4_write_end",
        ] {
            assert!(!is_kernel_lock_fn(n), "{n}");
        }
        for n in [
            "syscall",
            "__lll_lock_wait",
            "pthread_mutex_lock",
            "___pthread_cond_wait",
            "runtime.futex",
        ] {
            assert!(is_user_lock_fn(n), "{n}");
        }
        assert!(!is_user_lock_fn("worker"));
    }

    /// Our own binary resolves one of our own functions.
    #[test]
    fn resolves_own_function() {
        let mut s = Symbolizer::default();
        let ip = lock_machinery_is_not_a_caller as *const () as u64;
        let (caller, frames) = s.user_stack(std::process::id(), 1, &[ip], 0);
        assert_eq!(frames.len(), 1);
        assert!(
            caller.contains("lock_machinery_is_not_a_caller"),
            "{caller}"
        );
    }
}
