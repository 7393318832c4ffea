// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Scheduler truth for ttop: run-queue length integrated over time, per-thread
 * on-CPU time and run-queue wait, thread churn and "ghost" threads.
 *
 * Tracepoints only (no kprobes, no fentry, no tracefs), with CO-RE. Every program
 * exists twice (see the end of the file): as tp_btf, where the verifier knows the
 * arguments' types and reading a kernel field is one load, and as raw_tp for kernels
 * without tp_btf (before 5.5), where each read is a bpf_probe_read_kernel call. User
 * space loads one set. Everything is aggregated in maps and read by user space once
 * per tick.
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

/* The futex waits that slept, counted by the switch program below where the contention
 * object shares its maps (futex_sleeps_shared); user space creates none of them
 * otherwise. */
#include "futex_shared.h"
#include "futex_sleep.h"
const volatile __u32 futex_sleeps_shared;

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define PF_EXITING 0x00000004 /* task_struct.flags: set in do_exit before sched_process_exit */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TTOP_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct cpu_stats);
} cpu_stats SEC(".maps");

/* Sized to the possible CPUs by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TTOP_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct cpu_remote);
} cpu_remote SEC(".maps");

/* Per-thread state: in the task's own local storage where the kernel has it (5.11+,
 * with BTF: threads_in_task, set at load), one load away from the task pointer every
 * program already holds; in a hash keyed by tid elsewhere. A hash lookup was most of
 * sched_switch's cost (two a switch, one a wakeup). User space reads the storage with
 * the ttop_dump_threads task iterator at each tick (a task's storage cannot be walked
 * like a map) and creates only the one of the two that this kernel uses. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct thread_stats);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stats);
} thread_store SEC(".maps");

const volatile __u32 threads_in_task;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct proc_stats);
} procs SEC(".maps");

#include "sched_dirty.h"

/* Scratch for one record of ttop_blocked_stacks (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct blocked_stack);
} blocked_scratch SEC(".maps");

/* Written by user space. */
volatile __u64 scan_gen = 1;   /* bumped just before each /proc scan */
volatile __u64 tick_gen = 1;   /* bumped after each read of cpu_stats */
volatile __u32 filter_enabled; /* 1: only count processes in filter_tgids (ttop -p) */

/* ttop -p: the processes to watch. Filtering here, not only in user space, means
 * fewer map updates per event and a cheaper ttop. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_FILTER);
	__type(key, __u32);
	__type(value, __u8);
} filter_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_GHOST_NAMES);
	__type(key, struct ghost_key);
	__type(value, struct ghost_stats);
} ghost_names SEC(".maps");

/* A field of a kernel struct: one load in the tp_btf programs, a probe read in the
 * raw_tp ones. `btf` is a constant at every call site (the functions below are always
 * inlined), so each program keeps only its own kind of read. */
#define RD(btf, p, field) ((btf) ? (p)->field : BPF_CORE_READ(p, field))

static __always_inline bool wanted(__u32 tgid)
{
	return !filter_enabled || bpf_map_lookup_elem(&filter_tgids, &tgid);
}

/* The same for a task, whose tgid is read only when a filter is set. */
static __always_inline bool wanted_task(bool btf, struct task_struct *p)
{
	return !filter_enabled || wanted(RD(btf, p, tgid));
}

/* Read by user space. */
__u64 drops[DROP__COUNT];
/* New entries per walked map (TTOP_INS_*): while a count stands still, user space looks
 * up the keys it already knows instead of walking every bucket. */
__u64 inserts[TTOP_INS_SCHED];
/* Processes started (a group leader's first wakeup, when it is in /proc already): while
 * it stands still, the /proc scan reuses its last listing of /proc. */
__u64 procs_born;
/* Sum over CPUs of runq_last_nr (each CPU adds its own changes), and its largest value
 * during tick_gen: the system-wide runnable peak. Every CPU writes these at its run
 * queue's changes: on a cache line of their own, away from the flags every program reads
 * (filter_enabled above, tick_gen in .data). */
__s64 runq_total __attribute__((aligned(64)));
__s64 runq_total_max;
__u64 runq_total_max_gen;
__u64 runq_total_pad[5];

