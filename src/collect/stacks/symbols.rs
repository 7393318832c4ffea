//! Symbol names for the contention views: kernel stacks through `kallsyms` (asked of
//! the kernel, shared with the other collectors), user stacks through blazesym
//! from the binaries a process maps (their symbol tables, DWARF and debug files).
//!
//! Cost, and why it is safe: a user stack is symbolised only for the few futex words
//! at the top of the table, once per (process, stack id), and the result is cached,
//! never from the per-tick /proc scan. The mapping that holds a frame is asked of the
//! kernel one address at a time (`vma`: PROCMAP_QUERY, which on 6.17+ does not take
//! the target's mmap_lock; seed 002). Only a kernel without that ioctl gets the whole
//! /proc/PID/maps text, which takes the target's mmap_lock for reading; so that stays
//! rare and bounded: at most once per process every `MAPS_TTL_NS`, and
//! `MAX_NEW_PER_TICK` new stacks per tick. blazesym is handed file paths and offsets,
//! never a process (its process source would read the maps text); each file is
//! parsed once, lazily, and dropped when it has named nothing for `ELF_TTL_NS`.

use foldhash::HashMap;
use std::fs::File;

use crate::collect::stacks::file_names::{Named, NamedFile, Names, Unnamed};
use crate::collect::stacks::kallsyms;
use crate::collect::stacks::lock_fns::{
    in_runtime_library, is_kernel_lock_fn, is_user_lock_fn, is_user_mm_fn,
};
use crate::collect::stacks::vma::{self, FileId, Found, Mapping};
use crate::model::profile::SrcFrame;

