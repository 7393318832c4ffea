/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): mmap_lock waits per (victim
 * process, holder process, waiting process), with how many threads waited, from the
 * mmap_lock tracepoints. */
#ifndef TTOP_CONTENTION_MMAP_H
#define TTOP_CONTENTION_MMAP_H

/* ---- mmap_lock ---- */

#define MM_HOLDS 4

/* One finished hold of an mmap_lock. */
struct ttop_mm_hold {
	__u64 from;         /* acquired (or handed over, for a waiter) */
	__u64 to;           /* released */
	__u32 tid;
	__u32 tgid;
};

/* Who holds one mm's mmap_lock, as far as the tracepoints told us. */
struct ttop_mm_state {
	__u32 owner_tgid;
	__u32 writer_tid;
	__u32 writer_tgid;
	__u32 last_reader_tid;
	__u32 last_reader_tgid;
	__s32 readers;
	__s32 waiting;      /* threads in a contended wait for it now */
	__u32 pad;
	__u64 wait_seq;     /* bumped when a thread starts waiting for this lock */
	__u64 last_rel_ns;  /* the last release */
	__u32 rel_idx;      /* next slot of rel[] */
	__u32 pad2;
	struct ttop_mm_hold rel[MM_HOLDS]; /* the last releases, as a ring */
};

/* One thread's current mmap_lock operation. */
struct ttop_mmap_op {
	__u64 mm;
	__u64 start_ns;     /* start_locking (0: not trying) */
	__u64 acquired_ns;  /* acquire_returned with success (0: not holding) */
	__u64 seq;          /* mm_state.wait_seq when it acquired */
	__u32 holder_tid;   /* who held the lock when we began to wait */
	__u32 holder_tgid;
	__u32 contended;
	__u32 write;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TTOP_MAX_PROCS);
	__type(key, __u64);
	__type(value, struct ttop_mm_state);
} mm_states SEC(".maps");

/* A thread's mmap_lock operation lives in the slot of its tid (tid % MMAP_SLOTS) while
 * it has one in flight, and in the mmap_ops LRU hash only when another thread's op
 * holds that slot. It used to live in mmap_ops always: under thread churn (bench
 * item 2, 4 threads at a time; each thread takes mmap_lock twice, in madvise and
 * exit_mm) every new thread's first start_locking did an LRU insert, which evicts a
 * dead thread's entry from the full map, and every event a hash lookup. An array slot
 * needs neither (the verifier inlines the lookup): start_locking 514-575 -> 204-213 ns,
 * acquire_returned 220-255 -> 210-219, released 206-213 -> 176-194; 975-1008 -> 590-621
 * ns per operation.
 *
 * A slot is found by tid, not by CPU, so a thread that sleeps or migrates with its op
 * in flight (a /proc reader preempted while holding a process's lock, rwsem waiters
 * woken on another CPU) finds it wherever it runs next. A per-CPU slot would need a
 * sched_switch program to move the op of every thread switched out mid-operation, run
 * on every context switch of the machine. Tids are handed out in order, so two
 * threads with ops in flight at once share a slot only when their tids are MMAP_SLOTS
 * apart: rare, and then the later one uses mmap_ops exactly as before. (The test
 * mmap_lock_waits_match_lock_waits makes such pairs with tids equal modulo 8192.)
 *
 * `own` is the owner's tid, with MMAP_BUSY while its op is in flight (mm, start_ns or
 * acquired_ns set: an op with all three 0 acts exactly like no op). Only the owner
 * clears MMAP_BUSY (at the release that ends its op); any thread may take an idle slot,
 * with a compare-and-swap on `own` so that it and the old owner cannot both take it.
 * `parked` counts the in-flight ops in mmap_ops of threads of this slot: while it is
 * 0, a thread that does not own the slot has no op, and no hash lookup is done. */
#define MMAP_SLOTS 8192
#define MMAP_BUSY (1ULL << 32)

