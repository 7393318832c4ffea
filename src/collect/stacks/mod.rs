//! Naming stacks: kernel addresses through the kernel's own symbols (`kallsyms`,
//! `ksym_prog`), user addresses through the binaries a process maps (`vma`, `symbols`,
//! `file_names`), frame-pointer-less user stacks unwound from .eh_frame (`unwind`), and
//! which frames are lock code rather than the caller (`lock_fns`).

pub mod file_names;
pub mod kallsyms;
pub mod ksym_prog;
pub mod lock_fns;
pub mod symbols;
pub mod unwind;
pub mod vma;
