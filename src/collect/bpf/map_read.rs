//! Reading a whole BPF hash map once per tick: BPF_MAP_LOOKUP_BATCH (a few syscalls for
//! thousands of entries) into buffers reused from tick to tick, handing each entry to a
//! callback as borrowed bytes (no allocation per entry). A kernel without batch
//! operations (before 5.6, or a map type without them) is read key by key instead.

use std::cell::RefCell;
use std::os::fd::AsRawFd;

use libbpf_rs::MapCore;
use libbpf_rs::libbpf_sys;

/// Entries asked for per batch call, at most.
const BATCH: usize = 4096;
/// Bytes of keys and values asked for per batch call, at most: the buffers live for the
/// thread's life, and 4096 entries of a big value (the per-thread scheduler entries)
/// held 3.3 MB of it; a few more syscalls a tick cost less than keeping that.
const BATCH_BYTES: usize = 256 << 10;

thread_local! {
    /// (keys, values) buffers: one collector thread reads every map, so one pair serves.
    static BUFS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Call `f(key, value)` for every entry of `map` (a non-per-CPU hash map).
pub fn for_each<M: MapCore + ?Sized>(map: &M, mut f: impl FnMut(&[u8], &[u8])) {
    let (ks, vs) = (map.key_size() as usize, map.value_size() as usize);
    if ks == 0 || vs == 0 {
        return;
    }
    let batched = BUFS.with(|b| match b.try_borrow_mut() {
        Ok(mut b) => {
            let (keys, vals) = &mut *b;
            batch(map, ks, vs, keys, vals, &mut f)
        }
        // Called from inside another walk's callback: buffers of its own.
        Err(_) => batch(map, ks, vs, &mut Vec::new(), &mut Vec::new(), &mut f),
    });
    if !batched {
        one_by_one(map, ks, vs, &mut f);
    }
}

/// The batched walk; false if the kernel refused the first call (nothing was read).
fn batch<M: MapCore + ?Sized>(
    map: &M,
    ks: usize,
    vs: usize,
    keys: &mut Vec<u8>,
    vals: &mut Vec<u8>,
    f: &mut impl FnMut(&[u8], &[u8]),
) -> bool {
    let fd = map.as_fd().as_raw_fd();
    let mut want = (BATCH_BYTES / (ks + vs)).clamp(16, BATCH);
    // The batch token: a bucket index for hash maps (4 bytes); sized generously.
    let tok = ks.max(8);
    let (mut in_tok, mut out_tok) = (vec![0u8; tok], vec![0u8; tok]);
    let mut first = true;
    let opts = libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    loop {
        // Grow only: the buffers serve maps of every size, and re-zeroing them for each
        // map cost more than the kernel's walk (the kernel overwrites what it returns).
        if keys.len() < want * ks {
            keys.resize(want * ks, 0);
        }
        if vals.len() < want * vs {
            vals.resize(want * vs, 0);
        }
        let mut count = want as u32;
        // SAFETY: keys and values hold `count` entries of the map's key and value sizes,
        // the tokens hold at least a key (and 4 bytes); the fd is the map's.
        let ret = unsafe {
            libbpf_sys::bpf_map_lookup_batch(
                fd,
                if first {
                    std::ptr::null_mut()
                } else {
                    in_tok.as_mut_ptr().cast()
                },
                out_tok.as_mut_ptr().cast(),
                keys.as_mut_ptr().cast(),
                vals.as_mut_ptr().cast(),
                &mut count,
                &opts,
            )
        };
        let err = if ret < 0 { -ret } else { 0 };
        match err {
            0 | libc::ENOENT => {
                let n = (count as usize).min(want);
                for i in 0..n {
                    f(&keys[i * ks..(i + 1) * ks], &vals[i * vs..(i + 1) * vs]);
                }
                if err == libc::ENOENT {
                    return true;
                }
                std::mem::swap(&mut in_tok, &mut out_tok);
                first = false;
            }
            // One bucket holds more entries than asked for: ask for more.
            libc::ENOSPC if want < (1 << 20) => want *= 2,
            libc::EINTR | libc::EAGAIN => {}
            // Not supported (EINVAL, ENOTSUPP, EOPNOTSUPP...): walk the keys instead,
            // unless entries were already handed out (then stop: no duplicates).
            _ => return !first,
        }
    }
}

/// A full walk at least this often, whatever the insert count says.
const WALK_EVERY: u32 = 16;

/// A map read every tick whose BPF side counts the entries it creates (`inserts` in
/// the .bss of each object). Walking a hash map visits every bucket: 65,536 of them
/// for a thread map holding forty threads, about 0.2 ms each tick. While the count
/// has not moved since the last walk, no key is new, and looking up the keys that walk
/// found costs a fraction of that; a key gone since is dropped.
#[derive(Default)]
pub struct Tracked {
    /// The keys found, packed end to end (each the map's key size).
    keys: Vec<u8>,
    /// The insert count read just before the last full walk.
    seen: Option<u64>,
    reads_since_walk: u32,
    /// Reused value buffer.
    val: Vec<u8>,
}

impl Tracked {
    /// `for_each` over `map`, with `inserts` the map's insert count read just now
    /// (before this call: an entry created during the walk moves it for the next one);
    /// None (unknown) walks.
    pub fn for_each<M: MapCore + ?Sized>(
        &mut self,
        map: &M,
        inserts: Option<u64>,
        mut f: impl FnMut(&[u8], &[u8]),
    ) {
        let (ks, vs) = (map.key_size() as usize, map.value_size() as usize);
        if ks == 0 || vs == 0 {
            return;
        }
        let known = self.keys.len() / ks;
        // Measured here: a lookup (a syscall) 0.54 µs, a cold bucket 2.8 ns, so one lookup
        // costs what walking ~190 buckets does; 100 leaves a margin towards walking.
        let lookups_cheaper = known * 100 < map.max_entries() as usize;
        if inserts.is_some()
            && self.seen == inserts
            && lookups_cheaper
            && self.reads_since_walk < WALK_EVERY
        {
            self.reads_since_walk += 1;
            self.val.resize(vs, 0);
            let fd = map.as_fd().as_raw_fd();
            let mut kept = 0;
            for i in 0..known {
                let at = i * ks;
                // SAFETY: the key and value buffers are the map's key and value sizes.
                let ret = unsafe {
                    libbpf_sys::bpf_map_lookup_elem(
                        fd,
                        self.keys[at..].as_ptr().cast(),
                        self.val.as_mut_ptr().cast(),
                    )
                };
                if ret == 0 {
                    f(&self.keys[at..at + ks], &self.val);
                    self.keys.copy_within(at..at + ks, kept * ks);
                    kept += 1;
                }
            }
            self.keys.truncate(kept * ks);
            return;
        }
        self.seen = inserts;
        self.reads_since_walk = 0;
        let keys = &mut self.keys;
        keys.clear();
        for_each(map, |k, v| {
            keys.extend_from_slice(k);
            f(k, v);
        });
    }
}

/// Delete the keys packed end to end in `keys` (each the map's key size) from a hash
/// map: BPF_MAP_DELETE_BATCH, one syscall for all of them, or one delete per key where
/// the kernel has no batch operations. A key already gone is skipped, not an error.
pub fn delete_all<M: MapCore + ?Sized>(map: &M, keys: &[u8]) {
    let ks = map.key_size() as usize;
    if ks == 0 || keys.len() < ks {
        return;
    }
    let fd = map.as_fd().as_raw_fd();
    let opts = libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    let mut rest = &keys[..keys.len() - keys.len() % ks];
    while !rest.is_empty() {
        let mut count = (rest.len() / ks) as u32;
        // SAFETY: `rest` holds `count` keys of the map's key size; the fd is the map's.
        let ret = unsafe {
            libbpf_sys::bpf_map_delete_batch(fd, rest.as_ptr().cast(), &mut count, &opts)
        };
        if ret == 0 {
            return;
        }
        if -ret != libc::ENOENT {
            // No batch operations here (the count is then not to be trusted): one by one.
            for k in rest.chunks_exact(ks) {
                // SAFETY: k is one key of the map's key size.
                unsafe { libbpf_sys::bpf_map_delete_elem(fd, k.as_ptr().cast()) };
            }
            return;
        }
        // The batch stopped at a key already gone, after deleting `count`: skip it.
        let done = (count as usize).min(rest.len() / ks);
        rest = &rest[done * ks..];
        if let Some((k, tail)) = rest.split_at_checked(ks) {
            // SAFETY: k is one key of the map's key size.
            unsafe { libbpf_sys::bpf_map_delete_elem(fd, k.as_ptr().cast()) };
            rest = tail;
        }
    }
}

/// get_next_key + lookup, one key at a time (two syscalls per entry).
fn one_by_one<M: MapCore + ?Sized>(
    map: &M,
    ks: usize,
    vs: usize,
    f: &mut impl FnMut(&[u8], &[u8]),
) {
    let fd = map.as_fd().as_raw_fd();
    let (mut prev, mut next, mut val) = (vec![0u8; ks], vec![0u8; ks], vec![0u8; vs]);
    let mut first = true;
    loop {
        // SAFETY: prev and next hold one key each; the fd is the map's.
        let r = unsafe {
            libbpf_sys::bpf_map_get_next_key(
                fd,
                if first {
                    std::ptr::null()
                } else {
                    prev.as_ptr().cast()
                },
                next.as_mut_ptr().cast(),
            )
        };
        if r < 0 {
            return;
        }
        first = false;
        // SAFETY: next holds one key and val one value.
        let r = unsafe {
            libbpf_sys::bpf_map_lookup_elem(fd, next.as_ptr().cast(), val.as_mut_ptr().cast())
        };
        if r == 0 {
            f(&next, &val);
        }
        std::mem::swap(&mut prev, &mut next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libbpf_rs::{MapFlags, MapHandle, MapType};

    /// Every entry once, through the batched walk and through the key-by-key one, also
    /// with more entries than one batch and from inside another walk. Needs root.
    /// A u32 -> u64 hash map of `entries`, or None (skip) where BPF maps cannot be
    /// created; CI runs as root, and there a missing map is a failure.
    fn test_map(entries: u32) -> Option<MapHandle> {
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        };
        let map = MapHandle::create(MapType::Hash, Some("ttop_test"), 4, 8, entries, &opts);
        if map.is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cannot create a BPF map under CI"
            );
            eprintln!("skipped: cannot create a BPF map (not root?)");
        }
        map.ok()
    }

    #[test]
    fn reads_every_entry_once() {
        let Some(map) = test_map(20_000) else {
            return;
        };
        let n = 10_000u32;
        for k in 0..n {
            map.update(
                &k.to_ne_bytes(),
                &u64::from(k * 3).to_ne_bytes(),
                MapFlags::ANY,
            )
            .unwrap();
        }
        let check = |seen: Vec<(u32, u64)>| {
            let mut seen = seen;
            seen.sort_unstable();
            assert_eq!(seen.len(), n as usize);
            assert!(
                seen.iter()
                    .enumerate()
                    .all(|(i, &(k, v))| k == i as u32 && v == u64::from(k * 3))
            );
        };
        let parse = |k: &[u8], v: &[u8]| {
            (
                u32::from_ne_bytes(k.try_into().unwrap()),
                u64::from_ne_bytes(v.try_into().unwrap()),
            )
        };
        let mut seen = Vec::new();
        for_each(&map, |k, v| seen.push(parse(k, v)));
        check(seen);
        let mut seen = Vec::new();
        one_by_one(&map, 4, 8, &mut |k, v| seen.push(parse(k, v)));
        check(seen);
        // Delete every third key in one batch, with one key already gone in the middle.
        let mut del: Vec<u8> = (0..n).step_by(3).flat_map(|k| k.to_ne_bytes()).collect();
        map.delete(&300u32.to_ne_bytes()).unwrap();
        del.extend_from_slice(&(n + 7).to_ne_bytes()); // never there
        delete_all(&map, &del);
        let mut left = Vec::new();
        for_each(&map, |k, _| left.push(parse(k, &[0u8; 8]).0));
        left.sort_unstable();
        assert_eq!(left, (0..n).filter(|k| k % 3 != 0).collect::<Vec<_>>());
        for k in (0..n).step_by(3) {
            map.update(
                &k.to_ne_bytes(),
                &u64::from(k * 3).to_ne_bytes(),
                MapFlags::ANY,
            )
            .unwrap();
        }
        let (mut outer, mut inner) = (0, Vec::new());
        for_each(&map, |_, _| {
            outer += 1;
            if outer == 1 {
                for_each(&map, |k, v| inner.push(parse(k, v)));
            }
        });
        assert_eq!(outer, n);
        check(inner);
    }

    /// The tracked read: the keys of its last walk looked up one by one while the insert
    /// count stands still (in-place value changes and deletions show), a walk as soon
    /// as it moves, and a walk every WALK_EVERY reads whatever it says. Needs root.
    #[test]
    fn tracked_reads_look_up_known_keys_until_an_insert() {
        let Some(map) = test_map(65_536) else {
            return;
        };
        let put = |k: u32, v: u64| {
            map.update(&k.to_ne_bytes(), &v.to_ne_bytes(), MapFlags::ANY)
                .unwrap()
        };
        let read = |t: &mut Tracked, inserts: Option<u64>| {
            let mut seen = Vec::new();
            t.for_each(&map, inserts, |k, v| {
                seen.push((
                    u32::from_ne_bytes(k.try_into().unwrap()),
                    u64::from_ne_bytes(v.try_into().unwrap()),
                ));
            });
            seen.sort_unstable();
            seen
        };
        for k in 1..=40 {
            put(k, 1);
        }
        let mut t = Tracked::default();
        assert_eq!(read(&mut t, Some(40)).len(), 40, "the first read walks");
        // Values changed in place and a key deleted: seen through lookups.
        put(7, 99);
        map.delete(&8u32.to_ne_bytes()).unwrap();
        let seen = read(&mut t, Some(40));
        assert_eq!(seen.len(), 39);
        assert!(seen.contains(&(7, 99)) && !seen.iter().any(|&(k, _)| k == 8));
        // A key added behind the count's back is not walked for (this is what the count
        // saves)...
        put(1000, 5);
        assert!(!read(&mut t, Some(40)).iter().any(|&(k, _)| k == 1000));
        // ...the count moving finds it, and so does an unknown count.
        assert!(read(&mut t, Some(41)).contains(&(1000, 5)));
        put(1001, 6);
        assert!(read(&mut t, None).contains(&(1001, 6)));
        // A walk at least every WALK_EVERY reads.
        put(1002, 7);
        let found = (0..=WALK_EVERY).any(|_| read(&mut t, None).contains(&(1002, 7)));
        assert!(found);
        put(1003, 8);
        let mut t2 = Tracked::default();
        read(&mut t2, Some(50));
        put(1004, 9);
        let found = (0..=WALK_EVERY).any(|_| read(&mut t2, Some(50)).contains(&(1004, 9)));
        assert!(found, "no walk within {WALK_EVERY} reads");
    }
}
