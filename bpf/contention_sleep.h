/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): the futex waits that
 * slept (futex_sleep.h), the contention object's programs for them. Its sched_switch
 * program runs only where the scheduler object's does not count them
 * (ttop_sched_switch with futex_sleeps_shared); the wake-up program always runs with them. User space loads
 * either these or the syscall hooks (contention_futex.h). */
#ifndef TTOP_CONTENTION_SLEEP_H
#define TTOP_CONTENTION_SLEEP_H

SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_futex_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	FLOOR();
	__u64 now = bpf_ktime_get_ns();

	if (!preempt)
		futex_sleep_begin(ctx, prev, prev_state, now);
	futex_sleep_end(next, now);
	return 0;
}

/* Before 5.18: no prev_state argument (compat.h). */
SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_futex_switch3, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	FLOOR();
	__u64 now = bpf_ktime_get_ns();

	if (!preempt)
		futex_sleep_begin(ctx, prev, task_state(prev), now);
	futex_sleep_end(next, now);
	return 0;
}

/* A futex sleeper woken by a thread inside a futex wake call (not by a timeout or a
 * signal): the wait was ended by a wake on a word. sched_waking runs in the waker's
 * context; sched_wakeup may run on the sleeper's CPU from its queue of remote wake-ups,
 * with some other task current (a quarter of a mutex storm's wakes were missed so). */
SEC("tp_btf/sched_waking")
int BPF_PROG(ttop_futex_wakeup, struct task_struct *p)
{
	FLOOR();
	struct task_struct *waker = bpf_get_current_task_btf();
	struct ttop_thread_state *ts;
	struct ttop_futex_call c = {}, w = {};

	futex_call_of(waker, &c);
	if (c.kind != KIND_WAKE)
		return 0;
	ts = bpf_task_storage_get(&thread_state, p, 0, 0);
	/* The waker is the current task: its process is one load away. */
	if (ts && ts->fsleep.start_ns) {
		ts->fsleep.waker = waker->tgid;
		__sync_fetch_and_add(&ts->fsleep.wakes, 1);
		return 0;
	}
	/* Woken between its last check of the word and its switch (a storm on 2 CPUs: a
	 * fifth of the wakes): its switch-out, next, is the sleep this wake ended. */
	futex_call_of(p, &w);
	if (w.kind != KIND_WAIT)
		return 0;
	if (!ts)
		ts = bpf_task_storage_get(&thread_state, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts) {
		ts->fsleep.early_uaddr = w.uaddr;
		ts->fsleep.waker = waker->tgid;
		__sync_fetch_and_add(&ts->fsleep.wakes, 1);
	}
	return 0;
}

#endif