/* `seen_*`: the rows (victim << 32 | holder) the slot's thread `seen_tid` has been counted
 * in (ttop_mmap_stats.threads) in tick generation `seen_gen`, the latest first. Four,
 * because in seed 002 a thread's waits move among the /proc reader, its own process's
 * other threads, ttop's own maps query and an unknown holder. Whoever waits writes them,
 * owner of the slot or not: a thread whose tid shares the slot only makes the next wait
 * of either count again, as does a fifth row. */
#define MMAP_SEEN_ROWS 4
struct ttop_mmap_slot {
	__u64 own;
	__u32 parked;
	__u32 seen_tid;
	struct ttop_mmap_op op;
	__u64 seen_gen;
	__u64 seen_row[MMAP_SEEN_ROWS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MMAP_SLOTS);
	__type(key, __u32);
	__type(value, struct ttop_mmap_slot);
} mmap_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TTOP_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct ttop_mmap_op);
} mmap_ops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_MMAP);
	__type(key, struct ttop_mmap_key);
	__type(value, struct ttop_mmap_stats);
} mmap_waits SEC(".maps");

/* Old kernels (before 6.14) pass the memcg path as the second mmap_lock argument. */
struct trace_event_raw_mmap_lock___old {
	__u32 __data_loc_memcg_path;
} __attribute__((preserve_access_index));

/* ---------------------------------------------------------------- mmap_lock helpers */

static __always_inline __u32 mm_owner_tgid(struct mm_struct *mm)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();

	if (bpf_core_field_exists(mm->owner)) {
		struct task_struct *o = BPF_CORE_READ(mm, owner);

		if (o)
			return BPF_CORE_READ(o, tgid);
	}
	if (BPF_CORE_READ(cur, mm) == mm)
		return BPF_CORE_READ(cur, tgid);
	return 0;
}

static __always_inline struct ttop_mm_state *mm_state_get(struct mm_struct *mm)
{
	__u64 key = (__u64)(unsigned long)mm;
	struct ttop_mm_state *st = bpf_map_lookup_elem(&mm_states, &key);
	struct ttop_mm_state z = {};

	if (st)
		return st;
	z.owner_tgid = mm_owner_tgid(mm);
	bpf_map_update_elem(&mm_states, &key, &z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&mm_states, &key);
}

/* The mm's owner now. mm_struct memory is recycled, so an entry keyed by its address
 * may have belonged to an earlier process: the rare paths (a wait, a contended hold)
 * re-read the owner, and a changed owner means a new mm whose state starts afresh. */
static __always_inline __u32 mm_victim(struct ttop_mm_state *st, struct mm_struct *mm)
{
	__u32 owner = mm_owner_tgid(mm);

	if (owner && owner != st->owner_tgid) {
		struct ttop_mm_state z = {};

		z.owner_tgid = owner;
		*st = z;
	}
	return st->owner_tgid;
}

/* Who is in the way: the writer, else the last reader still counted. */
static __always_inline void snapshot_holder(struct ttop_mm_state *st, struct ttop_mmap_op *op)
{
	if (st->writer_tid) {
		op->holder_tid = st->writer_tid;
		op->holder_tgid = st->writer_tgid;
	} else if (st->readers > 0) {
		op->holder_tid = st->last_reader_tid;
		op->holder_tgid = st->last_reader_tgid;
	}
}

/* The op has something in flight: a start, a hold, or an mm a later trylock may match. */
static __always_inline bool mmap_op_live(const struct ttop_mmap_op *op)
{
	return op->mm || op->start_ns || op->acquired_ns;
}

static __always_inline struct ttop_mmap_slot *mmap_slot(__u32 tid)
{
	__u32 i = tid & (MMAP_SLOTS - 1);

	return bpf_map_lookup_elem(&mmap_slots, &i);
}

