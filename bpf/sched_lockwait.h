/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wall-time split's kernel-lock parts, for sched.bpf.c: a thread that sleeps
 * uninterruptibly inside a mutex or rwsem wait (lock:contention_begin .. _end, 5.19+)
 * is blocked on a kernel lock, and on the mmap_lock when the lock is its own process's.
 * The two programs only mark the thread's entry; sched_switch reads the mark at
 * switch-out (sched_off.h). Spinlocks never sleep and are skipped at once; an end that
 * no marked thread can be waiting for costs one load.
 */
#ifndef TTOP_SCHED_LOCKWAIT_H
#define TTOP_SCHED_LOCKWAIT_H

/* The current thread's entry (tid: its id). */
static __always_inline struct thread_stats *thread_current(__u32 tid)
{
	if (threads_in_task)
		return bpf_task_storage_get(&thread_store, bpf_get_current_task_btf(), 0, 0);
	return bpf_map_lookup_elem(&threads, &tid);
}

/* Threads marked now: while none is, contention_end returns at once. */
volatile __u64 lock_waiting;

SEC("raw_tp/contention_begin")
int BPF_PROG(ttop_split_lock_begin, void *lock, unsigned int flags)
{
	FLOOR();
	__u64 addr = (__u64)(unsigned long)lock;
	struct task_struct *cur;
	struct thread_stats *t;
	struct mm_struct *mm;
	__u32 tid;

	if ((flags & TTOP_LCB_F_SPIN) && !(flags & TTOP_LCB_F_MUTEX))
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	t = thread_current(tid);
	if (!t)
		return 0;
	cur = (struct task_struct *)bpf_get_current_task();
	mm = BPF_CORE_READ(cur, mm);
	/* A mutex reports begin twice (optimistic spin, then sleep): mark it once. */
	if (!t->lock_addr)
		__sync_fetch_and_add(&lock_waiting, 1);
	t->lock_addr = addr;
	t->lock_wait = mm && addr == mmap_lock_addr(mm) ? TTOP_SPLIT_MMAP : TTOP_SPLIT_LOCK;
	return 0;
}

SEC("raw_tp/contention_end")
int BPF_PROG(ttop_split_lock_end, void *lock, int ret)
{
	FLOOR();
	struct thread_stats *t;
	__u32 tid;

	if (!lock_waiting)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	t = thread_current(tid);
	if (!t || !t->lock_addr || t->lock_addr != (__u64)(unsigned long)lock)
		return 0;
	t->lock_addr = 0;
	t->lock_wait = 0;
	__sync_fetch_and_add(&lock_waiting, -1);
	return 0;
}

#endif
