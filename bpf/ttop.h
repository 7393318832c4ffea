/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every struct that crosses the kernel/user boundary is defined here, once.
 * The BPF objects are compiled with this header, and libbpf-cargo generates the
 * Rust types (skel::types::*) from the objects' BTF, so Rust never re-declares a
 * C struct by hand.
 */
#ifndef TTOP_H
#define TTOP_H

#define TTOP_MAX_CPUS 1024
#define TTOP_MAX_THREADS 65536
#define TTOP_MAX_PROCS 16384
#define TTOP_MAX_FILTER 1024
#define TTOP_MAX_GHOST_NAMES 4096

/* Indexes of the `inserts` counters (new entries per map user space walks each tick):
 * sched.bpf.c, then contention.bpf.c. */
#define TTOP_INS_THREADS 0
#define TTOP_INS_PROCS 1
#define TTOP_INS_LAT_THREADS 2
#define TTOP_INS_GHOST_NAMES 3
#define TTOP_INS_LAT_EXITS 4 /* unused since lat_exits is a ring buffer */
#define TTOP_INS_SCHED 5
#define TTOP_INS_FUTEXES 0
#define TTOP_INS_LOCKS 1
#define TTOP_INS_MMAP_WAITS 2
#define TTOP_INS_CONTENTION 3

/* One slot per CPU (BPF_MAP_TYPE_ARRAY indexed by CPU id), written under that CPU's
 * run-queue lock: by the CPU itself at its switches, and by another CPU that changes its
 * run queue (a remote wakeup, a migration away). 128 bytes with 64 in use: an array's
 * values start 16 bytes into a cache line, and at this size no two CPUs' fields in use
 * share a line (at 80 bytes CPU 1's slot began in CPU 0's cur_tid line, written at every
 * switch). */
struct cpu_stats {
	__u64 switches;      /* sched_switch events on this CPU */
	__u64 runq_area;     /* integral of rq->nr_running over time, in task*ns */
	__u64 runq_last_ts;  /* ktime of the last integration step */
	__u64 runq_max_gen;  /* tick generation runq_max belongs to */
	__u32 runq_last_nr;  /* rq->nr_running seen at the last step */
	__u32 runq_max;      /* max rq->nr_running seen during runq_max_gen */
	__u32 cur_tid;       /* the task we saw switch in last (0: idle) */
	__u32 pad;
	__u64 gaps;          /* sched_switch whose prev was not the last next */
	__u64 unused[9];
};

/* Counts of events that target a CPU, kept by the CPU the event runs on (a
 * BPF_MAP_TYPE_PERCPU_ARRAY keyed by the target CPU): no atomic, and no cache line
 * written by two CPUs. User space sums each key over the CPUs. */
struct cpu_remote {
	__u64 migrations;    /* tasks migrated to the key's CPU */
	__u64 wakeups;       /* wakeups targeting the key's CPU */
};

/* Per thread (hash keyed by tid). Cumulative since ttop first saw the thread. */
/* Why a thread is off its CPU and not runnable, decided at its switch-out from the
 * state it leaves in, the system call it sleeps in (its saved user registers) and the
 * task's in-iowait flag. Every off-CPU nanosecond goes to one of these. */
enum ttop_split {
	TTOP_SPLIT_FUTEX = 0, /* asleep in futex() or futex_waitv() */
	TTOP_SPLIT_IO = 1,    /* uninterruptible in io_schedule (in_iowait): block I/O */
	TTOP_SPLIT_FAULT = 2, /* uninterruptible in an exception, not a system call: a page fault
	                     * (a major fault waiting for its page, reclaim, the mmap_lock) */
	TTOP_SPLIT_D = 3,     /* uninterruptible otherwise: kernel locks, other waits */
	TTOP_SPLIT_POLL = 4,  /* asleep in epoll_wait, poll, select and their variants */
	TTOP_SPLIT_SLEEP = 5, /* asleep in nanosleep or clock_nanosleep */
	TTOP_SPLIT_READ = 6,  /* asleep in read, readv, pread, preadv, recvfrom, recvmsg, recvmmsg */
	TTOP_SPLIT_OTHER = 7, /* asleep in another system call (wait4, accept, pause...), stopped,
	                     * or a kernel thread's idle wait */
	TTOP_SPLIT_LOCK = 8,  /* uninterruptible in a kernel mutex or rwsem wait (5.19+) */
	TTOP_SPLIT_MMAP = 9,  /* the same, on its own process's mmap_lock */
	TTOP_SPLIT__COUNT = 10,
};