/* This thread's op, or NULL if it has none in flight; *in_slot says where it lives. A
 * thread owning its slot has nothing in mmap_ops (taking the slot emptied it there). */
static __always_inline struct ttop_mmap_op *mmap_op_find(struct ttop_mmap_slot *sl, __u32 tid,
							 bool *in_slot)
{
	__u64 own = *(volatile __u64 *)&sl->own;

	*in_slot = false;
	if ((__u32)own == tid) {
		if (!(own & MMAP_BUSY))
			return NULL;
		*in_slot = true;
		return &sl->op;
	}
	if (!*(volatile __u32 *)&sl->parked)
		return NULL;
	return bpf_map_lookup_elem(&mmap_ops, &tid);
}

/* ---------------------------------------------------------------- mmap_lock */

/* The tracepoint arguments: (mm, [memcg_path,] write[, success]). The verifier only
 * walks the branch CO-RE keeps, so the context offset it records fits this kernel. */
static __always_inline bool mmap_tp_old(void)
{
	return bpf_core_field_exists(struct trace_event_raw_mmap_lock___old, __data_loc_memcg_path);
}

static __always_inline void blame_longest_hold(struct ttop_mm_state *st, struct ttop_mmap_op *op,
					       __u64 until)
{
	__u64 best = 0;
	int i;

	for (i = 0; i < MM_HOLDS; i++) {
		__u64 from = st->rel[i].from > op->start_ns ? st->rel[i].from : op->start_ns;
		__u64 to = st->rel[i].to < until ? st->rel[i].to : until;

		if (to > from && to - from > best && st->rel[i].tgid) {
			best = to - from;
			op->holder_tid = st->rel[i].tid;
			op->holder_tgid = st->rel[i].tgid;
		}
	}
}

/* The user stack of an mmap_lock row (a waiter's, or a holder's whose hold was contended):
 * walked by frame pointers at the row's first event and then one in 64 (`n` counts them),
 * each walk with a copy for the DWARF unwinder. The copy is keyed by thread, not by the
 * walk's stack id: through glibc's frame-pointer-less mmap/munmap wrappers the walk's
 * second frame is whatever the register held, a new stack id nearly every time, and
 * copies keyed by it filled the copy map. A thread has one copy per role (uaddr 0 for a
 * wait, 1 for a hold), replaced with each walk. Walks and copies go to maps of their own
 * (mmap_ustacks, mmap_ustack_copies), never the futex rows'. */
static __always_inline void mmap_ustack(void *ctx, struct ttop_mmap_stats *s, __u64 n, __u32 tid,
					__u32 tgid, __u64 role)
{
	__u64 t0;
	long sid;

	/* A stack the map refused (-2) is tried again with the 64th event, not each one. */
	if (ustacks_off || (s->ustack != -1 && (n & 63) != 0))
		return;
	t0 = bpf_ktime_get_ns();
	sid = stackid_or_spill(ctx, &mmap_ustacks, &mmap_ustacks_spill, BPF_F_USER_STACK);
	if (sid >= 0) {
		s->ustack = sid;
		__sync_fetch_and_add(&ustack_stats[0], 1);
	} else if (s->ustack < 0) {
		s->ustack = -2;
		cdrop(CDROP_STACKS);
	}
	s->ustack_tid = tid;
	copy_ustack(tgid, role, tid, true);
	__sync_fetch_and_add(&ustack_stats[2], bpf_ktime_get_ns() - t0);
}

