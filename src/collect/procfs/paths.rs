//! Paths under /proc built in stack buffers, and the numeric entries of a directory read
//! with getdents64: the scan allocates nothing per process for either.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};

use super::stat_line::parse_uint;

/// The numeric entries of a directory (PIDs in /proc, TIDs in task/), in the order
/// the kernel lists them, appended to `out`; `dents` is the reused getdents buffer.
pub(super) fn numeric_entries(dir: &OwnedFd, dents: &mut Vec<u8>, out: &mut Vec<u32>) {
    if dents.len() < 65536 {
        dents.resize(65536, 0);
    }
    loop {
        // SAFETY: getdents64 writes at most dents.len() bytes into the buffer.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                dents.as_mut_ptr(),
                dents.len(),
            )
        };
        if n <= 0 {
            return;
        }
        let mut off = 0usize;
        while off + 19 < n as usize {
            // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
            let reclen = u16::from_ne_bytes([dents[off + 16], dents[off + 17]]) as usize;
            if reclen == 0 {
                return;
            }
            let name = &dents[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(id) = parse_uint(name).and_then(|v| u32::try_from(v).ok()) {
                out.push(id);
            }
            off += reclen;
        }
    }
}

/// The decimal digits of `n`, in a stack buffer.
fn digits(n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let (mut n, mut i) = (n, buf.len());
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// "ID/NAME" or "ID/task/TID/NAME" as a C string, in a stack buffer.
pub(super) fn pid_path<'a>(
    out: &'a mut [u8; 48],
    id: u32,
    tid: Option<u32>,
    name: &[u8],
) -> &'a CStr {
    let mut n = 0;
    let mut put = |b: &[u8], out: &mut [u8; 48]| {
        out[n..n + b.len()].copy_from_slice(b);
        n += b.len();
    };
    let mut d = [0u8; 10];
    put(digits(id, &mut d), out);
    put(b"/", out);
    if let Some(tid) = tid {
        put(b"task/", out);
        put(digits(tid, &mut d), out);
        put(b"/", out);
    }
    put(name, out);
    out[n] = 0;
    CStr::from_bytes_until_nul(&out[..]).expect("NUL written above")
}
