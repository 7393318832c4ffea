//! Symbol names for the contention views: kernel stacks from /proc/kallsyms (read once,
//! shared with the other collectors through `kallsyms`), user stacks from the ELF
//! symbol tables of the binaries a process maps.
//!
//! Cost, and why it is safe: a user stack is symbolised only for the few futex words
//! at the top of the table, once per (process, stack id), and the result is cached,
//! never from the per-tick /proc scan. The mapping that holds a frame is asked of the
//! kernel one address at a time (`vma`: PROCMAP_QUERY, which on 6.17+ does not take
//! the target's mmap_lock; seed 002). Only a kernel without that ioctl gets the whole
//! /proc/PID/maps text, which takes the target's mmap_lock for reading; so that stays
//! rare and bounded: at most once per process every `MAPS_TTL_NS`, and
//! `MAX_NEW_PER_TICK` new stacks per tick. ELF symbol tables are parsed once per file
//! (a few ms for libc; more for a large static binary).

use foldhash::{HashMap, HashMapExt};
use std::fs::File;

use object::{Object, ObjectSegment, ObjectSymbol, ObjectSymbolTable, SymbolKind};

use super::kallsyms;
use super::vma::{self, FileId, Found, Mapping};

/// What is known of a process's mappings is dropped after this long (a library may be
/// unmapped and another mapped in its place); without PROCMAP_QUERY it is the most
/// often a process's maps text is read.
const MAPS_TTL_NS: u64 = 30_000_000_000;
/// A binary's symbol table is dropped when no stack named through it for this long. On a
/// build machine every test binary, build script and compiler run is a new file whose
/// table (up to megabytes) would otherwise stay for the life of ttop.
const ELF_TTL_NS: u64 = 2 * MAPS_TTL_NS;
/// New user stacks symbolised per tick at most (each may read one maps text).
pub const MAX_NEW_PER_TICK: usize = 4;

/// One function symbol: its address, size, and where its name is (the index in the
/// symbol table; `DYNAMIC` set for the dynamic table).
#[derive(Clone, Copy)]
struct Sym {
    addr: u64,
    size: u64,
    index: u32,
}

const DYNAMIC: u32 = 1 << 31;
/// The symbol is in the separate debug file's table.
const DEBUG: u32 = 1 << 30;
/// Where distributions install separate debug files (libc6-dbg, *-dbgsym, debuginfo).
const DEBUG_DIR: &str = "/usr/lib/debug";

/// Function symbols of one ELF file, by file virtual address. Names are not copied
/// when the file is loaded (in a Rust binary the string table is most of the symbol
/// data): a name is read from the file when a stack first needs it, then kept.
struct ElfSyms {
    /// Sorted by address (for the largest size at one address, the first seen).
    syms: Vec<Sym>,
    /// PT_LOAD segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
    /// Names read so far, by position in `syms` (None: unreadable).
    names: HashMap<usize, Option<Box<str>>>,
    /// The separate debug file whose symbol table was added (by build-id or
    /// .gnu_debuglink, checked: same build-id, or the link's CRC).
    debug: Option<std::path::PathBuf>,
}

