//! Names of user frames in one file, through blazesym, and the debug file ttop finds by
//! build-id where blazesym would not. `symbols` decides which file and offset to ask.

use std::fs::File;
use std::path::PathBuf;

use crate::collect::stacks::vma::Mapping;

/// Names of user frames, from blazesym (the libbpf project's symbolizer): the file's
/// `.symtab` and `.dynsym`, its DWARF (function names, file:line, inlined calls), and a
/// separate debug file found by build-id or `.gnu_debuglink` under `/usr/lib/debug`
/// (what `libc6-dbg` and `*-dbgsym` packages install); C++ and Rust names demangled.
/// Files are asked for by path and parsed lazily (mapped, not read), once per file:
/// a file is kept by the kernel's (device, inode) and by the path it was first opened
/// through, so the libc every process maps is parsed once, not once per process.
pub struct Names {
    bz: blazesym::symbolize::Symbolizer,
}

// SAFETY: blazesym's Symbolizer is !Send because it shares its parsed files through
// `Rc`s among its own caches. Every such `Rc` is owned by the Symbolizer: names leave
// it as owned Strings (`Names::name`), and blazesym keeps no thread-local or global
// state (checked in 0.2.7: no `thread_local!`, no statics). So the whole graph moves
// between threads together (the collector is loaded on one thread and runs on
// another), and is only ever used by one thread at a time (`&mut` or owned).
unsafe impl Send for Names {}

impl Default for Names {
    fn default() -> Self {
        Self {
            bz: blazesym::symbolize::Symbolizer::builder()
                // A file is known by (device, inode): one replaced on disk is a new one.
                .enable_auto_reload(false)
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .build(),
        }
    }
}

/// Where distributions install separate debug files (libc6-dbg, *-dbgsym, debuginfo).
const DEBUG_DIR: &str = "/usr/lib/debug";

/// A debug file found by build-id alone, and the PT_LOAD segments (file offset, size,
/// virtual address) of the file it describes.
type BuildIdDebug = (std::path::PathBuf, Vec<(u64, u64, u64)>);

/// A file ttop names frames of, known by the kernel's (device, inode).
pub struct NamedFile {
    /// When it last named a frame.
    pub used_ns: u64,
    /// The path blazesym knows it by.
    path: std::path::PathBuf,
    /// A stripped file without a `.gnu_debuglink` whose debug file is found by build-id
    /// alone (as gdb and perf find it; blazesym looks a build-id up only through a debug
    /// link): that file, and the file's PT_LOAD segments (file offset, size, virtual
    /// address) to turn an offset into the address both files share.
    by_build_id: Option<BuildIdDebug>,
}

/// The debug file of `path` by build-id, when blazesym would not find it: the file has
/// no symbol table and no debug link, and `/usr/lib/debug/.build-id/ab/cdef….debug`
/// exists with the same build-id.
fn build_id_debug_file(path: &std::path::Path) -> Option<BuildIdDebug> {
    use object::{Object, ObjectSegment};
    let parse = |p: &std::path::Path| {
        let f = File::open(p).ok()?;
        // SAFETY: a read-only private mapping, only read while it lives; a binary is
        // replaced by rename, not truncated in place.
        unsafe { memmap2::Mmap::map(&f) }.ok()
    };
    let data = parse(path)?;
    let file = object::File::parse(&*data).ok()?;
    if file.section_by_name(".gnu_debuglink").is_some() || file.symbol_table().is_some() {
        return None;
    }
    let id = file.build_id().ok()??;
    if id.len() < 2 {
        return None;
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let debug = std::path::PathBuf::from(format!(
        "{DEBUG_DIR}/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    let dd = parse(&debug)?;
    let same = object::File::parse(&*dd).ok()?.build_id().ok()?? == id;
    let segments = file
        .segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (off, size, s.address())
        })
        .collect();
    same.then_some((debug, segments))
}

/// Why a frame has no name (counted in `UserFrames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unnamed {
    NoMapping,
    NoSymbol,
    Unreadable,
}