struct thread_stats {
	__u32 tgid;
	__u32 cpu;           /* CPU it last switched in on */
	__u32 on_cpu;        /* 1 while the thread is on a CPU (last_in is valid) */
	__u32 enq_pcount;    /* sched_info.pcount when enq_ts was set: a switch-in we missed
	                      * since then shows as a larger pcount at the next one */
	__u32 lat_state;     /* its scheduling latencies: TTOP_LAT_NONE, _ONE or _MAP */
	__u32 lock_wait;     /* in a sleeping-lock wait now: 0, TTOP_SPLIT_LOCK or _MMAP */
	__u64 base_ns;       /* se.sum_exec_runtime when ttop first saw it (0: born under ttop) */
	__u64 sum_ns;        /* se.sum_exec_runtime at the last event we saw */
	__u64 last_in;       /* ktime of the last switch-in */
	__u64 runq_wait_ns;  /* time spent runnable but waiting for a CPU */
	__u64 enq_ts;        /* ktime it became runnable (0: not waiting) */
	__u64 switches;      /* times it was switched out */
	__u64 birth_gen;     /* scan generation at creation (0: existed before ttop) */
	/* TTOP_LAT_ONE: the thread's only latency so far (most short-lived threads have
	 * one), kept here rather than in a lat_threads entry of 800 bytes that would be
	 * zeroed and deleted again. Read it as a lat_stats of count 1. */
	__u64 lat1_ns;
	__u64 lat1_ts;       /* ktime when it got the CPU */
	__u64 lat1_gen;      /* tick generation it belongs to */
	/* Where its off-CPU time goes (the wall-time split): the sleep it is in now, since
	 * off_ts (0: not asleep, or asleep since before ttop saw it), and the time of its
	 * ended sleeps by cause (enum ttop_split). */
	__u64 off_ts;
	__u32 off_cause;
	__u32 pad2;
	__u64 off_ns[TTOP_SPLIT__COUNT];
	/* Wall-clock time on a CPU, switch-in to switch-out: the split's on-CPU part. The
	 * task's runtime (sum_ns) leaves out interrupts and a hypervisor's steal while it
	 * held the CPU, so it would not add up to the wall time. */
	__u64 oncpu_wall_ns;
	/* The lock of the sleeping-lock wait it is in (lock:contention_begin), 0 when none:
	 * contention_end of that lock ends it. */
	__u64 lock_addr;
};

/* One record of the ttop_dump_threads task iterator: a thread's entry, with its tid. */
struct thread_rec {
	__u32 tid;
	__u32 pad;
	struct thread_stats s;
};

/* Blocked now: the kernel stack of a thread in an uninterruptible sleep, read by the
 * ttop_blocked_stacks task iterator at the tick (what /proc/PID/stack shows), one record
 * per such thread that ttop knows asleep. */
#define TTOP_BLOCKED_DEPTH 24
struct blocked_stack {
	__u64 off_ts;        /* thread_stats.off_ts: the sleep the stack is of */
	__u32 tid;
	__u32 nr;            /* frames in ips, innermost first */
	__u64 ips[TTOP_BLOCKED_DEPTH];
};

/* thread_stats.lat_state */
#define TTOP_LAT_NONE 0      /* no latency measured yet */
#define TTOP_LAT_ONE 1       /* one, in lat1_* */
#define TTOP_LAT_MAP 2       /* lat_threads has them all (lat1_* folded in) */

/* Ghost threads grouped by name within a process (hash): "312 short-lived threads
 * named worker-*". Keyed by tgid and the thread's comm at exit. */
struct ghost_key {
	__u32 tgid;
	char comm[16];
};

struct ghost_stats {
	__u64 count;
	__u64 oncpu_ns;
};

