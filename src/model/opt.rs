//! `Opt<T>`: an optional u64 or f64 in 9 bytes, aligned to one byte, where an `Option`
//! takes 16. Frame rows are written 10,000 at a time and derive is memory-bound there:
//! the seven optional columns of a process row that the app does not read as
//! `Option`s (and the two of a thread row) shrink it from 288 to 232 bytes (80 to 64).
//! It reads, compares, prints and serialises exactly as the `Option<T>` it replaces.

use std::fmt;
use std::marker::PhantomData;

use serde::{Serialize, Serializer};

/// A number `Opt` can hold.
pub trait Num: Copy + PartialEq + fmt::Debug + Serialize {
    fn to_bytes(self) -> [u8; 8];
    fn from_bytes(b: [u8; 8]) -> Self;
}

impl Num for u64 {
    #[inline]
    fn to_bytes(self) -> [u8; 8] {
        self.to_ne_bytes()
    }
    #[inline]
    fn from_bytes(b: [u8; 8]) -> Self {
        u64::from_ne_bytes(b)
    }
}

impl Num for f64 {
    #[inline]
    fn to_bytes(self) -> [u8; 8] {
        self.to_ne_bytes()
    }
    #[inline]
    fn from_bytes(b: [u8; 8]) -> Self {
        f64::from_ne_bytes(b)
    }
}

#[derive(Clone, Copy)]
pub struct Opt<T: Num> {
    bytes: [u8; 8],
    some: bool,
    _t: PhantomData<T>,
}

impl<T: Num> Opt<T> {
    pub const NONE: Self = Opt {
        bytes: [0; 8],
        some: false,
        _t: PhantomData,
    };

    #[inline]
    pub fn some(v: T) -> Self {
        Opt {
            bytes: v.to_bytes(),
            some: true,
            _t: PhantomData,
        }
    }

    #[inline]
    pub fn get(self) -> Option<T> {
        self.some.then(|| T::from_bytes(self.bytes))
    }

    pub fn is_some(self) -> bool {
        self.some
    }
}

impl<T: Num> From<Option<T>> for Opt<T> {
    #[inline]
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::NONE, Self::some)
    }
}

impl<T: Num> Default for Opt<T> {
    fn default() -> Self {
        Self::NONE
    }
}

impl<T: Num> PartialEq for Opt<T> {
    fn eq(&self, o: &Self) -> bool {
        self.get() == o.get()
    }
}

impl<T: Num> fmt::Debug for Opt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

impl<T: Num> Serialize for Opt<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The calls `Option<T>` makes, so every format reads it the same.
        match self.get() {
            Some(v) => s.serialize_some(&v),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_prints_and_serialises_as_an_option() {
        assert_eq!(std::mem::size_of::<Opt<f64>>(), 9);
        assert_eq!(std::mem::align_of::<Opt<u64>>(), 1);
        let cases_u: [Option<u64>; 4] = [None, Some(0), Some(7), Some(u64::MAX)];
        for v in cases_u {
            let o = Opt::from(v);
            assert_eq!(o.get(), v);
            assert_eq!(format!("{o:?}"), format!("{v:?}"));
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
        let cases_f: [Option<f64>; 6] = [
            None,
            Some(0.0),
            Some(-0.0),
            Some(1e-300),
            Some(f64::NAN),
            Some(0.1 + 0.2),
        ];
        for v in cases_f {
            let o = Opt::from(v);
            assert_eq!(o.get().map(f64::to_bits), v.map(f64::to_bits));
            assert_eq!(format!("{o:?}"), format!("{v:?}"));
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
            assert_eq!(o == o, v == v, "NaN is not equal to itself here either");
        }
        assert_eq!(Opt::<u64>::default(), Opt::NONE);
    }
}
