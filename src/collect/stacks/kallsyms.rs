//! Kernel symbols, shared by the collectors: `addr_of(name)` / `span_of(name)` before
//! loading a BPF program that compares addresses, `lookup(addr)` / `name_of(addr)` to put
//! a name on an address a map reported.
//!
//! Asked of the kernel by bpf/ksym.bpf.c (ksym_prog.rs) where it loads: a few lookups
//! by binary search instead of the kernel printing /proc/kallsyms (~150k lines, ~75 ms
//! of system time, a quarter of start-up). Otherwise, or with TTOP_KALLSYMS=file, the
//! file is read once and kept as a sorted table.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use crate::collect::stacks::ksym_prog::{Ksym, KsymProg};

pub struct Kallsyms {
    /// (address, offset and length of the name in `names`), sorted by address; text
    /// symbols only. One string for all names: ~120k small allocations made the parse
    /// cost as much as the kernel's ~80 ms to print the file, on the start-up path.
    syms: Vec<(u64, u32, u32)>,
    names: String,
}

/// Where the answers come from.
enum Source {
    /// The kernel, through the ksym program, with what it answered cached: names are
    /// interned (one leak per distinct kernel function seen, bounded by the kernel's).
    Prog(Box<Mutex<ProgCache>>),
    Table(Kallsyms),
}

struct ProgCache {
    prog: KsymProg,
    by_addr: HashMap<u64, Option<(&'static str, u64)>>,
    by_name: HashMap<String, Option<(u64, u64)>>,
    names: HashSet<&'static str>,
}

impl ProgCache {
    /// Ask the kernel for the functions of the addresses not asked yet (16 a run) and
    /// cache the answers, names interned.
    fn fill(&mut self, addrs: impl IntoIterator<Item = u64>) {
        let mut want: Vec<u64> = addrs
            .into_iter()
            .filter(|a| *a != 0 && !self.by_addr.contains_key(a))
            .collect();
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            return;
        }
        let Ok(found) = self.prog.by_addr(&want) else {
            return;
        };
        for (a, k) in want.into_iter().zip(found) {
            let v = k.map(|k| (self.intern(k.name), k.start));
            self.by_addr.insert(a, v);
        }
    }

    fn intern(&mut self, name: String) -> &'static str {
        if let Some(&n) = self.names.get(name.as_str()) {
            return n;
        }
        let n: &'static str = Box::leak(name.into_boxed_str());
        self.names.insert(n);
        n
    }
}

static SOURCE: OnceLock<Option<Source>> = OnceLock::new();

fn source() -> Option<&'static Source> {
    SOURCE
        .get_or_init(|| {
            let file = crate::collect::overrides::overrides().kallsyms_file;
            if !file && let Ok(prog) = KsymProg::load() {
                return Some(Source::Prog(Box::new(Mutex::new(ProgCache {
                    prog,
                    by_addr: HashMap::new(),
                    by_name: HashMap::new(),
                    names: HashSet::new(),
                }))));
            }
            read_file().map(Source::Table)
        })
        .as_ref()
}

/// /proc/kallsyms as a table. None when unreadable or hiding addresses (kptr_restrict,
/// not root).
fn read_file() -> Option<Kallsyms> {
    let f = std::fs::File::open("/proc/kallsyms").ok()?;
    Kallsyms::parse_from(std::io::BufReader::with_capacity(1 << 16, f))
}

/// Whether kernel addresses can be had at all.
pub fn available() -> bool {
    source().is_some()
}

/// Which source answers, for the README's and tests' comparisons.
pub fn from_kernel() -> bool {
    matches!(source(), Some(Source::Prog(_)))
}

/// Where the function `name` starts and how long it is.
pub fn span_of(name: &str) -> Option<(u64, u64)> {
    match source()? {
        Source::Table(k) => k.span_of(name),
        Source::Prog(m) => {
            let mut c = m.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(&v) = c.by_name.get(name) {
                return v;
            }
            let v = c
                .prog
                .by_name(&[name])
                .ok()
                .and_then(|mut v| v.pop().flatten())
                .map(|k: Ksym| (k.start, k.size));
            c.by_name.insert(name.to_string(), v);
            v
        }
    }
}

/// Address of a function; 0 when unknown.
pub fn addr_of(name: &str) -> u64 {
    span_of(name).map_or(0, |(a, _)| a)
}

/// The function containing `addr`.
pub fn name_of(addr: u64) -> Option<String> {
    lookup(addr).map(|(n, _)| n.to_string())
}

/// The function containing `addr` and its start address.
pub fn lookup(addr: u64) -> Option<(&'static str, u64)> {
    match source()? {
        Source::Table(k) => k.lookup(addr),
        Source::Prog(m) => {
            let mut c = m.lock().unwrap_or_else(|e| e.into_inner());
            c.fill([addr]);
            c.by_addr.get(&addr).copied().flatten()
        }
    }
}