/* Per process (hash keyed by tgid): what outlives the threads. */
struct proc_stats {
	__u64 created;          /* task_newtask in this tgid (threads, or the process itself) */
	__u64 exited;           /* sched_process_exit in this tgid */
	__u64 ghosts;           /* exited threads born after the last /proc scan began */
	__u64 dead_oncpu_ns;    /* on-CPU time of exited threads */
	__u64 dead_runq_wait_ns;/* run-queue wait of exited threads */
	__u64 ghost_oncpu_ns;   /* on-CPU time of ghost threads (part of dead_oncpu_ns) */
	char comm[16];          /* the group leader's comm when it exited */
	__u64 dead_off_ns[TTOP_SPLIT__COUNT]; /* off-CPU time of exited threads, by cause */
	__u64 dead_oncpu_wall_ns; /* their wall-clock time on a CPU (oncpu_wall_ns) */
};

/* Map-full and other losses; index with enum ttop_drop. */
enum ttop_drop {
	DROP_THREADS = 0,   /* thread_stats map full */
	DROP_PROCS = 1,     /* proc_stats map full */
	DROP_GAPS = 2,      /* sched_switch events the kernel never delivered (see cpu_stats.gaps) */
	DROP_GHOST_NAMES = 7, /* ghost_names map full (the count per process stays exact) */
	DROP_LAT_THREADS = 3, /* per-thread latency map full: a thread's latencies went uncounted */
	DROP_LAT_STALE = 4, /* latency samples discarded: a missed event made the wait unknowable */
	DROP__COUNT = 8,
};

/* ==== contention: futexes, kernel locks, mmap_lock (bpf/contention.bpf.c) ==== */

/* (thread, futex word) entries; allocated on use (BPF_F_NO_PREALLOC) */
#define TTOP_MAX_FUTEXES 65536
#define TTOP_MAX_LOCKS 8192
#define TTOP_MAX_MMAP 4096
#define TTOP_STACKS 4096
/* Each stack map's spill map (stackid_or_spill in bpf/contention_futex.h): its ids are
 * offset by TTOP_STACKS. */
#define TTOP_STACKS_SPILL 1024
#define TTOP_STACK_DEPTH 32

/* A user stack as the thread left it, for unwinding in user space from .eh_frame (as
 * perf --call-graph dwarf does): taken beside the frame-pointer walk of a kept futex
 * stack (the latest per process and word), so a libc without frame pointers does not
 * end it. */
#define TTOP_USTACK_BYTES 8192
/* Futex waits that slept by duration: slot k holds waits of 2^k to 2^(k+1) - 1 ns (0
 * and 1 ns in slot 0), the last slot everything from 2^39 ns (550 s) up. One per CPU,
 * cumulative; user space sums the CPUs. */
#define TTOP_FUTEX_HIST_SLOTS 40
struct ttop_futex_hist {
	__u64 slots[TTOP_FUTEX_HIST_SLOTS];
	__u64 sum_ns;
	__u64 scratch;      /* the slot index, stored and loaded again (futex_hist_add) */
};

#define TTOP_USTACK_COPIES 512
#define TTOP_MMAP_STACKS 1024
#define TTOP_MMAP_USTACK_COPIES 256
struct ttop_ustack_copy {
	__u64 ip, sp, bp;  /* user registers at the syscall */
	__u32 tgid;
	__u32 len;         /* bytes copied from sp upward (0: the read failed) */
	__u8 bytes[TTOP_USTACK_BYTES];
};

/* One on-CPU profile sample (bpf/profile.bpf.c -> ring buffer -> src/collect/profile.rs):
 * the thread, its kernel stack id and the user registers and top of its user stack,
 * unwound in user space as `perf record --call-graph dwarf` does. */
#define TTOP_PROF_STACK_BYTES 8192
/* Off-CPU sampling: each CPU's rate of watched switch-outs over one window sets how
 * many of the next window's keep their stack (see profile.bpf.c). */
