//! The executable file mapping that holds an address of another process, for naming
//! user stack frames.
//!
//! Asked one address at a time with the PROCMAP_QUERY ioctl on /proc/PID/maps (6.11+):
//! the kernel looks up that one VMA, since 6.17 under the VMA's own lock, so the
//! target's mmap_lock is not taken at all (seed 002: a /proc reader holding it stalled
//! the target's writers). Before 6.17 the query holds mmap_lock for one lookup, where a
//! read of the maps text takes it for every page of output and formats every mapping.
//! Kernels without the ioctl get the text (`read_all`); the caller remembers that.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Identifies a mapped file whatever path or mount namespace it was reached by (and
/// tells a replaced binary from the old one): (device, inode), device as
/// `major << 32 | minor`.
pub type FileId = (u64, u64);

#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    pub file: FileId,
    pub path: String,
}

/// include/uapi/linux/fs.h, struct procmap_query (104 bytes).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// _IOWR('f', 17, struct procmap_query)
const PROCMAP_QUERY: u64 = 0xC068_6611;
const PROCMAP_QUERY_VMA_EXECUTABLE: u64 = 0x04;
const PROCMAP_QUERY_FILE_BACKED_VMA: u64 = 0x20;

/// What a query found.
#[derive(Debug, PartialEq)]
pub enum Found {
    Mapping(Mapping),
    /// No executable file mapping holds the address (or the process is gone).
    Nothing,
    /// This kernel has no PROCMAP_QUERY: read the text instead.
    Unsupported,
}

/// The executable file mapping holding `addr`, asked through an open /proc/PID/maps.
pub fn query(maps: &File, addr: u64) -> Found {
    let mut name = [0u8; 4096];
    let mut q = ProcmapQuery {
        size: std::mem::size_of::<ProcmapQuery>() as u64,
        query_flags: PROCMAP_QUERY_VMA_EXECUTABLE | PROCMAP_QUERY_FILE_BACKED_VMA,
        query_addr: addr,
        vma_name_size: name.len() as u32,
        vma_name_addr: name.as_mut_ptr() as u64,
        ..Default::default()
    };
    // SAFETY: q is a live, correctly sized procmap_query; the kernel writes at most
    // vma_name_size bytes to name, which outlives the call.
    let r = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as _, &mut q) };
    if r != 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            // No such ioctl on this file (before 6.11); EINVAL if a kernel refused the
            // struct itself.
            Some(libc::ENOTTY) | Some(libc::EINVAL) => Found::Unsupported,
            _ => Found::Nothing,
        };
    }
    let len = (q.vma_name_size as usize).min(name.len());
    let path = String::from_utf8_lossy(&name[..len])
        .trim_end_matches('\0')
        .to_string();
    if !path.starts_with('/') {
        return Found::Nothing;
    }
    Found::Mapping(Mapping {
        start: q.vma_start,
        end: q.vma_end,
        offset: q.vma_offset,
        file: (
            (u64::from(q.dev_major) << 32) | u64::from(q.dev_minor),
            q.inode,
        ),
        path,
    })
}

/// Every executable file mapping of a process, sorted, from the maps text.
pub fn read_all(pid: u32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut maps: Vec<Mapping> = text.lines().filter_map(parse_maps_line).collect();
    // The kernel lists mappings in address order; sort anyway for the binary search.
    maps.sort_by_key(|m| m.start);
    maps
}

/// The mapping of a sorted list that holds `addr`.
pub fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    let i = maps.partition_point(|m| m.start <= addr);
    i.checked_sub(1)
        .map(|i| &maps[i])
        .filter(|m| addr >= m.start && addr < m.end)
}

/// One line of /proc/PID/maps, if it maps an executable file:
/// "start-end perms offset major:minor inode path".
fn parse_maps_line(l: &str) -> Option<Mapping> {
    let mut it = l.split_whitespace();
    let range = it.next()?;
    let perms = it.next()?;
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let dev = it.next()?;
    let ino: u64 = it.next()?.parse().ok()?;
    let path: String = it.collect::<Vec<_>>().join(" ");
    if !perms.contains('x') || !path.starts_with('/') {
        return None;
    }
    let (maj, min) = dev.split_once(':')?;
    let dev = (u64::from_str_radix(maj, 16).ok()? << 32) | u64::from_str_radix(min, 16).ok()?;
    let (s, e) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        offset,
        file: (dev, ino),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this kernel has PROCMAP_QUERY (6.11+), from its release.
    fn kernel_has_query() -> bool {
        let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut it = rel.trim().split(['.', '-']);
        let major: u32 = it.next().unwrap().parse().unwrap();
        let minor: u32 = it.next().unwrap().parse().unwrap();
        (major, minor) >= (6, 11)
    }

    /// The ioctl and the text give the same mapping, field for field, for code in this
    /// binary and in libc; neither names heap memory or an unmapped address.
    #[test]
    fn query_matches_the_maps_text() {
        let me = std::process::id();
        let text = read_all(me);
        let f = File::open(format!("/proc/{me}/maps")).unwrap();
        let heap = Box::new(0u64);
        let own = query_matches_the_maps_text as *const () as u64;
        let libc_fn = libc::getpid as *const () as u64;
        for addr in [own, libc_fn] {
            let want = find(&text, addr).expect("the text maps our code").clone();
            match query(&f, addr) {
                Found::Mapping(m) => assert_eq!(m, want, "{addr:#x}"),
                Found::Unsupported => {
                    assert!(!kernel_has_query(), "6.11+ but PROCMAP_QUERY refused");
                }
                Found::Nothing => panic!("{addr:#x}: the text maps it, the query not"),
            }
        }
        for addr in [&*heap as *const u64 as u64, 0x1000] {
            assert!(find(&text, addr).is_none());
            assert!(matches!(
                query(&f, addr),
                Found::Nothing | Found::Unsupported
            ));
        }
    }

    #[test]
    fn parses_maps_lines() {
        let m = parse_maps_line(
            "7f1c2a428000-7f1c2a5bd000 r-xp 00028000 fd:01 1312035    /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.offset, m.file),
            (
                0x7f1c2a428000,
                0x7f1c2a5bd000,
                0x28000,
                ((0xfd << 32) | 1, 1312035)
            )
        );
        assert_eq!(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        // Not executable, anonymous, or a pseudo-file: not a mapping to name frames by.
        for l in [
            "7f1c2a5bd000-7f1c2a615000 r--p 001bd000 fd:01 1312035    /usr/lib/x86_64-linux-gnu/libc.so.6",
            "7f1c2a615000-7f1c2a617000 rw-p 00000000 00:00 0",
            "7ffd5a7f3000-7ffd5a7f5000 r-xp 00000000 00:00 0          [vdso]",
        ] {
            assert!(parse_maps_line(l).is_none(), "{l}");
        }
    }
}