/* Add v unless it is 0. Where the compiler can prove v is 0 it turns an atomic add
 * into an atomic or (a no-op kept for ordering), which kernels before 5.12 reject:
 * adding nothing is skipped instead. */
static __always_inline void add_nz(__u64 *p, __u64 v)
{
	if (v)
		__sync_fetch_and_add(p, v);
}

static __always_inline void drop(int which)
{
	if (which >= 0 && which < DROP__COUNT)
		__sync_fetch_and_add(&drops[which], 1);
}

static __always_inline struct rq *task_rq_of(bool btf, struct task_struct *p)
{
	return btf ? p->se.cfs_rq->rq : BPF_CORE_READ(p, se.cfs_rq, rq);
}

/* Integrate rq->nr_running for c, the slot of rq's CPU. Every caller runs under that
 * run queue's lock (sched_switch on its own CPU; sched_wakeup where the wakee is
 * enqueued, which may be another CPU; sched_migrate_task on the source's), so each
 * slot has one writer at a time, and a run queue another CPU changed (a remote
 * wakeup, a load-balancing pull) is stepped when it changes, not at its own next
 * switch: a CPU left with one task after a pull may not switch for seconds, and its
 * old count would stand all that time. */
static __always_inline void runq_step(bool btf, struct cpu_stats *c, struct rq *rq, __u64 now)
{
	__u32 nr;

	if (!rq)
		return;
	nr = RD(btf, rq, nr_running);
	if (nr != c->runq_last_nr) {
		__s64 total;

		/* No fetch-and-add (BPF atomics with fetch need 5.12): add, then read. The
		 * sum read is a value the counter really held at that instant (every change
		 * is one atomic add), a moment after this CPU's own change. */
		__sync_fetch_and_add(&runq_total, (__s64)nr - (__s64)c->runq_last_nr);
		total = *(volatile __s64 *)&runq_total;
		/* Racy max: two CPUs raising it at once may lose one update by one. */
		if (runq_total_max_gen != tick_gen) {
			runq_total_max_gen = tick_gen;
			runq_total_max = total;
		} else if (total > runq_total_max) {
			runq_total_max = total;
		}
	}
	if (c->runq_last_ts && now > c->runq_last_ts)
		c->runq_area += (__u64)c->runq_last_nr * (now - c->runq_last_ts);
	c->runq_last_ts = now;
	c->runq_last_nr = nr;
	if (c->runq_max_gen != tick_gen) {
		c->runq_max_gen = tick_gen;
		c->runq_max = nr;
	} else if (nr > c->runq_max) {
		c->runq_max = nr;
	}
}

/* The kernel's own count of the task's on-CPU time. On-CPU time is taken from it
 * rather than from pairs of switch events: some kernels (seen on 6.18 in a VM) do
 * not deliver every sched_switch, and a lost switch-out must not leave a thread
 * "running" for ever. */
static __always_inline __u64 task_runtime(bool btf, struct task_struct *p)
{
	return RD(btf, p, se.sum_exec_runtime);
}

/* Task local storage is used from the tp_btf programs only (their task pointers are
 * BTF pointers); the raw_tp copies run where the kernel has neither. */
#define IN_TASK(btf) ((btf) && threads_in_task)

/* The thread's entry, if it has one. */
static __always_inline struct thread_stats *thread_find(bool btf, struct task_struct *p,
							__u32 tid)
{
	if (IN_TASK(btf))
		return tid ? bpf_task_storage_get(&thread_store, p, 0, 0) : 0;
	return bpf_map_lookup_elem(&threads, &tid);
}

static __always_inline struct thread_stats *thread_get(bool btf, struct task_struct *p,
						       __u32 tid, bool create)
{
	struct thread_stats *t = thread_find(btf, p, tid);
	struct thread_stats zero = {};

	if (t || !create || tid == 0)
		return t;
	/* An exiting thread may run again after sched_process_exit folded its entry
	 * away: a new entry would outlive it (nothing deletes it) and count its last
	 * switches as a new thread's. */
	if (RD(btf, p, flags) & PF_EXITING)
		return 0;
	zero.tgid = RD(btf, p, tgid);
	if (!wanted(zero.tgid))
		return 0;
	/* Count only what runs from now on. */
	zero.base_ns = task_runtime(btf, p);
	zero.sum_ns = zero.base_ns;
	if (IN_TASK(btf)) {
		t = bpf_task_storage_get(&thread_store, p, &zero,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t)
			drop(DROP_THREADS);
		return t;
	}
	if (!bpf_map_update_elem(&threads, &tid, &zero, BPF_NOEXIST))
		__sync_fetch_and_add(&inserts[TTOP_INS_THREADS], 1);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		drop(DROP_THREADS);
	return t;
}

