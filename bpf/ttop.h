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
	__u32 pad;
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
	DROP__COUNT = 8,
};

#endif /* TTOP_H */