/* Whether this is `tid`'s first wait in `row` in this tick generation (mmap_slot's seen_*). */
static __always_inline bool mmap_first_in_row(struct ttop_mmap_slot *sl, __u32 tid, __u64 row)
{
	__u64 g = contention_gen;

	if (sl->seen_tid != tid || sl->seen_gen != g) {
		sl->seen_tid = tid;
		sl->seen_gen = g;
		sl->seen_row[0] = row;
#pragma unroll
		for (int i = 1; i < MMAP_SEEN_ROWS; i++)
			sl->seen_row[i] = 0;
		return true;
	}
#pragma unroll
	for (int i = 0; i < MMAP_SEEN_ROWS; i++)
		if (sl->seen_row[i] == row)
			return false;
#pragma unroll
	for (int i = MMAP_SEEN_ROWS - 1; i > 0; i--)
		sl->seen_row[i] = sl->seen_row[i - 1];
	sl->seen_row[0] = row;
	return true;
}

static __always_inline void mmap_add_wait(void *ctx, struct ttop_mm_state *st, struct ttop_mmap_op *op,
					  struct ttop_mmap_slot *sl, __u32 tid, __u32 tgid, __u64 dur,
					  struct mm_struct *mm)
{
	struct ttop_mmap_key key = {};
	struct ttop_mmap_stats *s, z = {};

	key.victim = st ? mm_victim(st, mm) : 0;
	key.holder = op->holder_tgid;
	key.waiter_tgid = tgid;
	z.waiter_tgid = tgid;
	z.holder_tid = op->holder_tid;
	z.ustack = -1;
	bpf_get_current_comm(&z.comm, sizeof(z.comm));
	s = get_or_init(&mmap_waits, &key, &z, CDROP_MMAP, TTOP_INS_MMAP_WAITS);
	if (!s)
		return;
	if (mmap_first_in_row(sl, tid, ((__u64)key.victim << 32) | key.holder))
		__sync_fetch_and_add(&s->threads, 1);
	__sync_fetch_and_add(&s->waits, 1);
	mmap_ustack(ctx, s, s->waits, tid, tgid, 0);
	__sync_fetch_and_add(&s->wait_ns, dur);
	max_gen_into(&s->max_wait_ns, &s->max_gen, dur);
	s->last_ns = op->start_ns + dur;
}

static __always_inline int mmap_start(struct mm_struct *mm, bool write)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ttop_mmap_slot *sl = mmap_slot(tid);
	struct ttop_mmap_op op = {}, *old = NULL;
	bool took = false, hashed = false;
	__u64 own;

	if (!mm || !sl)
		return 0;
	own = *(volatile __u64 *)&sl->own;
	if (own == (tid | MMAP_BUSY)) {
		/* Ours already (an op whose release we never saw, or a nested lock). */
		old = &sl->op;
	} else if (!(own & MMAP_BUSY) &&
		   __sync_val_compare_and_swap(&sl->own, own, tid | MMAP_BUSY) == own) {
		/* An idle slot, now ours. An op this thread had in mmap_ops ends here. */
		took = true;
		if (*(volatile __u32 *)&sl->parked)
			old = bpf_map_lookup_elem(&mmap_ops, &tid);
	} else {
		/* Another thread's op is in flight in our slot. */
		hashed = true;
		old = bpf_map_lookup_elem(&mmap_ops, &tid);
	}
	/* A wait whose end we never saw: it is not waiting any more. */
	if (old && old->contended && old->start_ns) {
		__u64 okey = old->mm;
		struct ttop_mm_state *ost = bpf_map_lookup_elem(&mm_states, &okey);

		if (ost && ost->waiting > 0)
			__sync_fetch_and_add(&ost->waiting, -1);
	}
	op.mm = (__u64)(unsigned long)mm;
	op.start_ns = bpf_ktime_get_ns();
	op.write = write;
	if (!lock_tp_ok) {
		/* No slow-path signal: guess the holder now, and tell the holder that
		 * someone may be waiting when the lock is visibly taken against us. */
		struct ttop_mm_state *st = mm_state_get(mm);

		if (st && (st->writer_tid || (write && st->readers > 0))) {
			snapshot_holder(st, &op);
			op.contended = 1;
			__sync_fetch_and_add(&st->wait_seq, 1);
			__sync_fetch_and_add(&st->waiting, 1);
		}
	}
	if (!hashed) {
		if (took && old && mmap_op_live(old)) {
			struct ttop_mmap_op z = {};

			*old = z;
			__sync_fetch_and_add(&sl->parked, -1);
		}
		sl->op = op;
		return 0;
	}
	/* Only this thread touches its entry: overwrite it in place. An LRU hash update
	 * takes a fresh node off the free list and swaps it in, several times the cost
	 * of this store. */
	if (old) {
		if (!mmap_op_live(old))
			__sync_fetch_and_add(&sl->parked, 1);
		*old = op;
	} else if (!bpf_map_update_elem(&mmap_ops, &tid, &op, BPF_ANY)) {
		__sync_fetch_and_add(&sl->parked, 1);
	}
	return 0;
}