static __always_inline struct proc_stats *proc_get(__u32 tgid)
{
	struct proc_stats *p = bpf_map_lookup_elem(&procs, &tgid);
	struct proc_stats zero = {};

	if (p || !wanted(tgid))
		return p;
	if (!bpf_map_update_elem(&procs, &tgid, &zero, BPF_NOEXIST))
		__sync_fetch_and_add(&inserts[TTOP_INS_PROCS], 1);
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		drop(DROP_PROCS);
	return p;
}

/* How many times the task has been switched in, per the kernel (CONFIG_SCHED_INFO);
 * 0 without it, which disables the consistency check in sched_switch. */
static __always_inline __u32 task_pcount(bool btf, struct task_struct *p)
{
	if (bpf_core_field_exists(p->sched_info))
		return RD(btf, p, sched_info.pcount);
	return 0;
}

#include "sched_latency.h"
#include "sched_off.h"
#include "sched_lockwait.h"

/* Whether t (thread tid) is on the CPU it last switched in on: that CPU's last
 * switch-in was it. A switch the kernel did not deliver can leave on_cpu set on a thread
 * that has long left (the next switch on that CPU shows the gap, but without the task
 * at hand its entry cannot be reached there). */
static __always_inline bool on_cpu_now(struct thread_stats *t, __u32 tid)
{
	__u32 cpu = t->cpu;
	struct cpu_stats *c;

	if (!t->on_cpu)
		return false;
	c = bpf_map_lookup_elem(&cpu_stats, &cpu);
	return c && c->cur_tid == tid;
}

/* Woken: runnable from now. Not while we believe it is on a CPU (woken before it
 * got to sleep): its switch-out decides then whether it waits. A thread preempted on
 * its way to sleep is still queued (enq_ts set): the wait so far is run-queue wait,
 * and its wakeup latency starts now, as for any other wakeup. */
static __always_inline void mark_runnable(bool btf, struct task_struct *p, __u64 now)
{
	__u32 tid = RD(btf, p, pid);
	struct thread_stats *t = thread_get(btf, p, tid, true);
	__u32 pcount;

	mark_dirty(tid);
	if (!t || on_cpu_now(t, tid))
		return;
	t->on_cpu = 0;
	off_end(t, now);
	pcount = task_pcount(btf, p);
	if (t->enq_ts) {
		if (pcount == t->enq_pcount && now > t->enq_ts)
			t->runq_wait_ns += now - t->enq_ts;
		else
			drop(DROP_LAT_STALE);
	}
	t->enq_ts = now;
	t->enq_pcount = pcount;
}

static __always_inline void on_wakeup(bool btf, struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	struct rq *rq = task_rq_of(btf, p);
	__u32 target;
	struct cpu_stats *c;

	mark_runnable(btf, p, now);
	if (!rq)
		return;
	target = RD(btf, rq, cpu);
	c = bpf_map_lookup_elem(&cpu_stats, &target);
	if (!c)
		return;
	if (wanted_task(btf, p)) {
		struct cpu_remote *r = bpf_map_lookup_elem(&cpu_remote, &target);

		if (r)
			r->wakeups++;
	}
	/* Under the target's rq lock (ttwu_do_activate, wake_up_new_task), wherever
	 * this CPU is. Except a task waking itself (try_to_wake_up's p == current path,
	 * lockless): it is queued already, nothing changes, and a step there could race
	 * a remote one on this CPU's slot. */
	if ((void *)p != (void *)bpf_get_current_task())
		runq_step(btf, c, rq, now);
}