/// The separate debug file of `file` (mapped from `orig`, its path in the process):
/// `/usr/lib/debug/.build-id/ab/cdef....debug` with the same build-id, else the
/// `.gnu_debuglink` name under `/usr/lib/debug/DIR/`, `DIR/.debug/` or `DIR/`, whose CRC
/// matches. A debug file of another build is never used (its addresses would lie).
fn debug_file(file: &object::File, orig: &str) -> Option<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    let id = file.build_id().ok().flatten().filter(|id| id.len() >= 2);
    if let Some(id) = id {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = PathBuf::from(format!(
            "{DEBUG_DIR}/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        ));
        let same = map_file(&p).is_some_and(|d| {
            object::File::parse(&*d).is_ok_and(|f| f.build_id().ok().flatten() == Some(id))
        });
        if same {
            return Some(p);
        }
    }
    let (name, crc) = file.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = Path::new(orig).parent()?;
    let rel = dir.strip_prefix("/").unwrap_or(dir);
    [
        Path::new(DEBUG_DIR).join(rel).join(name),
        dir.join(".debug").join(name),
        dir.join(name),
    ]
    .into_iter()
    .filter(|p| p.as_path() != Path::new(orig))
    .find(|p| map_file(p).is_some_and(|d| crc32fast::hash(&d) == crc))
}

/// How good a name an alias is, lower first, the way gdb and perf choose among the
/// names of one address: global before weak before local, then the fewest leading
/// underscores, then not one of glibc's internal `__GI_` aliases, then the shortest.
/// glibc's debug file names its futex wait `__GI___lll_lock_wait` and `__lll_lock_wait`
/// (both local): gdb says the latter.
fn alias_rank<'d, S: ObjectSymbol<'d>>(s: &S) -> (u8, usize, bool, usize) {
    let bind = if s.is_global() && !s.is_weak() {
        0
    } else if s.is_weak() {
        1
    } else {
        2
    };
    let name = s.name_bytes().unwrap_or_default();
    let under = name.iter().take_while(|&&c| c == b'_').count();
    (bind, under, name.starts_with(b"__GI_"), name.len())
}

/// Map an ELF file read-only.
fn map_file(path: &std::path::Path) -> Option<memmap2::Mmap> {
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping, only read while it lives, and dropped
    // before the symboliser returns (names are copied out). A file truncated under us
    // could fault; binaries are replaced by rename, not truncated in place, by every
    // package manager and linker.
    unsafe { memmap2::Mmap::map(&f) }.ok()
}

impl ElfSyms {
    /// Mapped, not read: only the pages holding the symbol tables are touched, so a
    /// 150 MB binary does not become 150 MB of ttop's memory.
    fn load(data: &[u8], orig: &str) -> Option<Self> {
        let file = object::File::parse(data).ok()?;
        let mut ranked: Vec<(Sym, (u8, usize, bool, usize))> = Vec::new();
        let debug = debug_file(&file, orig);
        let debug_data = debug.as_deref().and_then(map_file);
        let debug_obj = debug_data
            .as_deref()
            .and_then(|d| object::File::parse(d).ok());
        // Of equal addresses the first table wins: the file's own, its debug file's,
        // then the dynamic one (exported names, fewer of them).
        for (dynamic, table) in [
            (0, file.symbol_table()),
            (DEBUG, debug_obj.as_ref().and_then(|f| f.symbol_table())),
            (DYNAMIC, file.dynamic_symbol_table()),
        ] {
            let Some(table) = table else { continue };
            ranked.reserve(table.symbols().size_hint().0);
            for s in table.symbols() {
                if s.kind() != SymbolKind::Text || s.address() == 0 {
                    continue;
                }
                let Ok(i) = u32::try_from(s.index().0) else {
                    continue;
                };
                if i & (DYNAMIC | DEBUG) != 0 {
                    continue;
                }
                ranked.push((
                    Sym {
                        addr: s.address(),
                        size: s.size(),
                        index: i | dynamic,
                    },
                    alias_rank(&s),
                ));
            }
        }
        // Of the aliases at one address the best name stays (`alias_rank`); stable, so
        // of equal ranks the first seen (own table, debug file, dynamic) stays.
        ranked.sort_by(|(a, ra), (b, rb)| {
            a.addr
                .cmp(&b.addr)
                .then(b.size.cmp(&a.size))
                .then(ra.cmp(rb))
        });
        ranked.dedup_by_key(|(s, _)| s.addr);
        let mut syms: Vec<Sym> = ranked.into_iter().map(|(s, _)| s).collect();
        syms.shrink_to_fit();
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        Some(Self {
            syms,
            segments,
            names: HashMap::new(),
            debug,
        })
    }

    /// File offset -> virtual address of the ELF (through its PT_LOAD segments).
    fn vaddr(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(o, sz, _)| off >= *o && off < o + sz)
            .map(|(o, _, va)| off - o + va)
    }

    /// The position in `syms` of the function containing `vaddr`, and the offset into
    /// it (binary search).
    fn lookup(&self, vaddr: u64) -> Option<(usize, u64)> {
        let i = self
            .syms
            .partition_point(|s| s.addr <= vaddr)
            .checked_sub(1)?;
        let s = &self.syms[i];
        // Size 0 (asm functions): accept within 64 KiB of the symbol.
        let within = if s.size > 0 {
            vaddr < s.addr + s.size
        } else {
            vaddr - s.addr < 0x10000
        };
        within.then_some((i, vaddr - s.addr))
    }

    /// The name of `syms[i]`, read from the file's string table the first time.
    fn name(&mut self, i: usize, data: impl FnOnce() -> Option<memmap2::Mmap>) -> Option<&str> {
        let index = self.syms[i].index;
        let debug = self.debug.as_deref();
        self.names
            .entry(i)
            .or_insert_with(|| {
                let data = if index & DEBUG != 0 {
                    map_file(debug?)?
                } else {
                    data()?
                };
                let file = object::File::parse(&*data).ok()?;
                let table = if index & DYNAMIC != 0 {
                    file.dynamic_symbol_table()?
                } else {
                    file.symbol_table()?
                };
                let sym = table
                    .symbol_by_index(object::SymbolIndex((index & !(DYNAMIC | DEBUG)) as usize))
                    .ok()?;
                Some(sym.name().ok()?.into())
            })
            .as_deref()
    }
}