static __always_inline int mmap_acquired(void *ctx, struct mm_struct *mm, bool write, bool success)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, tgid = pid_tgid >> 32;
	__u64 now = bpf_ktime_get_ns();
	struct ttop_mmap_slot *sl = mmap_slot(tid);
	struct ttop_mmap_op *op;
	struct ttop_mm_state *st;
	bool in_slot;

	if (!mm || !sl)
		return 0;
	op = mmap_op_find(sl, tid, &in_slot);
	st = mm_state_get(mm);
	__u64 granted = now;

	if (op && op->mm == (__u64)(unsigned long)mm && op->start_ns) {
		__u64 dur = now > op->start_ns ? now - op->start_ns : 0;
		bool waited = op->contended || (!lock_tp_ok && dur >= MMAP_SLOW_NS);

		if (op->contended && st && st->waiting > 0)
			__sync_fetch_and_add(&st->waiting, -1);
		if (op->contended) {
			/* contention_begin recorded this wait as the thread's sleeping-lock
			 * wait, and the rwsem fires contention_end before returning here. If
			 * the wait is still recorded, that end was lost: the kernel-lock view
			 * missed one wait the mmap_lock view counts. Say so, and clear it, or
			 * the next begin on this lock within LOCK_STALE_NS would be taken
			 * for a repeat of it and timed from this wait's start. */
			struct ttop_thread_state *ts = my_state(false);

			if (ts && ts->sleep.lock == mmap_lock_addr(mm)) {
				cdrop(CDROP_LOCK_NEST);
				ts->sleep.lock = 0;
			}
		}
		op->contended = 0;

		if (waited) {
			/* An rwsem hands the lock to a queued thread at the release that
			 * wakes it: its wait ends there, not when it gets a CPU again. */
			if (st && st->last_rel_ns > op->start_ns && st->last_rel_ns < now) {
				granted = st->last_rel_ns;
				dur = granted - op->start_ns;
			}
			/* Who held it longest while we waited is who kept us waiting. This
			 * beats the snapshot taken when the wait began: a reader handed the
			 * lock while starved of CPU holds it unseen until it runs again, and
			 * threads queued behind a queued writer wait for the holder, not it. */
			if (st)
				blame_longest_hold(st, op, granted);
			mmap_add_wait(ctx, st, op, sl, tid, tgid, dur, mm);
		} else {
			/* Uncontended: the lock was taken right after start_locking; the
			 * thread may have been preempted before this event fired. */
			granted = op->start_ns;
		}
		op->start_ns = 0;
	}
	if (!success || !st)
		return 0;
	if (write) {
		st->writer_tid = tid;
		st->writer_tgid = tgid;
		st->readers = 0;
	} else {
		__sync_fetch_and_add(&st->readers, 1);
		st->last_reader_tid = tid;
		st->last_reader_tgid = tgid;
		st->writer_tid = 0;
	}
	if (op && op->mm == (__u64)(unsigned long)mm) {
		/* Held since the lock was handed over (for a waiter), else since now. */
		op->acquired_ns = granted;
		op->seq = st->wait_seq;
	}
	return 0;
}