/// Look up many addresses at once (16 a run), so a batch of new kernel stacks costs a
/// few runs of the program rather than one per frame. A no-op for the table.
pub fn prefetch(addrs: impl IntoIterator<Item = u64>) {
    if let Some(Source::Prog(m)) = source() {
        m.lock().unwrap_or_else(|e| e.into_inner()).fill(addrs);
    }
}

impl Kallsyms {
    /// Parse kallsyms text ("ffffffff813424a0 t flush_tlb_func\t[module]").
    pub fn parse(text: &str) -> Option<Self> {
        Self::parse_from(text.as_bytes())
    }

    /// Parse kallsyms line by line as it is read: the text (5 MB here) is never held
    /// whole, and the table is trimmed to what it holds (it stays for ttop's life).
    pub fn parse_from(mut r: impl std::io::BufRead) -> Option<Self> {
        let mut syms = Vec::new();
        let mut names = String::new();
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let mut it = line
                .split(|c| c.is_ascii_whitespace())
                .filter(|f| !f.is_empty());
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, b"t" | b"T" | b"w" | b"W") {
                continue;
            }
            let (Some(addr), Ok(name)) = (parse_hex(addr), std::str::from_utf8(name)) else {
                continue;
            };
            syms.push((addr, names.len() as u32, name.len() as u32));
            names.push_str(name);
        }
        syms.shrink_to_fit();
        names.shrink_to_fit();
        if syms.iter().all(|s| s.0 == 0) {
            return None;
        }
        // The kernel prints them in address order: sort only if it did not.
        if !syms.is_sorted_by_key(|s| s.0) {
            syms.sort_unstable_by_key(|s| s.0);
        }
        Some(Self { syms, names })
    }

    fn name(&self, &(_, off, len): &(u64, u32, u32)) -> &str {
        &self.names[off as usize..(off + len) as usize]
    }

    /// Address of a function (the first one of that name).
    pub fn addr_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| self.name(s) == name).map(|s| s.0)
    }

    /// Where the function `name` starts and how long it is (to the next symbol).
    pub fn span_of(&self, name: &str) -> Option<(u64, u64)> {
        let i = self.syms.iter().position(|s| self.name(s) == name)?;
        let start = self.syms[i].0;
        let next = self.syms[i + 1..].iter().find(|s| s.0 > start)?.0;
        Some((start, next - start))
    }

    /// The function containing `addr` and its start address, by binary search: a
    /// stack frame costs O(log n), not a scan of the ~120k names by string compare.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        (i > 0 && addr != 0).then(|| {
            let s = &self.syms[i - 1];
            (self.name(s), s.0)
        })
    }
}

/// A hexadecimal u64 ("ffffffff813424a0").
fn parse_hex(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    b.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some(v << 4 | u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_both_ways() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff813424a0 t flush_tlb_func\n\
             ffffffff81342b20 T native_flush_tlb_multi\nffffffff82000000 D some_data\n",
        )
        .unwrap();
        assert_eq!(k.addr_of("flush_tlb_func"), Some(0xffffffff813424a0));
        assert_eq!(k.addr_of("some_data"), None);
        assert_eq!(
            k.span_of("flush_tlb_func"),
            Some((0xffffffff813424a0, 0xffffffff81342b20 - 0xffffffff813424a0))
        );
        assert_eq!(
            k.span_of("native_flush_tlb_multi"),
            None,
            "no symbol after it"
        );
        assert_eq!(
            k.lookup(0xffffffff813424a0).map(|l| l.0),
            Some("flush_tlb_func")
        );
        assert_eq!(
            k.lookup(0xffffffff813424a8).map(|l| l.0),
            Some("flush_tlb_func")
        );
        assert_eq!(k.lookup(0x10).map(|l| l.0), None);
        assert_eq!(
            k.lookup(0xffffffff81342b28),
            Some(("native_flush_tlb_multi", 0xffffffff81342b20))
        );
    }

    #[test]
    fn module_symbols_and_any_order() {
        let k = Kallsyms::parse(
            "ffffffffc0002000 t mod_fn\t[kvm]\nffffffff81000000 T _stext\n\
             zzzz T bad_addr\nffffffffc0001000 T other_fn\t[kvm]\n",
        )
        .unwrap();
        assert_eq!(k.addr_of("mod_fn"), Some(0xffffffffc0002000));
        assert_eq!(k.addr_of("bad_addr"), None);
        assert_eq!(k.lookup(0xffffffffc0001010).map(|l| l.0), Some("other_fn"));
        assert_eq!(k.lookup(0xffffffff81000001).map(|l| l.0), Some("_stext"));
    }

    #[test]
    fn hidden_addresses_mean_no_table() {
        assert!(Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t x\n").is_none());
    }
}