#define TTOP_OFF_WINDOW_NS 10000000ULL
/* ttop_prof_sample.kind */
#define TTOP_PROF_ON_CPU 0    /* a cpu-clock sample */
#define TTOP_PROF_OFF_CPU 1   /* a watched thread left the CPU (off-CPU mode) */
/* ttop_prof_sample.reason, for TTOP_PROF_OFF_CPU: why it left */
#define TTOP_OFF_RUNNABLE 0   /* preempted, or yielded while runnable */
#define TTOP_OFF_IO 1         /* waiting for I/O (in_iowait) */
#define TTOP_OFF_FUTEX 2      /* asleep in futex() / futex_waitv() */
#define TTOP_OFF_SLEEP 3      /* asleep in nanosleep() / clock_nanosleep() */
#define TTOP_OFF_BLOCKED 4    /* another uninterruptible wait (a kernel lock: mmap_lock...) */
#define TTOP_OFF_WAIT 5       /* another interruptible sleep (poll, read, epoll...) */
struct ttop_prof_sample {
	__u32 tgid, tid;
	__s32 kstack;      /* prof_kstacks id; < 0: the sample was in user mode, or lost */
	__u32 len;         /* user stack bytes copied (0: a kernel thread, or the read failed) */
	__u64 ip, sp, bp;  /* user registers (where the thread entered the kernel, if in it) */
	__u64 ts;          /* TTOP_PROF_OFF_CPU: when it left the CPU (ns, monotonic) */
	__u32 kind;        /* TTOP_PROF_* */
	__u32 reason;      /* TTOP_OFF_* */
	__u32 keep_one_in; /* TTOP_PROF_OFF_CPU: its CPU kept one stack in this many (1: all) */
	__u32 pad;
	char comm[16];     /* the thread's name */
	__u8 bytes[TTOP_PROF_STACK_BYTES];
};

/* Off-CPU mode: a watched thread left a CPU and the CPU kept no stack for it (waits
 * faster than the reader unwinds are kept with their stack one in N, see
 * profile.bpf.c): its wait still counts in its process's total for its reason. Told
 * from the others by its size. */
struct ttop_prof_off {
	__u32 tgid, tid;
	__u32 reason;      /* TTOP_OFF_* */
	__u32 pad;
	__u64 ts;          /* when it left the CPU (ns, monotonic) */
};

/* Off-CPU mode: a watched thread came back on a CPU (its wait of the last
 * TTOP_PROF_OFF_CPU record of the same tid ends). Told from a sample by its size. */
struct ttop_prof_oncpu {
	__u32 tid;
	__u32 pad;
	__u64 ts;
};

/* futex_stats.flags: what was seen on the word. */
#define TTOP_FUTEX_SHARED 1   /* a call without FUTEX_PRIVATE_FLAG */
#define TTOP_FUTEX_PI 2       /* LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI, UNLOCK_PI, CMP_REQUEUE_PI */
#define TTOP_FUTEX_WAITV 4    /* futex_waitv (first word of the vector) */
#define TTOP_FUTEX_BITSET 8   /* WAIT_BITSET / WAKE_BITSET */
#define TTOP_FUTEX_FUTEX2 16  /* futex_wait / futex_wake / futex_requeue (6.7+) */

/* Hash key: one futex word as one thread used it. Each entry is written only by its
 * own thread, so the futex probe needs no atomics and shares no cache line with other
 * CPUs. User space sums the entries per word (tgid, uaddr), per thread and per process,
 * and keeps those sums itself, so it can delete idle entries (exited threads) early. */
struct ttop_futex_key {
	__u32 tid;
	__u32 tgid;
	__u64 uaddr;
};