/// Where in the source a frame is, when the file has DWARF line info.
pub struct Src {
    /// The source file as the DWARF names it (its directory joined, when given).
    pub path: String,
    pub line: Option<u32>,
}

impl Src {
    /// "file.c:12" (the file name without its directory), or "file.c" without a line.
    pub fn short(&self) -> String {
        let file = std::path::Path::new(&self.path)
            .file_name()
            .map_or_else(|| self.path.clone(), |f| f.to_string_lossy().into_owned());
        match self.line {
            Some(l) => format!("{file}:{l}"),
            None => file,
        }
    }
}

/// One named address: the function, innermost inlined call first.
pub struct Named {
    /// (name, offset into it for the function itself, the source location if known),
    /// innermost first: inlined calls (no offset), then the function that holds the
    /// address. Each location is within that frame's own function.
    pub frames: Vec<(String, Option<u64>, Option<Src>)>,
}

impl Names {
    /// The names at `input` (a file offset, or a virtual address) of the ELF at `path`.
    fn name(
        &self,
        path: &std::path::Path,
        input: blazesym::symbolize::Input<u64>,
    ) -> Result<Named, Unnamed> {
        use blazesym::symbolize::source::{Elf, Source};
        use blazesym::symbolize::{CodeInfo, Symbolized};
        let src = Source::Elf(Elf::new(path));
        let sym = match self.bz.symbolize_single(&src, input) {
            Ok(Symbolized::Sym(sym)) => sym,
            Ok(Symbolized::Unknown(_)) => return Err(Unnamed::NoSymbol),
            Err(_) => return Err(Unnamed::Unreadable),
        };
        let at = |c: Option<&CodeInfo>| {
            let c = c?;
            std::path::Path::new(&c.file).file_name()?;
            Some(Src {
                path: c.to_path().to_string_lossy().into_owned(),
                line: c.line,
            })
        };
        let mut frames: Vec<_> = sym
            .inlined
            .iter()
            .rev()
            .map(|f| (f.name.to_string(), None, at(f.code_info.as_ref())))
            .collect();
        frames.push((
            sym.name.to_string(),
            Some(sym.offset as u64),
            at(sym.code_info.as_deref()),
        ));
        Ok(Named { frames })
    }

    fn forget(&mut self, path: &std::path::Path) {
        use blazesym::symbolize::evict::{Elf, Evict};
        let _ = self.bz.evict(&Evict::Elf(Elf::new(path)));
    }
}

impl NamedFile {
    /// The file behind mapping `m` of `pid`: through the process's root, so binaries
    /// inside containers resolve too; a file deleted or replaced since it was mapped,
    /// through /proc/PID/map_files (root only).
    pub fn open(pid: u32, m: &Mapping, now_ns: u64) -> Self {
        let root = PathBuf::from(format!("/proc/{pid}/root{}", m.path));
        let mapped = format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end);
        let path = if m.path.ends_with(" (deleted)") || !root.exists() {
            mapped.into()
        } else {
            root
        };
        Self {
            used_ns: now_ns,
            by_build_id: build_id_debug_file(&path),
            path,
        }
    }

    /// The names at file offset `off`.
    pub fn name(&self, names: &Names, off: u64) -> Result<Named, Unnamed> {
        use blazesym::symbolize::Input;
        match &self.by_build_id {
            Some((debug, segments)) => {
                let (o, _, va) = segments
                    .iter()
                    .find(|(o, sz, _)| off >= *o && off < o + sz)
                    .ok_or(Unnamed::NoSymbol)?;
                names.name(debug, Input::VirtOffset(off - o + va))
            }
            None => names.name(&self.path, Input::FileOffset(off)),
        }
    }

    /// Drop what blazesym parsed of this file.
    pub fn forget(&self, names: &mut Names) {
        names.forget(&self.path);
        if let Some((debug, _)) = &self.by_build_id {
            names.forget(debug);
        }
    }
}
