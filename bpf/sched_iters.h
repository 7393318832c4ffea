/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The scheduler object's task iterators, for sched.bpf.c (included once, after the
 * threads map and sched_off.h): seeding the sleeps of threads asleep before ttop
 * started, and Blocked now's kernel stacks. Run by user space, never per event.
 */
#ifndef TTOP_SCHED_ITERS_H
#define TTOP_SCHED_ITERS_H

/* Run once by user space right after the probes attach: every thread asleep now gets
 * its sleep's start (now) and cause, so a thread that has slept since before ttop
 * started is not missing from the wall-time split until its first wakeup. */
SEC("iter/task")
int ttop_seed_sleepers(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_stats *t;
	unsigned int state;

	if (!task)
		return 0;
	state = task_state(task);
	if (state == TASK_RUNNING || (state & TASK_DEAD) || (task->flags & PF_EXITING))
		return 0;
	t = thread_get(true, task, task->pid, true);
	/* An event since it was listed (woken, switched) knows better. */
	if (!t || on_cpu_now(t, task->pid) || t->off_ts || t->enq_ts)
		return 0;
	t->off_cause = off_cause(true, task, task, state);
	t->off_ts = bpf_ktime_get_ns();
	return 0;
}

/* Run by user space at a tick where some thread is blocked: the kernel stack of every
 * thread in an uninterruptible sleep that ttop knows asleep, with that sleep's start.
 * Taken here rather than at each switch-out: bpf_get_stack there made sched_switch
 * cost 5x (290 -> 1540 ns a run) under an fsync loop, for stacks nobody reads. */
SEC("iter/task")
int ttop_blocked_stacks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_stats *t;
	struct blocked_stack *b;
	unsigned int state;
	__u32 zero = 0, tid;
	long n;

	if (!task)
		return 0;
	state = task_state(task);
	if (!(state & TTOP_TASK_UNINTERRUPTIBLE) || (state & TTOP_TASK_NOLOAD))
		return 0;
	tid = task->pid;
	t = thread_find(true, task, tid);
	b = bpf_map_lookup_elem(&blocked_scratch, &zero);
	if (!t || !t->off_ts || !b)
		return 0;
	n = bpf_get_task_stack(task, b->ips, sizeof(b->ips), 0);
	b->nr = n > 0 ? n / sizeof(__u64) : 0;
	b->tid = tid;
	b->off_ts = t->off_ts;
	bpf_seq_write(ctx->meta->seq, b, sizeof(*b));
	return 0;
}

/* Run by user space at every tick where thread_stats live in task local storage
 * (threads_in_task): every thread's entry, with its tid, as the walk of the threads hash
 * gives them elsewhere. */
/* Its record's type, in the object's BTF for the generated Rust types. */
struct thread_rec *thread_rec_type __attribute__((unused));

SEC("iter/task")
int ttop_dump_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_stats *t;
	struct thread_rec r = {};

	if (!task || !threads_in_task)
		return 0;
	t = bpf_task_storage_get(&thread_store, task, 0, 0);
	if (!t)
		return 0;
	r.tid = task->pid;
	__builtin_memcpy(&r.s, t, sizeof(r.s));
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

#endif
