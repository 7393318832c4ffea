//! Kernel symbols from /proc/kallsyms, read once per process and shared by the
//! collectors: `addr_of(name)` before loading a BPF program that compares addresses,
//! `name_of(addr)` to put a name on an address a map reported.

use std::sync::OnceLock;

pub struct Kallsyms {
    /// (address, name), sorted by address; text symbols only.
    syms: Vec<(u64, String)>,
}

static KALLSYMS: OnceLock<Option<Kallsyms>> = OnceLock::new();

/// The symbol table, loaded on first use. None when /proc/kallsyms is unreadable or
/// hides addresses (kptr_restrict, not root).
pub fn get() -> Option<&'static Kallsyms> {
    KALLSYMS
        .get_or_init(|| {
            std::fs::read_to_string("/proc/kallsyms")
                .ok()
                .and_then(|t| Kallsyms::parse(&t))
        })
        .as_ref()
}

/// `addr_of` on the shared table; 0 when unknown.
pub fn addr_of(name: &str) -> u64 {
    get().and_then(|k| k.addr_of(name)).unwrap_or(0)
}

/// `name_of` on the shared table.
pub fn name_of(addr: u64) -> Option<String> {
    get().and_then(|k| k.name_of(addr)).map(str::to_string)
}

/// `lookup` on the shared table.
pub fn lookup(addr: u64) -> Option<(&'static str, u64)> {
    get().and_then(|k| k.lookup(addr))
}

impl Kallsyms {
    /// Parse kallsyms text ("ffffffff813424a0 t flush_tlb_func [module]").
    pub fn parse(text: &str) -> Option<Self> {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let kind = it.next()?;
                let name = it.next()?;
                matches!(kind, "t" | "T" | "w" | "W").then(|| (addr, name.to_string()))
            })
            .collect();
        if syms.iter().all(|(a, _)| *a == 0) {
            return None;
        }
        syms.sort_unstable_by_key(|(a, _)| *a);
        Some(Self { syms })
    }

    /// Address of a function (the first one of that name).
    pub fn addr_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|(_, n)| n == name).map(|(a, _)| *a)
    }

    /// The function containing `addr` (the closest symbol at or below it).
    pub fn name_of(&self, addr: u64) -> Option<&str> {
        self.lookup(addr).map(|(n, _)| n)
    }

    /// The function containing `addr` and its start address, by binary search: a
    /// stack frame costs O(log n), not a scan of the ~120k names by string compare.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        (i > 0 && addr != 0).then(|| {
            let (a, n) = &self.syms[i - 1];
            (n.as_str(), *a)
        })
    }
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
        assert_eq!(k.name_of(0xffffffff813424a0), Some("flush_tlb_func"));
        assert_eq!(k.name_of(0xffffffff813424a8), Some("flush_tlb_func"));
        assert_eq!(k.name_of(0x10), None);
        assert_eq!(
            k.lookup(0xffffffff81342b28),
            Some(("native_flush_tlb_multi", 0xffffffff81342b20))
        );
    }

    #[test]
    fn hidden_addresses_mean_no_table() {
        assert!(Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t x\n").is_none());
    }
}