/// A process's executable file mappings: those found by a query so far, or all of them
/// when the text was read (`whole`).
struct ProcMaps {
    since_ns: u64,
    /// Sorted by start address.
    known: Vec<Mapping>,
    whole: bool,
}

/// A symbolised user stack: the caller and every frame.
struct UserStack {
    caller: String,
    frames: Vec<String>,
}

#[derive(Default)]
pub struct Symbolizer {
    /// The executable file mappings of a process found so far.
    maps: HashMap<u32, ProcMaps>,
    /// This kernel has no PROCMAP_QUERY: the maps text is read instead.
    no_query: bool,
    /// Symbol tables by file, and when one last named a frame.
    elfs: HashMap<FileId, (u64, Option<ElfSyms>)>,
    user: HashMap<(u32, i32), UserStack>,
    /// The caller of each kernel stack id (stack ids are never reused for another stack:
    /// the maps are created without BPF_F_REUSE_STACKID).
    kernel: HashMap<i32, String>,
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
        "__GI___lll",
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

    /// "name+0xoff", or "0xaddr" when the address is unknown.
    fn kernel_name(sym: Option<(&str, u64)>, ip: u64) -> String {
        match sym {
            Some((n, base)) => format!("{n}+{:#x}", ip - base),
            None => format!("{ip:#x}"),
        }
    }

    /// The caller of a kernel stack already named, without reading the stack again.
    pub fn kernel_cached(&self, id: i32) -> Option<&str> {
        self.kernel.get(&id).map(String::as_str)
    }

    /// The caller of a kernel stack: the first frame that is not in the lock text
    /// section and not a locking or tracing function (else the first frame).
    pub fn kernel_caller(&mut self, id: i32, ips: &[u64]) -> String {
        if let Some(v) = self.kernel.get(&id) {
            return v.clone();
        }
        self.load_kernel();
        let caller = ips
            .iter()
            .find_map(|&ip| {
                let sym = kallsyms::lookup(ip)?;
                let in_lock_text = self.lock_text.is_some_and(|(s, e)| ip >= s && ip < e);
                (!in_lock_text && !is_kernel_lock_fn(sym.0))
                    .then(|| Self::kernel_name(Some(sym), ip))
            })
            .or_else(|| {
                let &ip = ips.first()?;
                Some(Self::kernel_name(kallsyms::lookup(ip), ip))
            })
            .unwrap_or_default();
        if id >= 0 {
            self.kernel.insert(id, caller.clone());
        }
        caller
    }