/* Per (thread, futex word), cumulative. A call is accounted when it returns. */
struct ttop_futex_stats {
	__u64 calls;        /* every futex call on the word */
	__u64 waits;        /* wait-type calls: WAIT, WAIT_BITSET, LOCK_PI(2), WAIT_REQUEUE_PI, waitv */
	__u64 contended;    /* wait calls that blocked: returned 0, ETIMEDOUT or EINTR/ERESTART* */
	__u64 eagain;       /* wait calls that returned EAGAIN at once (the word had already changed) */
	__u64 wait_ns;      /* time inside the contended wait calls */
	__u64 max_wait_ns;
	__u64 wakes;        /* wake-type calls: WAKE, WAKE_BITSET, WAKE_OP, (CMP_)REQUEUE, UNLOCK_PI */
	__u64 woken;        /* sum of wake calls' return values (threads woken or requeued) */
	__u64 last_ns;      /* ktime of the last call: idle entries are deleted by user space */
	__u64 max_gen;      /* tick generation max_wait_ns belongs to (it is per interval) */
	__s32 ustack;       /* user stack id of a recent contended wait (-1: none yet; -2: the
	                     * map refused it, tried again with the 64th wait) */
	__u32 flags;        /* TTOP_FUTEX_* */
	/* Who woke the waits (the scheduler path only, contention_sleep.h; 0 with every call
	 * hooked): of the waits `woken` counts, those woken by a futex wake made by a thread
	 * of another process, and that process (the latest such waker; 0: none yet). */
	__u64 woken_other;
	__u32 waker_tgid;
	__u32 pad;
};

/* lock:contention_begin flags (include/trace/events/lock.h). */
#define TTOP_LCB_F_SPIN   (1U << 0)
#define TTOP_LCB_F_READ   (1U << 1)
#define TTOP_LCB_F_WRITE  (1U << 2)
#define TTOP_LCB_F_RT     (1U << 3)
#define TTOP_LCB_F_PERCPU (1U << 4)
#define TTOP_LCB_F_MUTEX  (1U << 5)

/* Hash key: one kernel lock, reached from one kernel stack, by one process. */
struct ttop_lock_key {
	__u64 lock;         /* the lock's address */
	__s32 kstack;       /* kernel stack id at contention_begin (-1: lost) */
	__u32 tgid;         /* the waiter's process (the interrupted one in irq context) */
	__u32 flags;        /* LCB_F_* of the first contention_begin of the wait */
	__u32 is_mmap;      /* the lock is the waiter's own mm->mmap_lock */
};

struct ttop_lock_stats {
	__u64 contended;    /* waits (contention_begin .. contention_end) */
	__u64 wait_ns;
	__u64 max_wait_ns;
	__u64 last_ns;      /* ktime of the last wait: idle entries are deleted by user space */
	__u64 max_gen;      /* tick generation max_wait_ns belongs to */
	__u32 last_tid;
	__u32 pad;
	char comm[16];      /* the last waiter's comm */
};

/* One CPU's sums for the last kernel-lock entry it counted at contention_end, added to
 * `locks` only when that CPU counts another entry: a storm on one lock adds to its own
 * CPU's copy instead of a hash entry that every CPU's counts pull over. The CPU bumps
 * seq_end before it changes anything and seq_begin after: a copy read in address order
 * with seq_begin == seq_end is whole. User space reads `locks`, then these, and sums
 * them by key. */
struct ttop_lock_acc {
	__u64 seq_begin;
	struct ttop_lock_key key; /* key.lock 0: empty */
	struct ttop_lock_stats s;
	__u64 seq_end;
};

/* Hash key for mmap_lock waits and holds. waiter_tgid 0 is the holder's own row:
 * the time the holder held the lock while someone waited for it. */
struct ttop_mmap_key {
	__u32 victim;       /* tgid owning the mm (mm->owner), 0 if unknown */
	__u32 holder;       /* tgid holding the lock when the wait began (0: unknown) */
	__u32 waiter_tgid;  /* the waiting process (0: the holder's own row). One row per
			     * process, not per thread: under thread churn a row per waiting
			     * thread filled the map within seconds and waits were lost. */
	__u32 pad;
};

struct ttop_mmap_stats {
	__u64 waits;        /* contended acquisitions (rwsem slow path, or >= 10 us without lock:*) */
	__u64 wait_ns;
	__u64 max_wait_ns;
	__u64 hold_ns;      /* holder row: time held while others waited */
	__u64 holds;        /* holder row: such holds */
	__u64 last_ns;
	__u64 max_gen;      /* tick generation max_wait_ns belongs to */
	__u32 waiter_tgid;  /* the waiter's process (holder row: the holder's) */
	__u32 holder_tid;   /* a thread of the holder (the writer or the last reader) */
	char comm[16];      /* comm of the thread this row is about (waiter, or holder) */
	__s32 ustack;       /* its user stack (ustacks map; -1: none; -2: refused, tried again
			     * with the 64th): the row's first wait or contended hold, then one
			     * in 64 */
	__u32 ustack_tid;   /* the thread whose registers and stack were copied with it for the
			     * DWARF unwinder: ustack_copies key (tid, tgid, uaddr 0 for a wait,
			     * 1 for a hold) */
	__u32 pad;
	__u64 threads;      /* waiter row: its waiting threads, each counted at its first wait
			     * in this row in a tick generation (contention_gen): the rise over
			     * an interval is how many threads waited in it */
};