/* A new task's first wakeup: copy_process has finished, so its pid is in /proc now.
 * A new process (not a thread) means the scan must list /proc again. Counted here, not
 * at task_newtask, which fires before the pid is visible: a scan between the two would
 * take the count but not find the process. */
static __always_inline void on_wakeup_new(bool btf, struct task_struct *p)
{
	if (RD(btf, p, pid) == RD(btf, p, tgid))
		__sync_fetch_and_add(&procs_born, 1);
	on_wakeup(btf, p);
}

/* Returns the time it read (the switch's one clock read). */
static __always_inline __u64 on_switch(bool btf, bool preempt, struct task_struct *prev,
				       struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_stats *c = bpf_map_lookup_elem(&cpu_stats, &cpu);
	__u32 prev_tid = RD(btf, prev, pid);
	__u32 next_tid = RD(btf, next, pid);
	struct thread_stats *t;
	bool gap = false;

	mark_dirty(prev_tid);
	mark_dirty(next_tid);
	if (c) {
		/* With a filter, count only the switches of the watched processes. */
		if (!filter_enabled || wanted(RD(btf, prev, tgid)) ||
		    wanted(RD(btf, next, tgid)))
			c->switches++;
		/* A switch we never saw: whoever we thought was on this CPU left it. */
		if (c->cur_tid != prev_tid && c->runq_last_ts) {
			gap = true;
			c->gaps++;
			drop(DROP_GAPS);
			/* It left unseen: what the scan read of it may be stale. (Who came
			 * in unseen is prev, marked above.) Its on_cpu is left set: every
			 * reader checks it against its CPU's cur_tid (on_cpu_now). */
			mark_dirty(c->cur_tid);
		}
		c->cur_tid = next_tid;
		runq_step(btf, c, task_rq_of(btf, prev), now);
	}

	/* prev leaves the CPU. A dying task's entry was already folded away at
	 * sched_process_exit: do not resurrect it. */
	if (prev_tid) {
		bool dead = prev_state & TASK_DEAD;
		t = thread_get(btf, prev, prev_tid, !dead);
		if (t) {
			__u64 sum = task_runtime(btf, prev);

			/* prev came in unseen (gap): its last_in is from an earlier stay. */
			if (t->on_cpu && t->cpu == cpu && !gap) {
				if (now > t->last_in)
					t->oncpu_wall_ns += now - t->last_in;
			} else {
				unseen_in(t, sum, now);
			}
			t->sum_ns = sum;
			t->on_cpu = 0;
			t->switches++;
			/* It was running, so a pending enq_ts is from before a switch-in we
			 * never saw: its scheduling latency is unknowable. */
			if (t->enq_ts)
				drop(DROP_LAT_STALE);
			t->enq_ts = 0;
			/* Preempted (even mid-way to sleep: it stays queued) or yielded while
			 * runnable: it waits in the run queue from now. */
			if (preempt || prev_state == TASK_RUNNING) {
				t->enq_ts = now;
				t->enq_pcount = task_pcount(btf, prev);
				t->off_ts = 0;
			} else {
				/* Asleep from now, for the reason it leaves with. */
				t->off_ts = now;
				/* Inside a mutex or rwsem wait: blocked on that lock. */
				t->off_cause = t->lock_wait && (prev_state & TTOP_TASK_UNINTERRUPTIBLE)
						       ? t->lock_wait
						       : off_cause(btf, prev, current_task(), prev_state);
			}
		}
	}

	if (next_tid) {
		t = thread_get(btf, next, next_tid, true);
		if (t) {
			if (t->enq_ts && now > t->enq_ts) {
				/* pcount counts switch-ins (it is bumped after this tracepoint):
				 * if it moved since enq_ts, the thread ran in between and we missed
				 * that switch-in, so now - enq_ts is not a wait. */
				if (task_pcount(btf, next) == t->enq_pcount) {
					t->runq_wait_ns += now - t->enq_ts;
					lat_account(RD(btf, next, tgid), next_tid, t,
						    now - t->enq_ts, now);
				} else {
					drop(DROP_LAT_STALE);
				}
			}
			t->enq_ts = 0;
			/* Switched in still asleep to us: its wakeup went unseen. */
			off_end(t, now);
			t->on_cpu = 1;
			t->cpu = cpu;
			t->last_in = now;
			t->sum_ns = task_runtime(btf, next);
		}
	}
	return now;
}