/// What is known of a process's mappings is dropped after this long (a library may be
/// unmapped and another mapped in its place). Without PROCMAP_QUERY the mappings read
/// from the text are kept instead, and the text is read again only for an address none
/// of them holds, and no sooner than this after the last read.
const MAPS_TTL_NS: u64 = 30_000_000_000;
/// A binary's symbol table is dropped when no stack named through it for this long. On a
/// build machine every test binary, build script and compiler run is a new file whose
/// table (up to megabytes) would otherwise stay for the life of ttop.
const ELF_TTL_NS: u64 = 2 * MAPS_TTL_NS;
/// New user stacks symbolised per tick at most (each may read one maps text).
pub const MAX_NEW_PER_TICK: usize = 4;

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
    /// The files that named frames: the path blazesym knows each by, and when one last
    /// named a frame.
    elfs: HashMap<FileId, NamedFile>,
    names: Names,
    /// User frames named so far, and why the others were not.
    pub frames: crate::model::contention::UserFrames,
    /// Named user stacks by (process, stack id, from the mmap_lock rows' map): the
    /// futex rows' and the mmap_lock rows' stack maps number their stacks apart.
    user: HashMap<(u32, i32, bool), UserStack>,
    /// The caller of each kernel stack id (an id names one stack until user space frees
    /// it, when `forget_kernel` drops its name: see collect/contention/stack_ids.rs).
    kernel: HashMap<i32, String>,
    lock_text: Option<(u64, u64)>,
    kernel_loaded: bool,
    /// Naming mmap_lock rows' stacks: the C library's wrappers of the calls that take
    /// the lock (munmap, a /proc read, malloc's paths) are not the CALLER either.
    pub mm_rows: bool,
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
        kallsyms::prefetch(ips.iter().copied());
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
            .get(&(pid, id, self.mm_rows))
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
        if let Some(u) = self.user.get(&(pid, id, self.mm_rows)) {
            return (u.caller.clone(), u.frames.clone());
        }
        let (caller, frames) = self.name_user_ips(pid, ips, now_ns);
        self.user.insert(
            (pid, id, self.mm_rows),
            UserStack {
                caller: caller.clone(),
                frames: frames.clone(),
            },
        );
        (caller, frames)
    }

    /// The part of a frame-pointer walk that can be trusted: the walk is cut at the first
    /// return address in no file mapping. Through code built without frame pointers (a
    /// distribution's glibc) the walk reads a caller out of whatever the frame-pointer
    /// register held, an address in nothing ("libc.so.6+0x8612b", "0x100000fe3"); a
    /// wrong frame is worse than none. (The DWARF-unwound stacks keep such frames: their
    /// callers come from the modules' unwind tables, a JIT frame among them.)
    pub fn fp_trusted<'a>(&mut self, pid: u32, ips: &'a [u64], now_ns: u64) -> &'a [u64] {
        let mut file = None;
        let n = ips
            .iter()
            .skip(1)
            .position(|&ip| self.mapping_at(pid, ip, now_ns, &mut file).is_none())
            .map_or(ips.len(), |i| i + 1);
        if n < ips.len() {
            self.frames.stack_cut += 1;
        }
        &ips[..n]
    }

    /// (caller, frames) of the user addresses `ips` of `pid`, not cached by stack id.
    pub fn name_user_ips(&mut self, pid: u32, ips: &[u64], now_ns: u64) -> (String, Vec<String>) {
        let mut file = None;
        let mut caller = String::new();
        let mut frames = Vec::with_capacity(ips.len());
        for (i, &ip) in ips.iter().enumerate() {
            let m = self.mapping_at(pid, ip, now_ns, &mut file);
            for (is_caller, short, full) in self.user_names(pid, m.as_ref(), ip, i > 0, now_ns) {
                if caller.is_empty() && is_caller {
                    caller = short;
                }
                frames.push(full);
            }
        }
        if caller.is_empty() && !frames.is_empty() {
            // Every frame is lock code, or unnamed inside the C library.
            caller = "?".to_string();
            self.frames.no_caller += 1;
        }
        (caller, frames)
    }

    /// The processes something is cached for, sorted.
    pub fn pids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .maps
            .keys()
            .copied()
            .chain(self.user.keys().map(|(p, _, _)| *p))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Drop the symbol tables that named no frame for ELF_TTL_NS.
    pub fn forget_files(&mut self, now_ns: u64) {
        let names = &mut self.names;
        self.elfs.retain(|_, f| {
            let keep = now_ns.saturating_sub(f.used_ns) < ELF_TTL_NS;
            if !keep {
                f.forget(names);
            }
            keep
        });
    }

    /// Forget what belongs to processes that are gone.
    pub fn retain_pids(&mut self, live: impl Fn(u32) -> bool) {
        self.maps.retain(|p, _| live(*p));
        self.user.retain(|(p, _, _), _| live(*p));
    }

    /// Stack ids freed from their map (the mmap_lock rows' map, or the futex rows'):
    /// the ids may name other stacks from now on.
    pub fn forget_user(&mut self, mm_rows: bool, ids: &[u32]) {
        if !ids.is_empty() {
            let ids: foldhash::HashSet<i32> = ids.iter().map(|&i| i as i32).collect();
            self.user
                .retain(|&(_, id, mm), _| mm != mm_rows || !ids.contains(&id));
        }
    }

    /// Kernel stack ids freed from their map.
    pub fn forget_kernel(&mut self, ids: &[u32]) {
        for id in ids {
            self.kernel.remove(&(*id as i32));
        }
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
        let stale = now_ns.saturating_sub(pm.since_ns) >= MAPS_TTL_NS;
        // Mappings asked one at a time are cheap to ask again; read from the text they
        // stay, and are replaced only by the next read.
        if stale && !pm.whole {
            *pm = fresh();
        }
        if let Some(m) = vma::find(&pm.known, ip) {
            return Some(m.clone());
        }
        if pm.whole && !stale {
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
        // No PROCMAP_QUERY (before 6.11): the whole text, which takes the process's
        // mmap_lock for reading while the kernel formats it.
        pm.known = vma::read_all(pid);
        pm.whole = true;
        pm.since_ns = now_ns;
        self.frames.maps_reads += 1;
        vma::find(&pm.known, ip).cloned()
    }

    /// The frames of one address, innermost inlined call first: (whether it can be the
    /// caller: named and not a lock wrapper, the name as the caller column shows it,
    /// the frame as the stack shows it). Named: "symbol+0xoff file.c:12" (the location
    /// when the file has DWARF), an inlined call "symbol (inlined) file.c:7"; unnamed:
    /// "file+0xoff" or "0xaddr". A frame other than the innermost holds a return
    /// address, the instruction after the call: its function, line and inlined calls
    /// are those of the call (ip - 1, as perf and gdb look them up), its offset that of
    /// the return address.
    fn user_names(
        &mut self,
        pid: u32,
        m: Option<&Mapping>,
        ip: u64,
        is_return: bool,
        now_ns: u64,
    ) -> Vec<(bool, String, String)> {
        match self.lookup(pid, m, ip, is_return, now_ns) {
            Ok((n, back)) => n
                .frames
                .into_iter()
                .map(|(name, at_off, line)| {
                    let short = match at_off {
                        Some(d) => format!("{name}+{:#x}", d + back),
                        None => format!("{name} (inlined)"),
                    };
                    let full = match line {
                        Some(l) => format!("{short} {}", l.short()),
                        None => short.clone(),
                    };
                    let wrapper = is_user_lock_fn(&name) || (self.mm_rows && is_user_mm_fn(&name));
                    (!name.is_empty() && !wrapper, short, full)
                })
                .collect(),
            // Unnamed: the caller if it is outside the C and C++ runtime libraries (whose
            // unnamed frames are most likely their lock code): a program's stripped
            // function, JIT code.
            Err(a) => vec![(!in_runtime_library(&a), a.clone(), a)],
        }
    }

    /// The functions at `ip` of `pid` for a profile, innermost inlined call first: names
    /// without offsets, so that samples anywhere in a function fold together, each with
    /// its source file and line within that function where the file has DWARF line info
    /// (else an empty file and line 0). Unnamed: "[module]" as perf and inferno show it,
    /// "[unknown]" outside any file.
    pub fn functions_at(
        &mut self,
        pid: u32,
        ip: u64,
        is_return: bool,
        now_ns: u64,
    ) -> Vec<SrcFrame> {
        let mut file = None;
        let m = self.mapping_at(pid, ip, now_ns, &mut file);
        match self.lookup(pid, m.as_ref(), ip, is_return, now_ns) {
            Ok((n, _)) => n
                .frames
                .into_iter()
                .map(|(name, _, src)| match src {
                    Some(src) => SrcFrame {
                        name,
                        file: src.path,
                        line: src.line.unwrap_or(0),
                    },
                    None => SrcFrame::named(name),
                })
                .collect(),
            Err(_) => vec![SrcFrame::named(match &m {
                Some(m) => format!("[{}]", m.path.rsplit('/').next().unwrap_or(&m.path)),
                None => "[unknown]".to_string(),
            })],
        }
    }

    /// The names at one address and the byte it was looked up back by (1 for a return
    /// address), or the frame's unnamed label ("file+0xoff", "0xaddr").
    fn lookup(
        &mut self,
        pid: u32,
        m: Option<&Mapping>,
        ip: u64,
        is_return: bool,
        now_ns: u64,
    ) -> Result<(Named, u64), String> {
        let r = self.lookup_why(pid, m, ip, is_return, now_ns);
        let f = &mut self.frames;
        match &r {
            Ok(_) => f.named += 1,
            Err((_, Unnamed::NoMapping)) => f.no_mapping += 1,
            Err((_, Unnamed::NoSymbol)) => f.no_symbol += 1,
            Err((_, Unnamed::Unreadable)) => f.unreadable += 1,
        }
        r.map_err(|(label, _)| label)
    }

    fn lookup_why(
        &mut self,
        pid: u32,
        m: Option<&Mapping>,
        ip: u64,
        is_return: bool,
        now_ns: u64,
    ) -> Result<(Named, u64), (String, Unnamed)> {
        let Some(m) = m else {
            return Err((format!("{ip:#x}"), Unnamed::NoMapping));
        };
        let off = ip - m.start + m.offset;
        let f = self
            .elfs
            .entry(m.file)
            .or_insert_with(|| NamedFile::open(pid, m, now_ns));
        f.used_ns = now_ns;
        let back = u64::from(is_return && off > 0);
        let named = f.name(&self.names, off - back);
        named.map(|n| (n, back)).map_err(|why| {
            let file = m.path.rsplit('/').next().unwrap_or(&m.path);
            (format!("{file}+{off:#x}"), why)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without PROCMAP_QUERY (before 6.11) the maps text, which takes the process's
    /// mmap_lock (seed 002), is read only for an address no known mapping holds, and no
    /// sooner than MAPS_TTL_NS after the last read; known mappings answer meanwhile.
    #[test]
    fn the_maps_text_is_read_only_for_an_unknown_address_and_seldom() {
        let me = std::process::id();
        let mut s = Symbolizer {
            no_query: true,
            ..Default::default()
        };
        let code = the_maps_text_is_read_only_for_an_unknown_address_and_seldom as *const () as u64;
        let t0 = 1_000_000_000_000;
        assert!(s.mapping(me, code, t0).is_some());
        assert_eq!(s.frames.maps_reads, 1);
        // Known, or nowhere: no read, however often asked.
        for i in 0..100 {
            assert!(s.mapping(me, code + 16, t0 + i).is_some());
            assert!(s.mapping(me, 0x10, t0 + i).is_none());
        }
        assert_eq!(s.frames.maps_reads, 1);
        // Past the TTL a known address still needs no read; an unknown one reads again.
        let later = t0 + MAPS_TTL_NS + 1;
        assert!(s.mapping(me, code, later).is_some());
        assert_eq!(s.frames.maps_reads, 1);
        assert!(s.mapping(me, 0x10, later).is_none());
        assert_eq!(s.frames.maps_reads, 2);
        assert!(s.mapping(me, 0x10, later + 1).is_none());
        assert_eq!(s.frames.maps_reads, 2);
    }

    /// Our own binary resolves one of our own functions.
    #[test]
    fn resolves_own_function() {
        let mut s = Symbolizer::default();
        let ip = resolves_own_function as *const () as u64;
        let (caller, frames) = s.user_stack(std::process::id(), 1, &[ip], 0);
        assert_eq!(frames.len(), 1);
        assert!(caller.contains("resolves_own_function"), "{caller}");
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
