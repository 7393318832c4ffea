//! The scheduler object's task iterators: run from user space, each a walk of every
//! task in the kernel (bpf/sched.bpf.c), read like a file.

use std::io::Read;

use libbpf_rs::Link;

/// Run the iterator behind `link` once: what it wrote.
pub fn run(link: &Link) -> Result<Vec<u8>, String> {
    let mut it = libbpf_rs::Iter::new(link).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    it.read_to_end(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Run the task iterator that gives every thread asleep right now the start and cause of
/// its sleep (ttop_seed_sleepers), once, after the probes attached.
pub fn seed_sleepers(prog: &libbpf_rs::ProgramMut<'static>) -> Result<(), String> {
    if !prog.autoload() {
        return Err("not loaded on this kernel (task iterators need BTF)".into());
    }
    let link = prog.attach().map_err(|e| e.to_string())?;
    run(&link).map(|_| ())
}