static __always_inline int mmap_released(void *ctx, struct mm_struct *mm, bool write)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, tgid = pid_tgid >> 32;
	__u64 now = bpf_ktime_get_ns();
	__u64 key = (__u64)(unsigned long)mm;
	struct ttop_mmap_slot *sl = mmap_slot(tid);
	struct ttop_mm_state *st;
	struct ttop_mmap_op *op;
	bool in_slot;

	if (!mm || !sl)
		return 0;
	st = bpf_map_lookup_elem(&mm_states, &key);
	op = mmap_op_find(sl, tid, &in_slot);
	if (op && op->mm == key && op->acquired_ns) {
		/* Someone began waiting while we held it: this hold is contended. */
		if (st && (st->wait_seq != op->seq || st->waiting > 0)) {
			struct ttop_mmap_key k = {};
			struct ttop_mmap_stats *s, z = {};

			k.victim = mm_victim(st, mm);
			k.holder = tgid;
			k.waiter_tgid = 0;
			z.waiter_tgid = tgid;
			z.holder_tid = tid;
			z.ustack = -1;
			bpf_get_current_comm(&z.comm, sizeof(z.comm));
			s = get_or_init(&mmap_waits, &k, &z, CDROP_MMAP, TTOP_INS_MMAP_WAITS);
			if (s) {
				__sync_fetch_and_add(&s->holds, 1);
				mmap_ustack(ctx, s, s->holds, tid, tgid, 1);
				__sync_fetch_and_add(&s->hold_ns, now - op->acquired_ns);
				s->holder_tid = tid;
				s->last_ns = now;
			}
		}
	}
	if (st) {
		__u32 i = st->rel_idx++ % MM_HOLDS;

		st->last_rel_ns = now;
		if (i < MM_HOLDS) {
			st->rel[i].from = op && op->mm == key && op->acquired_ns ? op->acquired_ns : now;
			st->rel[i].to = now;
			st->rel[i].tid = tid;
			st->rel[i].tgid = tgid;
		}
	}
	if (op && op->mm == key) {
		op->acquired_ns = 0;
		op->mm = 0;
		/* The op is over (unless a start whose acquisition we never saw is left):
		 * free the slot for the next thread of this tid % MMAP_SLOTS. */
		if (!op->start_ns) {
			if (in_slot)
				__sync_val_compare_and_swap(&sl->own, tid | MMAP_BUSY, tid);
			else
				__sync_fetch_and_add(&sl->parked, -1);
		}
	}
	if (!st)
		return 0;
	if (write) {
		st->writer_tid = 0;
	} else if (st->readers > 0) {
		__sync_fetch_and_add(&st->readers, -1);
	}
	return 0;
}

SEC("raw_tp/mmap_lock_start_locking")
int ttop_mmap_start_locking(__u64 *ctx)
{
	FLOOR();
	if (mmap_tp_old())
		return mmap_start((struct mm_struct *)ctx[0], (bool)ctx[2]);
	return mmap_start((struct mm_struct *)ctx[0], (bool)ctx[1]);
}

SEC("raw_tp/mmap_lock_acquire_returned")
int ttop_mmap_acquire_returned(__u64 *ctx)
{
	FLOOR();
	if (mmap_tp_old())
		return mmap_acquired(ctx, (struct mm_struct *)ctx[0], (bool)ctx[2], (bool)ctx[3]);
	return mmap_acquired(ctx, (struct mm_struct *)ctx[0], (bool)ctx[1], (bool)ctx[2]);
}

SEC("raw_tp/mmap_lock_released")
int ttop_mmap_released(__u64 *ctx)
{
	FLOOR();
	if (mmap_tp_old())
		return mmap_released(ctx, (struct mm_struct *)ctx[0], (bool)ctx[2]);
	return mmap_released(ctx, (struct mm_struct *)ctx[0], (bool)ctx[1]);
}

#endif
