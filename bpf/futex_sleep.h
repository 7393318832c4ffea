/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Futex waits that slept, seen from the scheduler instead of the futex syscalls: a
 * thread that switches out asleep (not preempted) inside a futex wait syscall is one
 * contended wait, its saved user registers name the syscall and the word; a wake by a
 * thread inside a futex wake call marks it woken (ttop_futex_wakeup, sched_waking);
 * switching back in ends it (the wait time). No syscall is hooked, so a futex call that
 * does not sleep (a wake, an EAGAIN, the uncontended majority of a lock storm) costs
 * nothing; calls, EAGAINs and wake calls are then not measured. The counts go to the
 * same (thread, word) entries as the per-call hooks' (contention_futex.h).
 *
 * Called from the scheduler object's sched_switch program (ttop_sched_switch with futex_sleeps_shared, one
 * program and one clock read per switch) and, where that one does not run, from the
 * contention object's own (contention_sleep.h). Needs futex_shared.h. */
#ifndef TTOP_FUTEX_SLEEP_H
#define TTOP_FUTEX_SLEEP_H

/* The futex call `task` is inside, decoded from its saved user registers (kind
 * KIND_OTHER: none). Its registers hold the syscall's arguments until it returns. */
static __always_inline void futex_call_of(struct task_struct *task, struct ttop_futex_call *c)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
#if defined(__TARGET_ARCH_x86)
	/* A BTF pointer: plain loads, not probe reads (every wake-up and sleep runs this). */
	long id = regs->orig_ax;

	if (!is_futex_nr(id))
		return;
	futex_decode(id, regs->di, regs->si,
		     id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? regs->r10 : 0, c);
#else
	long id = syscall_nr(regs);

	if (!is_futex_nr(id))
		return;
	futex_decode(id, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
		     id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? PT_REGS_PARM4_CORE_SYSCALL(regs) : 0,
		     c);
#endif
}

/* `prev` (the current task) switches out at `now`. */
static __always_inline void futex_sleep_begin(void *ctx, struct task_struct *prev,
					      unsigned int prev_state, __u64 now)
{
	struct ttop_futex_call c = {};
	struct ttop_thread_state *ts;
	struct ttop_futex_stats *s;
	__u64 pid_tgid;

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

/* `next` switches in at `now`: a futex sleep it was in has ended. */
static __always_inline void futex_sleep_end(struct task_struct *next, __u64 now)
{
	struct ttop_thread_state *ts = bpf_task_storage_get(&thread_state, next, 0, 0);
	struct ttop_futex_stats *s;
	struct ttop_futex_key key;
	__u64 dur;
	__u32 wakes, woken;

	if (!ts || !ts->fsleep.start_ns)
		return;
	wakes = *(volatile __u32 *)&ts->fsleep.wakes;
	woken = wakes != ts->fsleep.wakes_seen;
	ts->fsleep.wakes_seen = wakes;
	/* tp_btf's next: plain loads. */
	key.tid = next->pid;
	key.tgid = next->tgid;
	key.uaddr = ts->fsleep.uaddr;
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

#endif
