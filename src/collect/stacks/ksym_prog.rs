//! Kernel symbols asked of the kernel itself (bpf/ksym.bpf.c): a name's address and
//! size, an address's function, each by the kernel's own binary search, run on demand
//! with BPF_PROG_RUN. Replaces reading /proc/kallsyms (which makes the kernel print
//! ~150k lines) wherever the program loads; kallsyms.rs falls back to the file.

use std::mem::MaybeUninit;

use libbpf_rs::OpenObject;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::collect::bpf::common::c_str;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/ksym.skel.rs"));
}
use skel::{KsymSkel, KsymSkelBuilder};

const BATCH: usize = 16;
const TEXT: usize = 256;

/// A function found by the kernel: where it starts and how long it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ksym {
    pub name: String,
    pub start: u64,
    pub size: u64,
}

pub struct KsymProg {
    skel: KsymSkel<'static>,
}

impl KsymProg {
    /// Load the program and check it answers (it needs bpf_kallsyms_lookup_name, 5.16+,
    /// and addresses not hidden from this user). Err is a one-line reason.
    pub fn load() -> Result<Self, String> {
        // The skeleton borrows its object for its whole life (see SchedCollector::load);
        // there is one per process.
        let obj: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = KsymSkelBuilder::default()
            .open(obj)
            .map_err(|e| format!("kernel-symbol program: open: {e}"))?;
        let skel = open
            .load()
            .map_err(|e| format!("kernel-symbol program: load: {e}"))?;
        let mut p = Self { skel };
        match p.by_name(&["_stext"]).map(|mut v| v.pop().flatten()) {
            Ok(Some(k)) if k.start != 0 => Ok(p),
            Ok(_) => Err("kernel-symbol program: _stext not found (addresses hidden?)".into()),
            Err(e) => Err(e),
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let input = libbpf_rs::ProgramInput {
            context_in: None,
            context_out: None,
            data_in: None,
            data_out: None,
            cpu: 0,
            flags: 0,
            repeat: 0,
            _non_exhaustive: (),
        };
        self.skel
            .progs
            .ttop_ksym
            .test_run(input)
            .map(|_| ())
            .map_err(|e| format!("kernel-symbol program: run: {e}"))
    }

    /// Each name's function (None: no such symbol), up to any number of names.
    pub fn by_name(&mut self, names: &[&str]) -> Result<Vec<Option<Ksym>>, String> {
        let mut out = Vec::with_capacity(names.len());
        for chunk in names.chunks(BATCH) {
            {
                let io = &mut self.bss()?.io;
                io.n = chunk.len() as u32;
                io.by_name = 1;
                for (i, name) in chunk.iter().enumerate() {
                    let b = name.as_bytes();
                    let t = io.text[i].as_flattened_mut();
                    let len = b.len().min(TEXT - 1);
                    for (d, &s) in t.iter_mut().zip(&b[..len]) {
                        *d = s as _;
                    }
                    t[len..].fill(0);
                }
            }
            self.run()?;
            let io = &self.bss()?.io;
            for (i, name) in chunk.iter().enumerate() {
                // Found (addr set) even when "%pS" cannot place it: a section bound such
                // as _etext is past the last function, so it has no size (0).
                let addr = io.addr[i];
                let size = (io.err[i] == 0)
                    .then(|| parse_ps(&text(io.text[i].as_flattened()), addr))
                    .flatten()
                    .filter(|k| k.start == addr)
                    .map_or(0, |k| k.size);
                // "%pS" may name an alias at that address: keep the asked name.
                out.push((addr != 0).then(|| Ksym {
                    name: (*name).to_string(),
                    start: addr,
                    size,
                }));
            }
        }
        Ok(out)
    }

    /// Each address's function (None: in no known symbol).
    pub fn by_addr(&mut self, addrs: &[u64]) -> Result<Vec<Option<Ksym>>, String> {
        let mut out = Vec::with_capacity(addrs.len());
        for chunk in addrs.chunks(BATCH) {
            {
                let io = &mut self.bss()?.io;
                io.n = chunk.len() as u32;
                io.by_name = 0;
                io.addr[..chunk.len()].copy_from_slice(chunk);
            }
            self.run()?;
            let io = &self.bss()?.io;
            for (i, &a) in chunk.iter().enumerate() {
                out.push(
                    (io.err[i] == 0 && a != 0)
                        .then(|| parse_ps(&text(io.text[i].as_flattened()), a))
                        .flatten(),
                );
            }
        }
        Ok(out)
    }

    fn bss(&mut self) -> Result<&mut skel::types::bss, String> {
        self.skel
            .maps
            .bss_data
            .as_deref_mut()
            .ok_or_else(|| "kernel-symbol program: no .bss mapping".to_string())
    }
}

fn text(t: &[std::ffi::c_char]) -> String {
    c_str(&t.iter().map(|&c| c as u8).collect::<Vec<u8>>())
}

/// "name+0xoff/0xsize" or "name+0xoff/0xsize [module]" for `addr` → its function.
/// None for a bare address (the kernel prints "0xffff..." when no symbol holds it).
pub fn parse_ps(s: &str, addr: u64) -> Option<Ksym> {
    let s = s.split(" [").next().unwrap_or(s).trim();
    let (name, rest) = s.rsplit_once('+')?;
    let (off, size) = rest.split_once('/')?;
    let hex = |h: &str| u64::from_str_radix(h.strip_prefix("0x")?, 16).ok();
    let (off, size) = (hex(off)?, hex(size)?);
    (!name.is_empty() && off <= addr).then(|| Ksym {
        name: name.to_string(),
        start: addr - off,
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_ps_gives_the_function_its_start_and_size() {
        assert_eq!(
            parse_ps("schedule+0x2c/0x90", 0xffff_ffff_8100_002c),
            Some(Ksym {
                name: "schedule".into(),
                start: 0xffff_ffff_8100_0000,
                size: 0x90
            })
        );
        let m = parse_ps("e1000_clean+0x10/0x400 [e1000]", 0x1010).unwrap();
        assert_eq!(
            (m.name.as_str(), m.start, m.size),
            ("e1000_clean", 0x1000, 0x400)
        );
        // A name with dots (a compiler clone) keeps them.
        let c = parse_ps("foo.cold+0x0/0x12", 0x500).unwrap();
        assert_eq!((c.name.as_str(), c.start), ("foo.cold", 0x500));
        // No symbol: the kernel printed the address.
        assert_eq!(parse_ps("0xffffffffc0001234", 0xffff_ffff_c000_1234), None);
        assert_eq!(parse_ps("", 1), None);
        // A truncated answer (no size) is not trusted.
        assert_eq!(parse_ps("very_long_na", 1), None);
    }
}