/* Losses of the contention collector; index the `cdrops` array with these. */
enum ttop_cdrop {
	CDROP_FUTEXES = 0,  /* futex_stats map full */
	CDROP_FUTEX_THREADS = 1, /* unused since the per-thread map went (always 0) */
	CDROP_FUTEX_PROCS = 2,   /* unused since the per-process map went (always 0) */
	CDROP_LOCKS = 3,    /* lock_stats map full */
	CDROP_MMAP = 4,     /* mmap_stats map full */
	CDROP_STACKS = 5,   /* stack map full or hash collision: a stack was not stored */
	CDROP_LOCK_NEST = 6,/* lock waits nested deeper than we track, or begin without end */
	CDROP__COUNT = 8,
};

/* ==== end contention ==== */

/* ==== interrupts and latency: IPIs, TLB shootdowns (bpf/irq.bpf.c), scheduling
 * latency histograms (bpf/sched.bpf.c) ==== */

#define TTOP_MAX_IPI_SENDERS 8192
#define TTOP_MAX_LAT_THREADS 8192

/* IPIs received, by the irq_vectors:*_entry tracepoint that saw them (x86). */
enum ttop_ipi_recv {
	IPI_RECV_CALL = 0,        /* call_function_entry: smp_call_function to a CPU set */
	IPI_RECV_CALL_SINGLE = 1, /* call_function_single_entry: to one CPU */
	IPI_RECV_RESCHED = 2,     /* reschedule_entry */
	IPI_RECV_IRQ_WORK = 3,    /* irq_work_entry (mostly self-IPIs) */
	IPI_RECV__COUNT = 6,
};

/* IPIs sent (ipi:ipi_send_cpu / ipi_send_cpumask, one per target CPU), by purpose. */
enum ttop_ipi_sent {
	IPI_SENT_RESCHED = 0,     /* callback NULL: smp_send_reschedule */
	IPI_SENT_TLB = 1,         /* smp_call_function IPI whose queued function is flush_tlb_func */
	IPI_SENT_CALL = 2,        /* any other smp_call_function IPI */
	IPI_SENT_OTHER = 3,       /* another callback */
	IPI_SENT__COUNT = 6,
};

#define TTOP_TLB_REASONS 8        /* enum tlb_flush_reason has 6 on 6.x; room to grow */

/* One slot per CPU (array indexed by CPU id); every field is written only by
 * programs running on that CPU. */
/* Hash key: who sent IPIs (or queued remote function calls), and for what. */
struct ipi_src_key {
	__u32 tgid;                   /* current process at send time (0: idle / kernel) */
	__u32 kind;                   /* enum ttop_ipi_sent */
	__u64 func;                   /* kernel address of the function (0 for reschedule) */
};

struct ipi_src_stats {
	__u64 ipis;                   /* IPIs actually sent (one per target CPU) */
	__u64 queued;                 /* remote calls queued (csd_queue_cpu), IPI or not */
};

/* One CPU's sums for the sender it counted last, added to `ipi_src` only when that CPU
 * counts another (as ttop_lock_acc: seq_end bumped before a change, seq_begin after; a
 * copy with the two equal is whole). A cross-CPU wakeup storm queues a call and sends an
 * IPI per wakeup, from both CPUs under the same key: counted straight into the hash
 * entry, its cache line moved between the CPUs twice a wakeup. User space reads
 * `ipi_src`, then these, and sums them by key. */
struct ipi_src_acc {
	__u64 seq_begin;
	struct ipi_src_key key;
	struct ipi_src_stats s;       /* both 0: empty */
	__u64 seq_end;
};

