/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): kernel lock waits
 * (lock:contention_begin/end) per (lock, kernel stack, process). */
#ifndef TTOP_CONTENTION_LOCKS_H
#define TTOP_CONTENTION_LOCKS_H

/* Spinning waits cannot sleep or migrate: one small stack of them per CPU (irq
 * handlers may nest a wait inside a task's). */
struct ttop_spin_waits {
	struct ttop_lock_wait slot[SPIN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_spin_waits);
} spin_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_LOCKS);
	__type(key, struct ttop_lock_key);
	__type(value, struct ttop_lock_stats);
} locks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_STACKS);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

/* Where a stack goes whose bucket in kstacks holds another stack (stackid_or_spill in
 * contention_futex.h). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_STACKS_SPILL);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} kstacks_spill SEC(".maps");

#include "lock_stacks.h"

/* ---------------------------------------------------------------- kernel locks */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_lock_acc);
} lock_accs SEC(".maps");

static __always_inline bool lock_key_eq(const struct ttop_lock_key *a,
					const struct ttop_lock_key *b)
{
	return a->lock == b->lock && a->kstack == b->kstack && a->tgid == b->tgid &&
	       a->flags == b->flags && a->is_mmap == b->is_mmap;
}

/* Add a CPU's sums to their entry in `locks` (created with the first waiter's comm). */
static __always_inline void lock_flush(struct ttop_lock_acc *a)
{
	struct ttop_lock_stats *s, z = {};

	s = bpf_map_lookup_elem(&locks, &a->key);
	if (!s) {
		__builtin_memcpy(z.comm, a->s.comm, sizeof(z.comm));
		if (!bpf_map_update_elem(&locks, &a->key, &z, BPF_NOEXIST))
			__sync_fetch_and_add(&inserts[TTOP_INS_LOCKS], 1);
		s = bpf_map_lookup_elem(&locks, &a->key);
		if (!s) {
			__sync_fetch_and_add(&cdrops[CDROP_LOCKS], a->s.contended);
			return;
		}
	}
	__sync_fetch_and_add(&s->contended, a->s.contended);
	__sync_fetch_and_add(&s->wait_ns, a->s.wait_ns);
	/* A maximum of an earlier tick was read from this CPU's copy then. */
	if (a->s.max_gen == contention_gen)
		max_gen_into(&s->max_wait_ns, &s->max_gen, a->s.max_wait_ns);
	if (a->s.last_ns > s->last_ns)
		s->last_ns = a->s.last_ns;
	s->last_tid = a->s.last_tid;
}

/* One wait, counted in this CPU's sums (lock_accs): under the spinlock storm of the
 * issue-36 benchmark, counting each wait straight into the shared hash entry cost 237
 * ns a wait, the entry's cache line moving between the CPUs every time. */
static __always_inline void lock_account(struct ttop_lock_wait *w, __u64 now)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ttop_lock_key key = {};
	__u64 dur = now > w->start_ns ? now - w->start_ns : 0;
	__u32 zero = 0;
	struct ttop_lock_acc *a = bpf_map_lookup_elem(&lock_accs, &zero);

	if (!a)
		return;
	key.lock = w->lock;
	key.kstack = w->kstack;
	key.tgid = pid_tgid >> 32;
	key.flags = w->flags;
	key.is_mmap = w->is_mmap;
	/* Full barriers: the stores between them are seen after seq_end and before
	 * seq_begin by a reader on another CPU. */
	__sync_fetch_and_add(&a->seq_end, 1);
	if (!lock_key_eq(&a->key, &key)) {
		if (a->key.lock)
			lock_flush(a);
		a->key = key;
		a->s.contended = 0;
		a->s.wait_ns = 0;
		a->s.max_wait_ns = 0;
		a->s.max_gen = 0;
		bpf_get_current_comm(&a->s.comm, sizeof(a->s.comm));
	}
	a->s.contended++;
	a->s.wait_ns += dur;
	max_gen_into(&a->s.max_wait_ns, &a->s.max_gen, dur);
	a->s.last_ns = now;
	a->s.last_tid = (__u32)pid_tgid;
	__sync_fetch_and_add(&a->seq_begin, 1);
}

static __always_inline bool is_spin(__u32 flags)
{
	return (flags & TTOP_LCB_F_SPIN) && !(flags & TTOP_LCB_F_MUTEX);
}

/* A wait starts when ttop's own work for it is done: the clock is read after the stack
 * walk (3-8 us when it is not cached), which would otherwise count as waiting for the
 * lock (the issue measured 1.8-3.9x the mean wait of a few-microsecond spinlock). */
