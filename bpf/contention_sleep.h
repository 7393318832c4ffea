/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): futex waits that slept,
 * seen from the scheduler instead of the futex syscalls. A thread that switches out
 * asleep (not preempted) inside a futex wait syscall is one contended wait: its saved
 * user registers name the syscall and the word. Being woken by a thread inside a futex
 * wake call marks it woken; switching back in ends it (the wait time). No syscall is
 * hooked, so a futex call that does not sleep (a wake, an EAGAIN, the uncontended
 * majority of a lock storm) costs nothing; calls, EAGAINs and wake calls are then not
 * measured. User space loads either these or the syscall hooks (contention_futex.h).
 * The counts go to the same (thread, word) entries. */
#ifndef TTOP_CONTENTION_SLEEP_H
#define TTOP_CONTENTION_SLEEP_H

/* The futex call `task` is inside, decoded from its saved user registers (kind
 * KIND_OTHER: none). Its registers hold the syscall's arguments until it returns. */
static __always_inline void futex_call_of(struct task_struct *task, struct ttop_futex_call *c)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long id = syscall_nr(regs);

	if (!is_futex_nr(id))
		return;
	futex_decode(id, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
		     id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? PT_REGS_PARM4_CORE_SYSCALL(regs) : 0,
		     c);
}

/* `prev` (the current task) switches out. */
static __always_inline void futex_sleep_begin(void *ctx, struct task_struct *prev,
					      unsigned int prev_state)
{
	struct ttop_futex_call c = {};
	struct ttop_thread_state *ts;
	struct ttop_futex_stats *s;
	__u64 pid_tgid, now;

	/* TASK_RUNNING: preempted or yielding, not asleep. */
	if (prev_state == 0)
		return;
	futex_call_of(prev, &c);
	if (c.kind != KIND_WAIT)
		return;
	ts = bpf_task_storage_get(&thread_state, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		return;
	pid_tgid = bpf_get_current_pid_tgid();
	s = futex_entry(pid_tgid, c.uaddr);
	if (!s)
		return;
	now = bpf_ktime_get_ns();
	s->contended++;
	s->flags |= c.flags;
	s->last_ns = now;
	ts->fsleep.uaddr = c.uaddr;
	ts->fsleep.start_ns = now;
	/* A wake that found it about to wait on another word (that wait returned without
	 * sleeping) is not this wait's. */
	if (ts->fsleep.early_uaddr && ts->fsleep.early_uaddr != c.uaddr)
		ts->fsleep.wakes_seen = ts->fsleep.wakes;
	ts->fsleep.early_uaddr = 0;
	/* The sleeper is the current task: its user stack, as futex_account takes one (the
	 * entry's first contended wait, then one in 64), unless the cost ceiling shed them. */
	if (!ustacks_off && !ustacks_shed && (s->ustack == -1 || (s->contended & 63) == 0)) {
		long sid = stackid_or_spill(ctx, &ustacks, &ustacks_spill, BPF_F_USER_STACK);

		if (sid >= 0) {
			s->ustack = sid;
			__sync_fetch_and_add(&ustack_stats[0], 1);
			copy_ustack(pid_tgid >> 32, c.uaddr, 0, false);
		} else if (s->ustack < 0) {
			s->ustack = -2; /* refused: next tried with the 64th wait */
			cdrop(CDROP_STACKS);
		}
		__sync_fetch_and_add(&ustack_stats[2], bpf_ktime_get_ns() - now);
	}
}

/* `next` switches in: a futex sleep it was in has ended. */
static __always_inline void futex_sleep_end(struct task_struct *next)
{
	struct ttop_thread_state *ts = bpf_task_storage_get(&thread_state, next, 0, 0);
	struct ttop_futex_stats *s;
	struct ttop_futex_key key;
	__u64 now, dur;
	__u32 wakes, woken;

	if (!ts || !ts->fsleep.start_ns)
		return;
	wakes = *(volatile __u32 *)&ts->fsleep.wakes;
	woken = wakes != ts->fsleep.wakes_seen;
	ts->fsleep.wakes_seen = wakes;
	key.tid = BPF_CORE_READ(next, pid);
	key.tgid = BPF_CORE_READ(next, tgid);
	key.uaddr = ts->fsleep.uaddr;
	now = bpf_ktime_get_ns();
	dur = now > ts->fsleep.start_ns ? now - ts->fsleep.start_ns : 0;
	/* Asleep since before these programs were last attached: its wait is unknown. */
	if (ts->fsleep.start_ns < sleeps_since_ns) {
		ts->fsleep.start_ns = 0;
		return;
	}
	ts->fsleep.start_ns = 0;
	s = bpf_map_lookup_elem(&futexes, &key);
	if (!s)
		return;
	futex_hist_add(dur);
	s->wait_ns += dur;
	max_gen_into(&s->max_wait_ns, &s->max_gen, dur);
	s->woken += woken;
	/* Who woke it: named only when another process did (a thread of its own process
	 * is woken - woken_other, and needs no store). */
	if (woken && ts->fsleep.waker != key.tgid) {
		s->woken_other++;
		s->waker_tgid = ts->fsleep.waker;
	}
	s->last_ns = now;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_futex_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	if (!preempt)
		futex_sleep_begin(ctx, prev, prev_state);
	futex_sleep_end(next);
	return 0;
}

/* Before 5.18: no prev_state argument (compat.h). */
SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_futex_switch3, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	if (!preempt)
		futex_sleep_begin(ctx, prev, task_state(prev));
	futex_sleep_end(next);
	return 0;
}

/* A futex sleeper woken by a thread inside a futex wake call (not by a timeout or a
 * signal): the wait was ended by a wake on a word. sched_waking runs in the waker's
 * context; sched_wakeup may run on the sleeper's CPU from its queue of remote wake-ups,
 * with some other task current (a quarter of a mutex storm's wakes were missed so). */
SEC("tp_btf/sched_waking")
int BPF_PROG(ttop_futex_wakeup, struct task_struct *p)
{
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