#define TTOP_TASK_ON_RQ_MIGRATING 2

static __always_inline void on_migrate(bool btf, struct task_struct *p, int dest_cpu)
{
	__u32 cpu = dest_cpu;
	struct cpu_stats *c;
	struct cpu_remote *r;

	/* A queued task moved by another CPU (load balancing, a push, an affinity
	 * change): it has left the source's run queue already and the source's lock is
	 * held. Step the source now. (A waking task is not queued: nothing changes.)
	 * The destination counts it at its own next event, a moment later. */
	if (RD(btf, p, on_rq) == TTOP_TASK_ON_RQ_MIGRATING) {
		struct rq *rq = task_rq_of(btf, p);
		__u32 src;

		if (rq) {
			src = RD(btf, rq, cpu);
			c = bpf_map_lookup_elem(&cpu_stats, &src);
			if (c)
				runq_step(btf, c, rq, bpf_ktime_get_ns());
		}
	}
	if (!wanted_task(btf, p))
		return;
	r = bpf_map_lookup_elem(&cpu_remote, &cpu);
	if (r)
		r->migrations++;
}

static __always_inline void on_newtask(bool btf, struct task_struct *task)
{
	__u32 tid = RD(btf, task, pid);
	__u32 tgid = RD(btf, task, tgid);
	struct thread_stats fresh = {};
	struct thread_stats *t;
	struct proc_stats *p;
	long err;

	mark_dirty(tid);
	mark_in(&dirty_tgids, tgid);
	p = proc_get(tgid);
	if (p)
		__sync_fetch_and_add(&p->created, 1);
	if (tid == 0 || !wanted(tgid))
		return;
	/* Born under ttop: all of its runtime counts (base_ns 0). Nothing has run it
	 * yet, so its entry is written whole, in one update. */
	fresh.tgid = tgid;
	fresh.sum_ns = task_runtime(btf, task);
	fresh.birth_gen = scan_gen;
	if (IN_TASK(btf)) {
		/* A new task has no storage yet: nothing to reuse. */
		if (!bpf_task_storage_get(&thread_store, task, &fresh,
					  BPF_LOCAL_STORAGE_GET_F_CREATE))
			drop(DROP_THREADS);
		return;
	}
	err = bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
	if (!err)
		__sync_fetch_and_add(&inserts[TTOP_INS_THREADS], 1);
	if (err != -17 /* EEXIST */) {
		if (err)
			drop(DROP_THREADS);
		return;
	}
	/* An entry left by an earlier thread with this tid: reuse it, as before. */
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t) {
		t->base_ns = 0;
		t->birth_gen = scan_gen;
	}
}

/* Count a ghost under its name, so the thread view can say what the scan missed. */
static __always_inline void ghost_name(struct task_struct *task, __u32 tgid, __u64 oncpu)
{
	struct ghost_key k = { .tgid = tgid };
	struct ghost_stats one = { .count = 1, .oncpu_ns = oncpu }, *g;

	BPF_CORE_READ_STR_INTO(&k.comm, task, comm);
	g = bpf_map_lookup_elem(&ghost_names, &k);
	if (g) {
		__sync_fetch_and_add(&g->count, 1);
		add_nz(&g->oncpu_ns, oncpu);
	} else if (!bpf_map_update_elem(&ghost_names, &k, &one, BPF_NOEXIST)) {
		__sync_fetch_and_add(&inserts[TTOP_INS_GHOST_NAMES], 1);
	} else {
		g = bpf_map_lookup_elem(&ghost_names, &k);
		if (g) {
			__sync_fetch_and_add(&g->count, 1);
			add_nz(&g->oncpu_ns, oncpu);
		} else {
			drop(DROP_GHOST_NAMES);
		}
	}
}

