//! Joins by pid or tid without hash tables. `derive` looks up every row of the /proc scan
//! in several lists (previous scan, BPF threads and processes, futex totals); with 10,000
//! threads, hash lookups at random addresses were most of a frame's derivation time.
//! A `KeyMap` is a list sorted by key, searched onward from where the previous lookup
//! ended: the scan and the collector's lists come in ascending pid/tid order (see
//! `model::canon`), so lookups walk each list once, front to back. Any other order
//! still works (a binary search).

use std::cell::Cell;

/// Values by u32 key, sorted. When a key occurs more than once, the last value wins
/// (as when collecting into a HashMap).
pub struct KeyMap<V> {
    entries: Vec<(u32, V)>,
    /// Where the next lookup is expected to land.
    cursor: Cell<usize>,
}

/// How far a lookup steps forward one entry at a time before it searches.
const LINEAR_STEPS: usize = 8;

impl<V> KeyMap<V> {
    pub fn new(items: impl IntoIterator<Item = (u32, V)>) -> Self {
        let mut entries: Vec<(u32, V)> = items.into_iter().collect();
        if !entries.is_sorted_by_key(|e| e.0) {
            // Stable: among equal keys the original order stays, so the last is last.
            entries.sort_by_key(|e| e.0);
        }
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            // Keep the last of equal keys: `dedup_by` passes (later, kept); move the later in.
            entries.dedup_by(|later, kept| {
                if later.0 == kept.0 {
                    std::mem::swap(later, kept);
                    true
                } else {
                    false
                }
            });
        }
        KeyMap {
            entries,
            cursor: Cell::new(0),
        }
    }

    /// A map that finds nothing.
    pub fn empty() -> Self {
        KeyMap {
            entries: Vec::new(),
            cursor: Cell::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Position of the first entry with a key >= `key`.
    fn position(&self, key: u32) -> usize {
        position(&self.entries, |e| e.0, self.cursor.get(), key)
    }

    pub fn get(&self, key: u32) -> Option<&V> {
        let i = self.position(key);
        match self.entries.get(i) {
            Some((k, v)) if *k == key => {
                self.cursor.set(i + 1);
                Some(v)
            }
            _ => {
                self.cursor.set(i);
                None
            }
        }
    }

    pub fn contains(&self, key: u32) -> bool {
        self.get(key).is_some()
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = &(u32, V)> {
        self.entries.iter()
    }

    /// The sorted entries themselves.
    pub fn into_entries(self) -> Vec<(u32, V)> {
        self.entries
    }
}

/// Position of the first row with a key >= `key` in rows sorted by key: a few steps
/// onward from `cursor` when the key is just ahead (lookups in ascending order), a
/// binary search otherwise.
fn position<T>(e: &[T], k: impl Fn(&T) -> u32, cursor: usize, key: u32) -> usize {
    let c = cursor.min(e.len());
    if c < e.len() && k(&e[c]) <= key {
        let end = (c + LINEAR_STEPS).min(e.len());
        let mut i = c;
        while i < end && k(&e[i]) < key {
            i += 1;
        }
        if i < end || i == e.len() {
            return i;
        }
        end + e[end..].partition_point(|x| k(x) < key)
    } else if c == 0 || k(&e[c - 1]) < key {
        // Between the row before the cursor and the cursor's: a key with no rows (a
        // process eBPF never saw), found without a search through the rows behind.
        c
    } else {
        e[..c].partition_point(|x| k(x) < key)
    }
}

/// Rows of a list found by a u32 key of theirs, like a `KeyMap` of references to
/// them. When the list is already in strictly ascending key order (the collector's
/// lists and `model::canon` give that), it is searched in place: no copy of 10,000
/// keys per lookup table per derive.
pub struct Rows<'a, T, K: Fn(&T) -> u32> {
    rows: &'a [T],
    key: K,
    /// The rows by key, when they were not in order.
    map: Option<KeyMap<&'a T>>,
    cursor: Cell<usize>,
}

impl<'a, T, K: Fn(&T) -> u32> Rows<'a, T, K> {
    pub fn new(rows: &'a [T], key: K) -> Self {
        let sorted = rows.windows(2).all(|w| key(&w[0]) < key(&w[1]));
        let map = (!sorted).then(|| KeyMap::new(rows.iter().map(|r| (key(r), r))));
        Rows {
            rows,
            key,
            map,
            cursor: Cell::new(0),
        }
    }

    /// The row with this key (the last such row when there are several).
    #[inline]
    pub fn get(&self, key: u32) -> Option<&'a T> {
        if let Some(m) = &self.map {
            return m.get(key).copied();
        }
        let c = self.cursor.get();
        let i = match self.rows.get(c) {
            Some(r) if (self.key)(r) == key => c,
            _ => position(self.rows, &self.key, c, key),
        };
        match self.rows.get(i) {
            Some(r) if (self.key)(r) == key => {
                self.cursor.set(i + 1);
                Some(r)
            }
            _ => {
                self.cursor.set(i);
                None
            }
        }
    }

    pub fn contains(&self, key: u32) -> bool {
        self.get(key).is_some()
    }
}

