//! User stacks unwound from `.eh_frame` (and `.debug_frame`), as `perf record
//! --call-graph dwarf` does: the BPF side copies the registers and the top of the user
//! stack of a kept futex stack (`struct ttop_ustack_copy`), and framehop (samply's
//! unwinder) walks it here with each module's unwind tables. A C library built without
//! frame pointers no longer ends the stack at its first frame.
//!
//! Modules are added as the walk meets them: the mapping of each address is asked of the
//! kernel (PROCMAP_QUERY through the symbolizer, no mmap_lock of the target on 6.17+),
//! its file read through `/proc/PID/root` (mmap) and its unwind sections kept per process
//! until the process is gone or TTL passes. An address in no file (JIT, anonymous code)
//! gets framehop's frame-pointer rule.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::{Arc, Weak};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use object::{Object, ObjectSection, ObjectSegment};

use crate::collect::stacks::vma::{FileId, Mapping};

/// A module's section: a range of the file's mapping (read in place: only the pages a
/// walk touches become resident), or its bytes when the section is compressed. Copying
/// every section held 5 to 7 MB per few modules (the text alone is megabytes).
#[derive(Default)]
pub enum SectionBytes {
    #[default]
    Empty,
    Mapped(Arc<memmap2::Mmap>, Range<usize>),
    Owned(Vec<u8>),
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m, r) => &m[r.clone()],
            Self::Owned(v) => v,
            Self::Empty => &[],
        }
    }
}

/// A process's unwinder is dropped this long after it was built (its modules may have
/// been unmapped or replaced since).
const TTL_NS: u64 = 60_000_000_000;
/// Frames kept at most (the frame-pointer walk keeps TTOP_STACK_DEPTH = 32).
pub const MAX_FRAMES: usize = 32;
/// New modules one stack may add (each a file read); a walk needing more stops there.
const MAX_NEW_MODULES: usize = 16;

/// The registers and stack bytes the BPF side copied.
pub struct StackCopy<'a> {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    pub bytes: &'a [u8],
}

struct ProcUnwinder {
    since_ns: u64,
    unwinder: UnwinderX86_64<SectionBytes>,
    /// Address ranges with a module, and those whose file gave none (not asked again).
    have: Vec<Range<u64>>,
    none: Vec<Range<u64>>,
}

#[derive(Default)]
pub struct DwarfUnwinder {
    procs: HashMap<u32, ProcUnwinder>,
    cache: Option<CacheX86_64>,
    /// Each file's mapping, shared by the processes that map it (libc is mapped once).
    files: HashMap<FileId, Weak<memmap2::Mmap>>,
}

/// Why an unwind stopped early (counted by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The walk reached the outermost frame or a frame it could not unwind.
    End,
    /// The next frame's data lay beyond the copied bytes.
    StackCut,
}

impl DwarfUnwinder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The instruction pointer and return addresses of the copied stack, innermost
    /// first. `mapping` finds the file mapping holding an address.
    pub fn unwind(
        &mut self,
        pid: u32,
        copy: &StackCopy,
        now_ns: u64,
        mut mapping: impl FnMut(u64) -> Option<Mapping>,
    ) -> (Vec<u64>, Stop) {
        let pu = self.procs.entry(pid).or_insert_with(|| ProcUnwinder {
            since_ns: now_ns,
            unwinder: UnwinderX86_64::new(),
            have: Vec::new(),
            none: Vec::new(),
        });
        if now_ns.saturating_sub(pu.since_ns) >= TTL_NS {
            *pu = ProcUnwinder {
                since_ns: now_ns,
                unwinder: UnwinderX86_64::new(),
                have: Vec::new(),
                none: Vec::new(),
            };
        }
        let cache = self.cache.get_or_insert_with(CacheX86_64::new);
        let mut added = 0;
        loop {
            let (frames, stop) = walk(&pu.unwinder, cache, copy);
            // Each address without a module yet: ask for its file, then walk again (the
            // frames after it depend on its unwind table).
            let unknown = frames
                .iter()
                .enumerate()
                .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
                .find(|a| !pu.have.iter().chain(&pu.none).any(|r| r.contains(a)));
            let Some(a) = unknown else {
                // The innermost frame in no module (its file could not be read or found):
                // framehop would step out of it by the frame-pointer rule, which in code
                // built without frame pointers (glibc's) reads a garbage caller. Its
                // address alone is all that is known.
                if let Some(&ip) = frames.first()
                    && pu.none.iter().any(|r| r.contains(&ip))
                {
                    return (vec![ip], Stop::End);
                }
                return (frames, stop);
            };
            if added == MAX_NEW_MODULES {
                return (frames, stop);
            }
            added += 1;
            let files = &mut self.files;
            match mapping(a).and_then(|m| load_module(pid, &m, files).map(|md| (m, md))) {
                Some((_, md)) => {
                    pu.have.push(md.avma_range());
                    pu.unwinder.add_module(md);
                }
                None => pu.none.push(a..a + 1),
            }
        }
    }

    /// Forget processes that are gone.
    pub fn retain_pids(&mut self, live: impl Fn(u32) -> bool) {
        self.procs.retain(|p, _| live(*p));
        self.files.retain(|_, f| f.strong_count() > 0);
    }

    pub fn len(&self) -> usize {
        self.procs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }
}