static __always_inline void on_exit(bool btf, struct task_struct *task)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = RD(btf, task, pid);
	__u32 tgid = RD(btf, task, tgid);
	struct thread_stats *t = thread_find(btf, task, tid);
	struct proc_stats *p = proc_get(tgid);
	__u64 oncpu = 0, wait = 0;
	bool running = t && on_cpu_now(t, tid);

	mark_dirty(tid);
	mark_in(&dirty_tgids, tgid);
	if (t) {
		__u64 sum = task_runtime(btf, task);
		/* The exiting thread is on this CPU right now; the kernel's counter may
		 * lag by up to a tick, so extrapolate from its last switch-in too. */
		if (running && now > t->last_in && t->sum_ns + (now - t->last_in) > sum)
			sum = t->sum_ns + (now - t->last_in);
		oncpu = sum > t->base_ns ? sum - t->base_ns : 0;
		wait = t->runq_wait_ns;
	}
	if (p) {
		__sync_fetch_and_add(&p->exited, 1);
		add_nz(&p->dead_oncpu_ns, oncpu);
		add_nz(&p->dead_runq_wait_ns, wait);
		if (t && t->birth_gen && t->birth_gen == scan_gen) {
			__sync_fetch_and_add(&p->ghosts, 1);
			add_nz(&p->ghost_oncpu_ns, oncpu);
			ghost_name(task, tgid, oncpu);
		}
		if (tid == tgid)
			BPF_CORE_READ_STR_INTO(&p->comm, task, comm);
		if (t) {
			for (int i = 0; i < TTOP_SPLIT__COUNT; i++)
				add_nz(&p->dead_off_ns[i], t->off_ns[i]);
			add_nz(&p->dead_oncpu_wall_ns,
			       t->oncpu_wall_ns + (running && now > t->last_in ? now - t->last_in : 0));
		}
	}
	lat_exit(task, tgid, tid, t);
	if (t && IN_TASK(btf))
		bpf_task_storage_delete(&thread_store, task);
	else if (t)
		bpf_map_delete_elem(&threads, &tid);
}

/* The programs: tp_btf first (what user space loads when the kernel has it), then the
 * same bodies as raw_tp. */

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ttop_sched_wakeup, struct task_struct *p)
{
	FLOOR();
	on_wakeup(true, p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(ttop_sched_wakeup_new, struct task_struct *p)
{
	FLOOR();
	on_wakeup_new(true, p);
	return 0;
}

/* `prev` leaves its CPU for `next` at `now`, in `prev_state`: the futex waits that
 * slept, with the switch's own clock read. Only where the contention object shares its
 * maps (futex_sleeps_shared, set at load; the verifier drops this code otherwise), and
 * while futex_sleeps_on (off while the futex view hooks every call instead). */
static __always_inline void futex_side(void *ctx, bool preempt, struct task_struct *prev,
				       struct task_struct *next, unsigned int prev_state,
				       __u64 now)
{
	if (!futex_sleeps_shared || !futex_sleeps_on)
		return;
	if (!preempt)
		futex_sleep_begin(ctx, prev, prev_state, now);
	futex_sleep_end(next, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	FLOOR();
	__u64 now = on_switch(true, preempt, prev, next, prev_state);

	futex_side(ctx, preempt, prev, next, prev_state, now);
	return 0;
}

/* Before Linux 5.18 sched_switch has no prev_state argument (see compat.h). */
SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_sched_switch3, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	FLOOR();
	unsigned int state = switch_state(preempt, prev);
	__u64 now = on_switch(true, preempt, prev, next, state);

	futex_side(ctx, preempt, prev, next, state, now);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(ttop_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	FLOOR();
	on_migrate(true, p, dest_cpu);
	return 0;
}

SEC("tp_btf/task_newtask")
int BPF_PROG(ttop_task_newtask, struct task_struct *task, u64 clone_flags)
{
	FLOOR();
	on_newtask(true, task);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ttop_sched_process_exit, struct task_struct *task)
{
	FLOOR();
	on_exit(true, task);
	return 0;
}

/* A new name (prctl, or a write to /proc/PID/task/TID/comm by another thread while
 * this one sleeps): the scan must read it again. */
SEC("tp_btf/task_rename")
int BPF_PROG(ttop_task_rename, struct task_struct *task)
{
	FLOOR();
	mark_dirty(task->pid);
	return 0;
}

#include "sched_iters.h"

#include "sched_raw.h"