    /// (caller, frames) of a user stack already named, without reading the stack again.
    pub fn user_cached(&self, pid: u32, id: i32) -> Option<(&str, &[String])> {
        self.user
            .get(&(pid, id))
            .map(|u| (u.caller.as_str(), u.frames.as_slice()))
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
        if let Some(u) = self.user.get(&(pid, id)) {
            return (u.caller.clone(), u.frames.clone());
        }
        let (caller, frames) = self.name_user_ips(pid, ips, now_ns);
        self.user.insert(
            (pid, id),
            UserStack {
                caller: caller.clone(),
                frames: frames.clone(),
            },
        );
        (caller, frames)
    }

    /// (caller, frames) of the user addresses `ips` of `pid`, not cached by stack id.
    pub fn name_user_ips(&mut self, pid: u32, ips: &[u64], now_ns: u64) -> (String, Vec<String>) {
        let mut file = None;
        let mut caller = String::new();
        let mut frames = Vec::with_capacity(ips.len());
        for &ip in ips {
            let m = self.mapping_at(pid, ip, now_ns, &mut file);
            let (is_caller, full) = self.user_name(pid, m.as_ref(), ip, now_ns);
            if caller.is_empty() && is_caller {
                caller = full.clone();
            }
            frames.push(full);
        }
        if caller.is_empty() {
            caller = frames.first().cloned().unwrap_or_default();
        }
        (caller, frames)
    }

    /// The processes something is cached for, sorted.
    pub fn pids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .maps
            .keys()
            .copied()
            .chain(self.user.keys().map(|(p, _)| *p))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Drop the symbol tables that named no frame for ELF_TTL_NS.
    pub fn forget_files(&mut self, now_ns: u64) {
        self.elfs
            .retain(|_, (used, _)| now_ns.saturating_sub(*used) < ELF_TTL_NS);
    }

    /// Forget what belongs to processes that are gone.
    pub fn retain_pids(&mut self, live: impl Fn(u32) -> bool) {
        self.maps.retain(|p, _| live(*p));
        self.user.retain(|(p, _), _| live(*p));
    }

    /// The file mapping of `pid` that holds `ip` (for the unwinder), asked as for names.
    pub fn mapping(&mut self, pid: u32, ip: u64, now_ns: u64) -> Option<Mapping> {
        let mut file = None;
        self.mapping_at(pid, ip, now_ns, &mut file)
    }

    /// The executable file mapping of `pid` that holds `ip`: known already, else asked of
    /// the kernel (through `file`, /proc/PID/maps opened once per stack), else, on a
    /// kernel without PROCMAP_QUERY, from the maps text.
    fn mapping_at(
        &mut self,
        pid: u32,
        ip: u64,
        now_ns: u64,
        file: &mut Option<File>,
    ) -> Option<Mapping> {
        let fresh = || ProcMaps {
            since_ns: now_ns,
            known: Vec::new(),
            whole: false,
        };
        let pm = self.maps.entry(pid).or_insert_with(fresh);
        if now_ns.saturating_sub(pm.since_ns) >= MAPS_TTL_NS {
            *pm = fresh();
        }
        if let Some(m) = vma::find(&pm.known, ip) {
            return Some(m.clone());
        }
        if pm.whole {
            return None;
        }
        if !self.no_query {
            if file.is_none() {
                // Opening maps does not take the mmap_lock; reading it does.
                *file = Some(File::open(format!("/proc/{pid}/maps")).ok()?);
            }
            match vma::query(file.as_ref()?, ip) {
                Found::Mapping(m) => {
                    let i = pm.known.partition_point(|k| k.start < m.start);
                    pm.known.insert(i, m.clone());
                    return Some(m);
                }
                Found::Nothing => return None,
                Found::Unsupported => self.no_query = true,
            }
        }
        pm.known = vma::read_all(pid);
        pm.whole = true;
        vma::find(&pm.known, ip).cloned()
    }