struct irq_cpu_stats {
	__u64 recv[IPI_RECV__COUNT];  /* IPIs received, by vector */
	__u64 sent[IPI_SENT__COUNT];  /* IPIs sent from this CPU, by purpose */
	__u64 tlb[TTOP_TLB_REASONS];  /* tlb:tlb_flush events on this CPU, by reason */
	__u64 tlb_shootdowns;         /* flush_tlb_func run here for another CPU (csd):
	                               * what /proc/interrupts TLB counts */
	__u64 tlb_requests;           /* remote flushes this CPU queued (csd_queue_cpu) */
	__u64 csd_func;               /* scratch: function of the last csd queued here */
	struct ipi_src_acc acc;       /* this CPU's unflushed sender sums */
};

/* Losses of the irq collector; index the `idrops` array with these. */
enum ttop_idrop {
	IDROP_SENDERS = 0,            /* ipi_src map full */
	IDROP__COUNT = 4,
};

/* Scheduling latency: runnable (wakeup, or preempted) -> on CPU.
 * Histogram slot of a latency v (ns): 0 for v < 1024 ns, otherwise
 * 1 + 8 * (log2(v) - 10) + the next 3 bits after the leading one, i.e. 8 slots
 * per power of two (each at most 12.5% wide); the last slot takes the rest. */
#define TTOP_LAT_SLOTS 192
#define TTOP_LAT_MIN_SHIFT 10
#define TTOP_LAT_SUB_BITS 3

struct lat_stats {
	__u64 count;                  /* latencies measured */
	__u64 sum_ns;
	__u64 max_ns;                 /* largest during tick generation max_gen */
	__u64 max_ts;                 /* ktime when that one got the CPU */
	__u64 max_gen;
	__u32 tgid;                   /* per-thread entries: the thread's process */
	__u32 exited;                 /* per-thread entries: 1 once the thread has exited; user
	                               * space deletes the entry after reading it */
	char comm[16];                /* per-thread entries of exited threads: the name at exit */
	__u32 slots[TTOP_LAT_SLOTS];  /* cumulative counts (wrap; user space diffs mod 2^32) */
};

/* The one latency of a thread that exited with it in its thread_stats entry (lat_state
 * TTOP_LAT_ONE), written to a ring buffer at its exit, as that entry is deleted, and
 * drained by user space at each tick: the last interval of a thread must still be
 * counted. (A thread with a lat_threads entry has it marked exited instead.) 1 MB holds
 * 18.7k records of 56 bytes (header included; the hash it replaced held 16k): the
 * kernel maps the whole ring into ttop (its data pages twice), 2.2 MB of resident
 * memory, so it is no larger than that. A record that does not fit is counted in
 * drops.lat_threads. */
#define TTOP_LAT_EXITS_BYTES (1 << 20)
struct lat_exit {
	__u32 tgid;
	__u32 tid;
	__u64 lat1_ns;       /* as in thread_stats */
	__u64 lat1_ts;
	__u64 lat1_gen;
	char comm[16];       /* the thread's name at exit */
};

/* ==== end interrupts and latency ==== */

/* ==== kernel symbols (bpf/ksym.bpf.c) ==== */

/* One run of the ksym program: `n` queries. By name (by_name = 1): text[i] holds a
 * NUL-terminated symbol name; addr[i] gets its address and text[i] its "%pS" form
 * ("name+0x0/0xSIZE [module]", which carries the size). By address: addr[i] in,
 * text[i] = "%pS" of it out. err[i]: 0, or the helper's negative error. */
#define TTOP_KSYM_BATCH 16
#define TTOP_KSYM_TEXT 256
struct ttop_ksym_io {
	__u32 n;
	__u32 by_name;
	__u64 addr[TTOP_KSYM_BATCH];
	__s64 err[TTOP_KSYM_BATCH];
	/* text[i] is TTOP_KSYM_TEXT bytes, in rows of 32 only so that the skeleton's Rust
	 * type can derive Default (arrays of up to 32). */
	char text[TTOP_KSYM_BATCH][TTOP_KSYM_TEXT / 32][32];
};

/* ==== end kernel symbols ==== */

#endif /* TTOP_H */
