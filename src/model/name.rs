//! `Name`: a process or thread name (or command line) in a Frame row. Short names are
//! stored in the row itself; longer ones share the Sample's `Arc<str>`. Copying a short
//! name into a row costs no atomic reference count, and dropping the row frees nothing.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Serialize, Serializer};

const INLINE: usize = 22;

#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, buf: [u8; INLINE] },
    Shared(Arc<str>),
}

impl Name {
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // The bytes were copied from a str, whole.
            Repr::Inline { len, buf } => {
                std::str::from_utf8(&buf[..*len as usize]).unwrap_or_default()
            }
            Repr::Shared(s) => s,
        }
    }
}

impl From<&Arc<str>> for Name {
    #[inline]
    fn from(s: &Arc<str>) -> Self {
        let b = s.as_bytes();
        if b.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..b.len()].copy_from_slice(b);
            Name(Repr::Inline {
                len: b.len() as u8,
                buf,
            })
        } else {
            Name(Repr::Shared(s.clone()))
        }
    }
}

impl From<Arc<str>> for Name {
    fn from(s: Arc<str>) -> Self {
        Name::from(&s)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name::from(&Arc::<str>::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name::from(s.as_str())
    }
}

impl Default for Name {
    fn default() -> Self {
        Name(Repr::Inline {
            len: 0,
            buf: [0; INLINE],
        })
    }
}

impl Deref for Name {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for Name {
    fn eq(&self, o: &Self) -> bool {
        self.as_str() == o.as_str()
    }
}
impl Eq for Name {}
impl PartialOrd for Name {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Name {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(o.as_str())
    }
}
impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_inline_long_ones_shared_both_read_the_same() {
        let short: Arc<str> = "kworker/0:1-events".into();
        let long: Arc<str> = "/usr/bin/python3 -m http.server 8080".into();
        let (a, b) = (Name::from(&short), Name::from(&long));
        assert!(matches!(a.0, Repr::Inline { .. }));
        assert!(matches!(b.0, Repr::Shared(_)));
        assert_eq!(
            Arc::strong_count(&short),
            1,
            "an inline name holds no reference"
        );
        assert_eq!(Arc::strong_count(&long), 2);
        assert_eq!((&*a, &*b), (&*short, &*long));
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"kworker/0:1-events\"");
        assert_eq!(format!("{b:?}"), format!("{long:?}"));
        let exact: Arc<str> = "é".repeat(11).into(); // 22 bytes: the inline limit
        assert_eq!(&*Name::from(&exact), &*exact);
        assert!(Name::from("b") > Name::from("a"));
        assert_eq!(&*Name::default(), "");
    }
}
