/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wall-time split's off-CPU side, for sched.bpf.c: why a thread leaves its CPU to
 * sleep (enum ttop_split in ttop.h), decided once at its switch-out, and the sleep's
 * length charged to that cause when it is woken. On-CPU time and run-queue wait are
 * sched.bpf.c's own; together they cover the thread's whole life under ttop.
 */
#ifndef TTOP_SCHED_OFF_H
#define TTOP_SCHED_OFF_H

#define TTOP_TASK_INTERRUPTIBLE 0x1
#define TTOP_TASK_UNINTERRUPTIBLE 0x2
#define TTOP_TASK_NOLOAD 0x400 /* TASK_IDLE: a kernel thread's idle wait, not a block */
#define TTOP_PF_KTHREAD 0x00200000
#define TTOP_ENOSYS 38

/* The system call `task` sleeps in, from its saved user registers (`task` must be a BTF
 * pointer where the kernel has bpf_task_pt_regs: current_task(), an iterator's task).
 * -1 when it is not in a system call (an exception such as a page
 * fault: the registers' ax still holds the user's value, where a system call in
 * progress has -ENOSYS until it returns) or where the layout is unknown. */
static __always_inline long sleeping_syscall(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = task_user_regs(task);
	long nr, ax;

	if (!regs)
		return -1;
	nr = UREG(regs, orig_ax);
	ax = UREG(regs, ax);
	return ax == -TTOP_ENOSYS ? nr : -1;
#else
	return -1;
#endif
}

/* x86-64's numbers (asm/unistd_64.h); elsewhere every syscall sleep is "other". */
static __always_inline __u32 syscall_cause(long nr)
{
#if defined(__TARGET_ARCH_x86)
	switch (nr) {
	case 202: /* futex */
	case 449: /* futex_waitv */
		return TTOP_SPLIT_FUTEX;
	case 7:   /* poll */
	case 23:  /* select */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 441: /* epoll_pwait2 */
		return TTOP_SPLIT_POLL;
	case 35:  /* nanosleep */
	case 230: /* clock_nanosleep */
		return TTOP_SPLIT_SLEEP;
	case 0:   /* read */
	case 17:  /* pread64 */
	case 19:  /* readv */
	case 45:  /* recvfrom */
	case 47:  /* recvmsg */
	case 295: /* preadv */
	case 299: /* recvmmsg */
	case 327: /* preadv2 */
		return TTOP_SPLIT_READ;
	}
#endif
	return TTOP_SPLIT_OTHER;
}

/* Why `task` (prev switching out, `regs_of` the same task as a BTF pointer), in `state`
 * (not runnable), is off its CPU. */
static __always_inline __u32 off_cause(bool btf, struct task_struct *prev,
				       struct task_struct *regs_of, unsigned int state)
{
	bool kthread = RD(btf, prev, flags) & TTOP_PF_KTHREAD;
	long nr;

	if (state & TTOP_TASK_NOLOAD)
		return TTOP_SPLIT_OTHER;
	if (state & TTOP_TASK_UNINTERRUPTIBLE) {
		/* A user thread blocked outside any system call is in a page fault. */
		if (!kthread && sleeping_syscall(regs_of) < 0)
			return TTOP_SPLIT_FAULT;
		if (BPF_CORE_READ_BITFIELD_PROBED(prev, in_iowait))
			return TTOP_SPLIT_IO;
		return TTOP_SPLIT_D;
	}
	if (kthread || !(state & TTOP_TASK_INTERRUPTIBLE))
		return TTOP_SPLIT_OTHER;
	nr = sleeping_syscall(regs_of);
	return nr < 0 ? TTOP_SPLIT_OTHER : syscall_cause(nr);
}

/* End t's sleep at `now` (woken, or switched in after a wakeup we did not see). */
static __always_inline void off_end(struct thread_stats *t, __u64 now)
{
	__u32 c = t->off_cause;

	if (t->off_ts && now > t->off_ts && c < TTOP_SPLIT__COUNT)
		t->off_ns[c] += now - t->off_ts;
	t->off_ts = 0;
}

/* `t` leaves a CPU we never saw it come onto: the kernel did not deliver that
 * sched_switch (on 6.18 in a VM a few a second, after one thread's switch-out went
 * missing; the header's "sched skips"). Since its last event it was waiting (enq_ts) or
 * asleep (off_ts) and then ran for `sum` - t->sum_ns of CPU time, exactly, by the
 * kernel's own count: that part is on-CPU, the rest of the time is charged to what it
 * was in, so its wall time still adds up (it used to be lost whole). */
static __always_inline void unseen_in(struct thread_stats *t, __u64 sum, __u64 now)
{
	__u64 since = t->enq_ts ? t->enq_ts : t->off_ts;
	__u64 ran, span;
	__u32 c = t->off_cause;

	if (!since || now <= since)
		return;
	span = now - since;
	ran = sum > t->sum_ns ? sum - t->sum_ns : 0;
	if (ran > span)
		ran = span;
	t->oncpu_wall_ns += ran;
	if (t->enq_ts)
		t->runq_wait_ns += span - ran;
	else if (c < TTOP_SPLIT__COUNT)
		t->off_ns[c] += span - ran;
	t->off_ts = 0;
}

#endif