/// Calls `f` on each row of the run with this key in rows sorted (not necessarily
/// strictly) by key, searched onward from `cursor`, which is left at the run's end.
#[inline(always)]
pub fn for_run<T>(
    rows: &[T],
    k: impl Fn(&T) -> u32,
    cursor: &Cell<usize>,
    key: u32,
    mut f: impl FnMut(&T),
) {
    let c = cursor.get();
    let mut i = match rows.get(c) {
        Some(r) if k(r) == key => c,
        _ => position(rows, &k, c, key),
    };
    while let Some(r) = rows.get(i)
        && k(r) == key
    {
        f(r);
        i += 1;
    }
    cursor.set(i);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn finds_like_a_hash_map_in_any_order() {
        // Keys with gaps, duplicates (the last wins) and an unsorted stretch.
        let keys: Vec<u32> = vec![5, 3, 9, 3, 100, 7, 50, 51, 52, 53, 60, 61, 200, 9, 1];
        let items: Vec<(u32, usize)> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let h: HashMap<u32, usize> = items.iter().copied().collect();
        let m = KeyMap::new(items);
        assert!(m.iter().zip(m.iter().skip(1)).all(|(a, b)| a.0 < b.0));
        let queries: Vec<u32> = (0..210)
            .chain((0..210).rev())
            .chain([9, 3, 200, 0, 52, 5])
            .collect();
        for q in queries {
            assert_eq!(m.get(q), h.get(&q), "key {q}");
        }
    }

    #[test]
    fn long_forward_jumps_and_empty_maps() {
        let m = KeyMap::new((0..1000u32).map(|k| (k * 2, k)));
        assert_eq!(m.get(0), Some(&0));
        assert_eq!(m.get(1998), Some(&999));
        assert_eq!(m.get(1999), None);
        assert_eq!(m.get(2), Some(&1));
        assert_eq!(m.get(700), Some(&350));
        assert_eq!(m.get(701), None);
        assert_eq!(m.get(1500), Some(&750));
        let e: KeyMap<u32> = KeyMap::empty();
        assert_eq!(e.get(1), None);
        assert!(e.is_empty());
    }

    #[test]
    fn rows_find_like_a_key_map_sorted_or_not() {
        let sorted: Vec<(u32, usize)> = (0..300u32).map(|k| (k * 3, k as usize)).collect();
        let keys: Vec<u32> = vec![5, 3, 9, 3, 100, 7, 50, 51, 52, 53, 60, 61, 200, 9, 1];
        let unsorted: Vec<(u32, usize)> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        for items in [sorted, unsorted] {
            let m = KeyMap::new(items.iter().copied());
            let r = Rows::new(&items, |e| e.0);
            let queries: Vec<u32> = (0..910)
                .chain((0..910).rev())
                .chain([9, 3, 0, 52])
                .collect();
            for q in queries {
                assert_eq!(r.get(q).map(|e| e.1), m.get(q).copied(), "key {q}");
            }
        }
    }

    #[test]
    fn runs_of_equal_keys() {
        let rows = [1u32, 1, 2, 4, 4, 4, 9];
        let c = Cell::new(0);
        let run = |key| {
            let mut v = Vec::new();
            for_run(&rows, |r| *r, &c, key, |r| v.push(*r));
            v
        };
        assert_eq!(run(1), [1, 1]);
        assert_eq!(run(3), [0u32; 0]);
        assert_eq!(run(4), [4, 4, 4]);
        assert_eq!(run(2), [2]);
        assert_eq!(run(10), [0u32; 0]);
        assert_eq!(run(9), [9]);
    }
}
