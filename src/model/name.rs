//! `Name`: a process or thread name (or command line) in a Frame row. Short names are
//! stored in the row itself; longer ones share the Sample's `Arc<str>`. Copying a short
//! name into a row costs no atomic reference count, and dropping the row frees nothing.
//!
//! A `Name` is 16 bytes, where an enum of the two took 24: a row is written for each of
//! 10,000 processes and threads per frame, and derive is memory-bound there. It holds up
//! to 15 bytes inline: any comm (the kernel cuts them at 15).
//!
//! A command line is a `Name<31>` (32 bytes): sharing one costs an atomic increment
//! when the row is made and a decrement when it is dropped, each on a cache line of
//! the Sample that is rarely still cached, and an atomic operation waits for that
//! line. At 10,000 processes with 29-byte command lines, holding them inline instead
//! made derive-and-drop 11% faster (3.36 -> 2.99 ms, loaded host, interleaved runs).
//! Worker processes, the usual way to have thousands of processes, have short ones
//! ("postgres: walwriter", "php-fpm: pool www", "nginx: worker process"), as do most
//! daemons; longer ones are still shared.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The first byte of a shared name (an inline name's first byte is its length, < 0xff).
const SHARED: u8 = 0xff;

/// A name with up to `N` bytes inline (`N` < 255).
pub struct Name<const N: usize = 15>(Repr<N>);

/// The first byte tells the two apart.
#[repr(C)]
union Repr<const N: usize> {
    inline: Inline<N>,
    shared: Shared,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Inline<const N: usize> {
    len: u8,
    /// The first `len` bytes are a whole str, copied.
    buf: [u8; N],
}

/// An `Arc<str>` taken apart (`Arc::into_raw`): this Name owns one strong count.
#[repr(C)]
#[derive(Clone, Copy)]
struct Shared {
    tag: u8,
    len_hi: [u8; 3],
    len_lo: u32,
    ptr: *const u8,
}

/// Longest shared name: 2^56 - 1 bytes (more than any address space holds).
const MAX_SHARED: usize = (1 << 56) - 1;

// SAFETY: a Name is an inline copy or an owned `Arc<str>`, which is Send and Sync.
unsafe impl<const N: usize> Send for Name<N> {}
// SAFETY: as above; nothing is mutated through a shared reference.
unsafe impl<const N: usize> Sync for Name<N> {}

impl<const N: usize> Name<N> {
    #[inline]
    fn tag(&self) -> u8 {
        // SAFETY: both variants start with an initialised byte at offset 0.
        unsafe { self.0.inline.len }
    }

    #[inline]
    fn shared(&self) -> Option<*const str> {
        if self.tag() != SHARED {
            return None;
        }
        // SAFETY: the tag says this is the shared variant.
        let s = unsafe { self.0.shared };
        let hi = u32::from_le_bytes([s.len_hi[0], s.len_hi[1], s.len_hi[2], 0]);
        let len = ((u64::from(hi) << 32) | u64::from(s.len_lo)) as usize;
        Some(std::ptr::slice_from_raw_parts(s.ptr, len) as *const str)
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        match self.shared() {
            // SAFETY: this Name holds a strong count of the Arc, so the str lives.
            Some(p) => unsafe { &*p },
            None => {
                // SAFETY: the inline variant; its first `len` bytes were copied from a
                // str whole, so they are UTF-8.
                let i = unsafe { &self.0.inline };
                unsafe { std::str::from_utf8_unchecked(&i.buf[..i.len as usize]) }
            }
        }
    }
}

impl<const N: usize> Clone for Name<N> {
    #[inline]
    fn clone(&self) -> Self {
        if let Some(p) = self.shared() {
            // SAFETY: `p` came from `Arc::into_raw` and this Name keeps it alive.
            unsafe { Arc::increment_strong_count(p) };
        }
        // SAFETY: both variants are plain bytes (Copy); the count was taken above.
        Name(unsafe { std::ptr::read(&self.0) })
    }
}

impl<const N: usize> Drop for Name<N> {
    #[inline]
    fn drop(&mut self) {
        if let Some(p) = self.shared() {
            // SAFETY: `p` came from `Arc::into_raw`; this Name owns one count.
            unsafe { Arc::decrement_strong_count(p) };
        }
    }
}

impl<const N: usize> Name<N> {
    /// A copy of `b` held inline, or None if it is longer than N bytes.
    #[inline]
    fn inline(b: &[u8]) -> Option<Self> {
        const { assert!(N < SHARED as usize) };
        (b.len() <= N).then(|| {
            Name(Repr {
                inline: Inline {
                    len: b.len() as u8,
                    buf: copy_short(b),
                },
            })
        })
    }
}

impl<const N: usize> From<&Arc<str>> for Name<N> {
    #[inline]
    fn from(s: &Arc<str>) -> Self {
        let b = s.as_bytes();
        if let Some(n) = Self::inline(b) {
            n
        } else {
            assert!(b.len() <= MAX_SHARED, "a name longer than memory");
            let len = b.len() as u64;
            let hi = ((len >> 32) as u32).to_le_bytes();
            let ptr = Arc::into_raw(s.clone()) as *const u8;
            Name(Repr {
                shared: Shared {
                    tag: SHARED,
                    len_hi: [hi[0], hi[1], hi[2]],
                    len_lo: len as u32,
                    ptr,
                },
            })
        }
    }
}

/// `b` (at most N bytes) at the start of N zero bytes. Two overlapping fixed-size copies
/// instead of a call to memcpy for a variable length: a row copies three names, and
/// the calls were 3% of a derive at 10,000 processes.
#[inline(always)]
fn copy_short<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut buf = [0u8; N];
    let n = b.len();
    if N >= 16 && n >= 16 {
        buf[..16].copy_from_slice(&b[..16]);
        buf[n - 16..n].copy_from_slice(&b[n - 16..]);
    } else if n >= 8 {
        buf[..8].copy_from_slice(&b[..8]);
        buf[n - 8..n].copy_from_slice(&b[n - 8..]);
    } else if n >= 4 {
        buf[..4].copy_from_slice(&b[..4]);
        buf[n - 4..n].copy_from_slice(&b[n - 4..]);
    } else {
        for (d, s) in buf.iter_mut().zip(b) {
            *d = *s;
        }
    }
    buf
}