fn walk(
    unwinder: &UnwinderX86_64<SectionBytes>,
    cache: &mut CacheX86_64,
    copy: &StackCopy,
) -> (Vec<u64>, Stop) {
    let mut cut = false;
    let mut read_stack = |addr: u64| -> Result<u64, ()> {
        let off = addr.checked_sub(copy.sp).ok_or(())? as usize;
        match copy.bytes.get(off..off + 8) {
            Some(b) => Ok(u64::from_le_bytes(b.try_into().unwrap())),
            None => {
                cut = true;
                Err(())
            }
        }
    };
    let mut out = Vec::new();
    let mut it = unwinder.iter_frames(
        copy.ip,
        UnwindRegsX86_64::new(copy.ip, copy.sp, copy.bp),
        cache,
        &mut read_stack,
    );
    while out.len() < MAX_FRAMES {
        match it.next() {
            Ok(Some(f)) => out.push(f.address()),
            Ok(None) | Err(_) => break,
        }
    }
    (out, if cut { Stop::StackCut } else { Stop::End })
}

/// The unwind sections of the file behind `m`, placed where the process mapped it.
fn load_module(
    pid: u32,
    m: &Mapping,
    files: &mut HashMap<FileId, Weak<memmap2::Mmap>>,
) -> Option<Module<SectionBytes>> {
    if !m.path.starts_with('/') {
        return None;
    }
    // Through the process's root (containers); a file deleted or replaced since it was
    // mapped is still there through map_files (root only).
    let data = match files.get(&m.file).and_then(Weak::upgrade) {
        Some(d) => d,
        None => {
            let path = format!("/proc/{pid}/root{}", m.path);
            let mapped = format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end);
            let f = if m.path.ends_with(" (deleted)") {
                std::fs::File::open(&mapped).ok()?
            } else {
                std::fs::File::open(&path)
                    .or_else(|_| std::fs::File::open(&mapped))
                    .ok()?
            };
            // SAFETY: a read-only private mapping of a file; a file truncated under us
            // can fault, as for any reader of binaries (perf, gdb); ttop reads only the
            // sections.
            let d = Arc::new(unsafe { memmap2::Mmap::map(&f) }.ok()?);
            files.insert(m.file, Arc::downgrade(&d));
            d
        }
    };
    let obj = object::File::parse(&data[..]).ok()?;
    // The load bias: where the segment holding the mapped file offset was placed.
    let seg = obj.segments().find(|s| {
        let (off, size) = s.file_range();
        off <= m.offset && m.offset < off + size.max(1)
    })?;
    let (seg_off, _) = seg.file_range();
    let svma = seg.address() + (m.offset - seg_off);
    let bias = m.start.wrapping_sub(svma);
    let (lo, hi) = obj.segments().fold((u64::MAX, 0u64), |(lo, hi), s| {
        (lo.min(s.address()), hi.max(s.address() + s.size()))
    });
    if lo >= hi {
        return None;
    }
    let section = |name: &str| -> (Option<Range<u64>>, Option<SectionBytes>) {
        let Some(s) = obj.section_by_name(name) else {
            return (None, None);
        };
        let svma = Some(s.address()..s.address() + s.size());
        let bytes = match s.uncompressed_data() {
            Ok(std::borrow::Cow::Borrowed(b)) => {
                // A slice of `data`: its place in the mapping.
                let at = b.as_ptr() as usize - data.as_ptr() as usize;
                Some(SectionBytes::Mapped(Arc::clone(&data), at..at + b.len()))
            }
            Ok(std::borrow::Cow::Owned(v)) => Some(SectionBytes::Owned(v)),
            Err(_) => None,
        };
        (svma, bytes)
    };
    let (text_svma, text) = section(".text");
    let (eh_frame_svma, eh_frame) = section(".eh_frame");
    let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr");
    let (_, debug_frame) = section(".debug_frame");
    if eh_frame.is_none() && debug_frame.is_none() {
        return None;
    }
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame,
        ..Default::default()
    };
    Some(Module::new(
        m.path.clone(),
        bias.wrapping_add(lo)..bias.wrapping_add(hi),
        bias,
        info,
    ))
}
