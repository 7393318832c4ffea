//! Which frames are locking machinery rather than a caller: kernel lock and tracing
//! functions, the C library's, the C++ library's and the language runtimes' lock and
//! wait code, and unnamed frames inside those libraries.

/// An unnamed frame's label ("file+0xOFF") is in the C library, the dynamic loader or
/// the C++ runtime.
pub fn in_runtime_library(label: &str) -> bool {
    const LIBS: &[&str] = &[
        "libc.so",
        "libc-",
        "libpthread",
        "ld-linux",
        "ld-musl",
        "libstdc++",
        "libc++",
    ];
    LIBS.iter().any(|l| label.starts_with(l))
}

/// Kernel functions that are the locking machinery (or the tracing of it), not a caller.
pub fn is_kernel_lock_fn(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "bpf_",
        "__bpf_",
        "__traceiter_",
        "trace_",
        "perf_",
        "_raw_",
        "raw_spin",
        "queued_",
        "native_queued",
        "__pv_queued",
        "pv_",
        "do_raw_",
        "mutex_",
        "__mutex_",
        "ww_mutex",
        "down_",
        "__down",
        "up_",
        "rwsem_",
        "__rwsem",
        "rt_mutex",
        "__rt_mutex",
        "rt_spin",
        "rtlock_",
        "percpu_down",
        "__percpu_down",
        "percpu_rwsem",
        "osq_",
        "lock_",
        "__lock_",
        "spin_",
        "read_lock",
        "write_lock",
        "_read_lock",
        "_write_lock",
        "mmap_read_lock",
        "mmap_write_lock",
        "lock_mm_and_find_vma",
        "contention_",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// User functions that are the futex/lock wrappers of libc and friends, not a caller.
pub fn is_user_lock_fn(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "syscall",
        "__syscall",
        "futex",
        "__futex",
        "__GI___futex",
        "__GI___lll",
        "__lll_",
        "lll_",
        "__pthread_",
        "pthread_",
        "___pthread_",
        "__GI___pthread",
        "sem_",
        "__new_sem",
        "__old_sem",
        "runtime.futex",
        "runtime.lock",
        "runtime.unlock",
        "runtime.notesleep",
        "runtime.notetsleep",
        "runtime.semasleep",
        "std::sys::",
        "std::sync::",
        // Rust's v0 names demangle as `<std::sync::…>::lock`; parking is std's wait.
        "<std::sys::",
        "<std::sync::",
        "std::thread::park",
        "<std::thread::thread::Thread>::park",
        "<std::thread::Thread>::park",
        // C++: libstdc++'s and libc++'s mutexes, guards and condition variables
        // (demangled), and the gthread layer under them.
        "__gthread_",
        "std::mutex::",
        "std::timed_mutex::",
        "std::recursive_mutex::",
        "std::shared_mutex::",
        "std::shared_timed_mutex::",
        "std::__shared_mutex",
        "std::lock_guard<",
        "std::unique_lock<",
        "std::scoped_lock<",
        "std::shared_lock<",
        "std::condition_variable",
        "std::_V2::condition_variable",
        "std::__1::",
        "__libc_",
        "___lll",
        "__GI___lll",
        "do_futex_wait",
        "__new_sem_wait",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// User functions that are the C library's way into the calls that take a process's
/// mmap_lock (the syscall wrappers of mmap, munmap, mprotect, madvise, brk, a /proc
/// read, and malloc's paths to them), not a caller: an mmap_lock row's CALLER is the
/// program's function that made the call. Names are compared without glibc's `__`,
/// `__GI_` and `__libc_` decorations.
pub fn is_user_mm_fn(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "mmap",
        "mmap64",
        "munmap",
        "mprotect",
        "pkey_mprotect",
        "madvise",
        "posix_madvise",
        "mremap",
        "brk",
        "sbrk",
        "mlock",
        "mlock2",
        "munlock",
        "mlockall",
        "msync",
        "mincore",
        "read",
        "pread",
        "pread64",
        "readv",
        "preadv",
        "process_vm_readv",
        "process_vm_writev",
        "malloc",
        "calloc",
        "realloc",
        "free",
        "int_malloc",
        "int_free",
        "int_realloc",
        "sysmalloc",
        "systrim",
        "munmap_chunk",
        "mremap_chunk",
        "new_heap",
        "alloc_new_heap",
        "grow_heap",
        "shrink_heap",
        "heap_trim",
        "arena_get2",
    ];
    // "__GI___munmap+0x7" -> "munmap", "_int_malloc" -> "int_malloc".
    let mut n = name.split(['+', ' ']).next().unwrap_or(name);
    loop {
        let t = n.trim_start_matches('_');
        let t = t
            .strip_prefix("GI_")
            .or_else(|| t.strip_prefix("libc_"))
            .unwrap_or(t);
        if t == n {
            break;
        }
        n = t;
    }
    NAMES.contains(&n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm_call_wrappers_are_not_a_caller() {
        for n in [
            "__GI_munmap",
            "munmap",
            "__mmap64",
            "__GI___mmap64",
            "__libc_pread64",
            "_int_malloc",
            "sysmalloc",
            "__madvise",
        ] {
            assert!(is_user_mm_fn(n), "{n}");
        }
        for n in [
            "main",
            "victim_loop",
            "mmap_region_of_mine",
            "read_config",
            "__GI_",
        ] {
            assert!(!is_user_mm_fn(n), "{n}");
        }
    }

    #[test]
    fn lock_machinery_is_not_a_caller() {
        for n in [
            "_raw_spin_lock",
            "__mutex_lock.constprop.0",
            "rwsem_down_write_slowpath",
            "down_read",
            "__traceiter_contention_begin",
        ] {
            assert!(is_kernel_lock_fn(n), "{n}");
        }
        for n in [
            "do_mmap",
            "__x64_sys_munmap",
            "environ_read",
            "ext4_write_end",
        ] {
            assert!(!is_kernel_lock_fn(n), "{n}");
        }
        for n in [
            "syscall",
            "__lll_lock_wait",
            "pthread_mutex_lock",
            "___pthread_cond_wait",
            "runtime.futex",
            "std::lock_guard<std::mutex>::lock_guard(std::mutex&) (inlined)",
            "std::sys::sync::mutex::futex::Mutex::lock_contended",
            "<std::thread::thread::Thread>::park_timeout",
            "<std::sync::mpmc::list::Channel<alloc::string::String>>::recv::{closure#1}",
        ] {
            assert!(is_user_lock_fn(n), "{n}");
        }
        assert!(!is_user_lock_fn("Worker::take_lock()"));
        assert!(!is_user_lock_fn("std::vector<int>::push_back"));
        assert!(!is_user_lock_fn("worker"));
    }
}
