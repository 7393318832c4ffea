// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Contention for ttop: futex waits and wakes per (process, futex word), kernel lock
 * waits (lock:contention_begin/end) per (lock, kernel stack, process), and mmap_lock
 * waits per (victim process, holder process, waiting thread).
 *
 * Raw tracepoints with CO-RE reads only, except the futex syscall tracepoints, which
 * need tracefs and have a raw_syscalls fallback. Each program is attached on its own
 * by user space: a kernel without the lock or mmap_lock tracepoints loses those
 * views, not the futex one.
 *
 * Pairs of events (enter/exit, begin/end, start/acquired/released) are matched through
 * per-thread entries that the next "begin" simply overwrites, so a lost event costs one
 * measurement and never leaves a thread "waiting" for ever.
 *
 * One object, in files by concern: futex_shared.h (what it shares with the scheduler
 * object's switch program: the per-thread state, the futex maps, counters), contention.h
 * (what its probes share: helpers), contention_futex.h (per call, syscall hooks),
 * futex_sleep.h and contention_sleep.h (slept waits, scheduler hooks), contention_mmap.h, contention_locks.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ttop.h"
#include "floor.h"
#include "compat.h"
#include "log2.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "futex_shared.h"
#include "contention.h"
#include "contention_futex.h"
#include "futex_sleep.h"
#include "contention_sleep.h"
#include "contention_mmap.h"
/* After the mmap_lock helpers: a kernel-lock wait may be an mmap_lock wait. */
#include "contention_locks.h"