    /// (whether this frame can be the caller: named and not a lock wrapper,
    /// "symbol+0xoff" or "file+0xoff" or "0xaddr").
    fn user_name(&mut self, pid: u32, m: Option<&Mapping>, ip: u64, now_ns: u64) -> (bool, String) {
        let Some(m) = m else {
            return (false, format!("{ip:#x}"));
        };
        let off = ip - m.start + m.offset;
        let file = m.path.rsplit('/').next().unwrap_or(&m.path);
        // Through the process's root, so binaries inside containers resolve too.
        let path = || std::path::PathBuf::from(format!("/proc/{pid}/root{}", m.path));
        let (used, elf) = self.elfs.entry(m.file).or_insert_with(|| {
            (
                now_ns,
                map_file(&path()).and_then(|d| ElfSyms::load(&d, &m.path)),
            )
        });
        *used = now_ns;
        let found = elf.as_mut().and_then(|elf| {
            let (i, d) = elf.lookup(elf.vaddr(off)?)?;
            let name = elf.name(i, || map_file(&path()))?;
            Some((
                !name.is_empty() && !is_user_lock_fn(name),
                format!("{name}+{d:#x}"),
            ))
        });
        found.unwrap_or_else(|| (false, format!("{file}+{off:#x}")))
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

    /// A libc function (dynamic symbols) and a second stack reuse the cached tables.
    #[test]
    fn resolves_libc_and_caches() {
        let mut s = Symbolizer::default();
        let own = resolves_own_function as *const () as u64;
        let ip = libc::getpid as *const () as u64;
        let (_, frames) = s.user_stack(std::process::id(), 2, &[ip, own + 1], 0);
        assert!(frames[0].contains("getpid+0x"), "{frames:?}");
        assert!(
            frames[1].contains("resolves_own_function") && frames[1].ends_with("+0x1"),
            "{frames:?}"
        );
        assert!(s.user_cached(std::process::id(), 2).is_some());
        let (_, again) = s.user_stack(std::process::id(), 3, &[own + 1], 0);
        assert_eq!(again[0], frames[1]);
    }

    /// Mappings asked one address at a time name a stack as the maps text does; on a
    /// kernel with PROCMAP_QUERY the text is never read.
    #[test]
    fn queried_mappings_name_frames_as_the_text_does() {
        let me = std::process::id();
        let own = resolves_own_function as *const () as u64;
        let ips = [
            libc::getpid as *const () as u64,
            own + 1,
            libc::getppid as *const () as u64,
            0x1000,
        ];
        let mut q = Symbolizer::default();
        let mut t = Symbolizer {
            no_query: true,
            ..Default::default()
        };
        let (qc, qf) = q.user_stack(me, 1, &ips, 0);
        let (tc, tf) = t.user_stack(me, 1, &ips, 0);
        assert_eq!((qc, &qf), (tc, &tf));
        assert!(qf[1].contains("resolves_own_function"), "{qf:?}");
        assert_eq!(qf[3], "0x1000");
        assert!(t.maps[&me].whole);
        let pm = &q.maps[&me];
        assert_eq!(
            pm.whole, q.no_query,
            "the text is read only where PROCMAP_QUERY is missing"
        );
        if !q.no_query {
            assert_eq!(pm.known.len(), 2, "one query per mapping: ttop and libc");
        }
    }

    /// A binary's symbol table stays while it names frames and goes once it has not
    /// for ELF_TTL_NS; naming through it again loads it again.
    #[test]
    fn unused_symbol_tables_are_dropped() {
        let mut s = Symbolizer::default();
        let me = std::process::id();
        let own = resolves_own_function as *const () as u64;
        let libc_ip = libc::getpid as *const () as u64;
        s.user_stack(me, 1, &[own, libc_ip], 0);
        assert_eq!(s.elfs.len(), 2, "ttop's binary and libc");
        // Later, only our own binary names a frame (mappings asked again: past MAPS_TTL_NS).
        let later = ELF_TTL_NS;
        s.user_stack(me, 2, &[own], later);
        s.forget_files(later + 1);
        assert_eq!(s.elfs.len(), 1, "libc's table outlived its use");
        s.forget_files(later + ELF_TTL_NS);
        assert!(s.elfs.is_empty());
        let (caller, _) = s.user_stack(me, 3, &[own], later + ELF_TTL_NS);
        assert!(caller.contains("resolves_own_function"), "{caller}");
    }
}