impl<const N: usize> From<Arc<str>> for Name<N> {
    fn from(s: Arc<str>) -> Self {
        Name::from(&s)
    }
}

impl<const N: usize> From<&str> for Name<N> {
    #[inline]
    fn from(s: &str) -> Self {
        // Short: copied, without an Arc made only to be copied from and freed.
        Self::inline(s.as_bytes()).unwrap_or_else(|| Name::from(&Arc::<str>::from(s)))
    }
}

impl<const N: usize> From<String> for Name<N> {
    fn from(s: String) -> Self {
        Name::from(s.as_str())
    }
}

impl<const N: usize> Default for Name<N> {
    fn default() -> Self {
        Name(Repr {
            inline: Inline {
                len: 0,
                buf: [0; N],
            },
        })
    }
}

impl<const N: usize> Deref for Name<N> {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> AsRef<str> for Name<N> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> std::borrow::Borrow<str> for Name<N> {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> fmt::Debug for Name<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> fmt::Display for Name<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl<const N: usize> PartialEq for Name<N> {
    fn eq(&self, o: &Self) -> bool {
        self.as_str() == o.as_str()
    }
}
impl<const N: usize> Eq for Name<N> {}
impl<const N: usize> PartialOrd for Name<N> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<const N: usize> Ord for Name<N> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(o.as_str())
    }
}
impl<const N: usize> std::hash::Hash for Name<N> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl<const N: usize> Serialize for Name<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back as it is written: a plain string (recordings store Samples' names so).
impl<'de, const N: usize> Deserialize<'de> for Name<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Name::from(&*s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_inline_long_ones_shared_both_read_the_same() {
        assert_eq!(std::mem::size_of::<Name>(), 16);
        let short: Arc<str> = "kworker/0:1-ev".into();
        let long: Arc<str> = "/usr/bin/python3 -m http.server 8080".into();
        let (a, b) = (<Name>::from(&short), <Name>::from(&long));
        assert!(a.shared().is_none());
        assert!(b.shared().is_some());
        assert_eq!(
            Arc::strong_count(&short),
            1,
            "an inline name holds no reference"
        );
        assert_eq!(Arc::strong_count(&long), 2);
        assert_eq!((&*a, &*b), (&*short, &*long));
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"kworker/0:1-ev\"");
        assert_eq!(format!("{b:?}"), format!("{long:?}"));
        let c = b.clone();
        assert_eq!(Arc::strong_count(&long), 3);
        drop((b, c));
        assert_eq!(Arc::strong_count(&long), 1, "clones and drops count");
        let exact: Arc<str> = format!("{}x", "é".repeat(7)).into(); // 15 bytes: the limit
        let over: Arc<str> = format!("{}xy", "é".repeat(7)).into();
        let (e, o) = (<Name>::from(&exact), <Name>::from(&over));
        assert!(e.shared().is_none() && o.shared().is_some());
        assert_eq!((&*e, &*o), (&*exact, &*over));
        assert!(<Name>::from("b") > <Name>::from("a"));
        assert_eq!(&*<Name>::default(), "");
        assert_eq!(&*<Name>::from(""), "");
        // Command lines: 31 bytes inline.
        assert_eq!(std::mem::size_of::<Name<31>>(), 32);
        let cmd: Arc<str> = "postgres: autovacuum launcher".into();
        let (c, l) = (Name::<31>::from(&cmd), Name::<31>::from(&long));
        assert!(c.shared().is_none() && l.shared().is_some());
        assert_eq!(Arc::strong_count(&cmd), 1);
        assert_eq!((&*c, &*l), (&*cmd, &*long));
        assert_eq!(c.clone(), c);
        // Every length up to the inline limit copies whole.
        for n in 0..=31 {
            let s: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert_eq!(&*Name::<31>::from(s.as_str()), s);
            assert_eq!(&*<Name>::from(s.as_str()), s);
        }
    }

    #[test]
    fn names_read_back_as_written() {
        // Samples in recordings hold names as plain JSON strings, escapes included.
        for s in [
            "",
            "bash",
            "kworker/0:1-events",
            "a \"quoted\" näme",
            "15 bytes long!!",
        ] {
            let json = serde_json::to_string(&<Name>::from(s)).unwrap();
            assert_eq!(json, serde_json::to_string(s).unwrap());
            let back: Name = serde_json::from_str(&json).unwrap();
            assert_eq!(&*back, s);
            assert_eq!(back.shared().is_some(), s.len() > 15, "{s:?}");
        }
        assert!(serde_json::from_str::<Name>("17").is_err());
    }
}