SEC("raw_tp/contention_begin")
int BPF_PROG(ttop_contention_begin, void *lock, unsigned int flags)
{
	FLOOR();
	__u64 now;
	__u64 addr = (__u64)(unsigned long)lock;
	struct ttop_thread_state *ts;
	struct ttop_lock_wait *w;

	if (is_spin(flags)) {
		__u32 zero = 0;
		struct ttop_spin_waits *sw = bpf_map_lookup_elem(&spin_waits, &zero);
		int i, free_slot = -1;
		long kstack;

		if (!sw)
			return 0;
		for (i = 0; i < SPIN_SLOTS; i++) {
			if (sw->slot[i].lock == addr)
				return 0; /* a repeated begin: keep the first timestamp */
			if (!sw->slot[i].lock && free_slot < 0)
				free_slot = i;
		}
		if (free_slot < 0) {
			cdrop(CDROP_LOCK_NEST);
			return 0;
		}
		kstack = lock_stack_id(ctx, 1 | (__u64)flags << 8);
		if (kstack < 0 && kstack != TTOP_KSTACK_SHED)
			cdrop(CDROP_STACKS);
		now = bpf_ktime_get_ns();
		/* Constant index for the verifier. */
		for (i = 0; i < SPIN_SLOTS; i++) {
			if (i != free_slot)
				continue;
			sw->slot[i].lock = addr;
			sw->slot[i].start_ns = now;
			sw->slot[i].flags = flags;
			sw->slot[i].is_mmap = 0;
			sw->slot[i].kstack = kstack;
		}
		return 0;
	}

	/* A sleeping lock. A mutex reports begin twice (optimistic spin, then sleep):
	 * keep the first timestamp and the last flags. */
	ts = my_state(true);
	if (!ts)
		return 0;
	w = &ts->sleep;
	now = bpf_ktime_get_ns();
	if (w->lock == addr && now - w->start_ns < LOCK_STALE_NS) {
		w->flags = flags;
		return 0;
	}
	{
		struct ttop_lock_wait nw = {};
		struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
		struct mm_struct *own = BPF_CORE_READ(cur, mm);
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct ttop_mmap_slot *sl = mmap_slot(tid);
		struct ttop_mmap_op *op = NULL;
		bool in_slot;

		if (sl)
			op = mmap_op_find(sl, tid, &in_slot);

		nw.lock = addr;
		nw.flags = flags;
		nw.kstack = lock_stack_id(ctx, 2 | (__u64)flags << 8);
		if (nw.kstack < 0 && nw.kstack != TTOP_KSTACK_SHED)
			cdrop(CDROP_STACKS);
		if (own && addr == mmap_lock_addr(own))
			nw.is_mmap = 1;
		/* An mmap_lock attempt of this thread (its own mm or, like a /proc reader,
		 * another process's) went into the rwsem slow path: that is a wait. */
		if (op && op->start_ns && op->mm && addr == mmap_lock_addr((struct mm_struct *)op->mm)) {
			struct ttop_mm_state *st = mm_state_get((struct mm_struct *)op->mm);

			nw.is_mmap = 1;
			if (!op->contended && st) {
				op->contended = 1;
				snapshot_holder(st, op);
				__sync_fetch_and_add(&st->wait_seq, 1);
				__sync_fetch_and_add(&st->waiting, 1);
			}
		}
		/* Started now, after the walk and the mmap_lock bookkeeping above. */
		nw.start_ns = bpf_ktime_get_ns();
		*w = nw;
	}
	return 0;
}

SEC("raw_tp/contention_end")
int BPF_PROG(ttop_contention_end, void *lock, int ret)
{
	FLOOR();
	__u64 now = bpf_ktime_get_ns();
	__u64 addr = (__u64)(unsigned long)lock;
	__u32 zero = 0;
	struct ttop_spin_waits *sw = bpf_map_lookup_elem(&spin_waits, &zero);
	struct ttop_thread_state *ts;
	int i;

	if (sw) {
		for (i = 0; i < SPIN_SLOTS; i++) {
			if (sw->slot[i].lock != addr)
				continue;
			lock_account(&sw->slot[i], now);
			sw->slot[i].lock = 0;
			return 0;
		}
	}
	ts = my_state(false);
	if (!ts || ts->sleep.lock != addr)
		return 0;
	lock_account(&ts->sleep, now);
	ts->sleep.lock = 0;
	return 0;
}

#endif
