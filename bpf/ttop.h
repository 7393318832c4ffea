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

/* One slot per CPU (BPF_MAP_TYPE_ARRAY indexed by CPU id).
 * Fields marked "local" are written only by programs running on that CPU;
 * "atomic" fields may be bumped from other CPUs with __sync_fetch_and_add. */
struct cpu_stats {
	__u64 switches;      /* local: sched_switch events on this CPU */
	__u64 migrations;    /* atomic: tasks migrated to this CPU */
	__u64 runq_area;     /* local: integral of rq->nr_running over time, in task*ns */
	__u64 runq_last_ts;  /* local: ktime of the last integration step */
	__u64 runq_max_gen;  /* local: tick generation runq_max belongs to */
	__u32 runq_last_nr;  /* local: rq->nr_running seen at the last step */
	__u32 runq_max;      /* local: max rq->nr_running seen during runq_max_gen */
	__u64 wakeups;       /* atomic: wakeups targeting this CPU */
	__u32 cur_tid;       /* local: the task we saw switch in last (0: idle) */
	__u32 pad;
	__u64 gaps;          /* local: sched_switch whose prev was not the last next */
};

/* Per thread (hash keyed by tid). Cumulative since ttop first saw the thread. */
struct thread_stats {
	__u32 tgid;
	__u32 cpu;           /* CPU it last switched in on */
	__u32 on_cpu;        /* 1 while the thread is on a CPU (last_in is valid) */
	__u32 enq_pcount;    /* sched_info.pcount when enq_ts was set: a switch-in we missed
	                      * since then shows as a larger pcount at the next one */
	__u64 base_ns;       /* se.sum_exec_runtime when ttop first saw it (0: born under ttop) */
	__u64 sum_ns;        /* se.sum_exec_runtime at the last event we saw */
	__u64 last_in;       /* ktime of the last switch-in */
	__u64 runq_wait_ns;  /* time spent runnable but waiting for a CPU */
	__u64 enq_ts;        /* ktime it became runnable (0: not waiting) */
	__u64 switches;      /* times it was switched out */
	__u64 birth_gen;     /* scan generation at creation (0: existed before ttop) */
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
};

/* Map-full and other losses; index with enum ttop_drop. */
enum ttop_drop {
	DROP_THREADS = 0,   /* thread_stats map full */
	DROP_PROCS = 1,     /* proc_stats map full */
	DROP_GAPS = 2,      /* sched_switch events the kernel never delivered (see cpu_stats.gaps) */
	DROP_LAT_THREADS = 3, /* per-thread latency map full: a thread's latencies went uncounted */
	DROP_LAT_STALE = 4, /* latency samples discarded: a missed event made the wait unknowable */
	DROP__COUNT = 8,
};

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
struct irq_cpu_stats {
	__u64 recv[IPI_RECV__COUNT];  /* IPIs received, by vector */
	__u64 sent[IPI_SENT__COUNT];  /* IPIs sent from this CPU, by purpose */
	__u64 tlb[TTOP_TLB_REASONS];  /* tlb:tlb_flush events on this CPU, by reason */
	__u64 tlb_shootdowns;         /* flush_tlb_func run here for another CPU (csd):
	                               * what /proc/interrupts TLB counts */
	__u64 tlb_requests;           /* remote flushes this CPU queued (csd_queue_cpu) */
	__u64 csd_func;               /* scratch: function of the last csd queued here */
};

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
	__u32 pad;
	__u32 slots[TTOP_LAT_SLOTS];  /* cumulative counts (wrap; user space diffs mod 2^32) */
};

/* ==== end interrupts and latency ==== */

#endif /* TTOP_H */
