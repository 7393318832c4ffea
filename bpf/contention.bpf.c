// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Contention for ttop: futex waits and wakes per (process, futex word), kernel lock
 * waits (lock:contention_begin/end) per (lock, kernel stack, process), and mmap_lock
 * waits per (victim process, holder process, waiting thread).
 *
 * Raw tracepoints with CO-RE reads only, except the futex syscall tracepoints, which
 * need tracefs and have a raw_syscalls fallback. Each program is attached on its own
 * by user space: a kernel without the lock or mmap_lock tracepoints loses those
 * views, not the futex one.
 *
 * Pairs of events (enter/exit, begin/end, start/acquired/released) are matched through
 * per-thread entries that the next "begin" simply overwrites, so a lost event costs one
 * measurement and never leaves a thread "waiting" for ever.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ttop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#if defined(__TARGET_ARCH_x86)
#define NR_FUTEX 202
#else
#define NR_FUTEX 98 /* asm-generic: arm64, riscv */
#endif
#define NR_FUTEX_WAITV 449
#define NR_FUTEX_WAKE 454
#define NR_FUTEX_WAIT 455
#define NR_FUTEX_REQUEUE 456

/* include/uapi/linux/futex.h */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI 12
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_CMD_MASK (~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

#define EINTR 4
#define EAGAIN 11
#define ETIMEDOUT 110
#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516

#define KIND_OTHER 0
#define KIND_WAIT 1
#define KIND_WAKE 2

/* Without lock:contention_begin, an mmap_lock acquisition this slow counts as a wait. */
#define MMAP_SLOW_NS 10000ULL
/* A per-thread lock entry older than this is stale (its end event was lost). */
#define LOCK_STALE_NS 60000000000ULL
#define SPIN_SLOTS 4

/* ---- futex ---- */

struct ttop_futex_call {
	__u64 uaddr;
	__u64 start_ns;
	__u32 kind;
	__u32 flags;
};

/* Per (thread, futex word): the only map the futex exit probe writes. Allocated on use
 * (most machines have a few hundred entries); user space deletes idle ones. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_FUTEXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ttop_futex_key);
	__type(value, struct ttop_futex_stats);
} futexes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_STACKS);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} ustacks SEC(".maps");

/* Copies of user stacks by (process, futex word), tid 0 (see struct ttop_ustack_copy):
 * not by stack id, since the frame-pointer walks of two call sites that die at the
 * same libc instruction are one stack id. Allocated on use. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_USTACK_COPIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ttop_futex_key);
	__type(value, struct ttop_ustack_copy);
} ustack_copies SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_ustack_copy);
} ustack_scratch SEC(".maps");

/* ---- kernel locks ---- */

struct ttop_lock_wait {
	__u64 lock;
	__u64 start_ns;
	__u32 flags;
	__s32 kstack;
	__u32 is_mmap;
	__u32 pad;
};

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

#include "lock_stacks.h"

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

/* What one thread has in flight: its futex call, and its sleeping kernel-lock wait (a
 * sleeping thread waits for one lock at a time). Task storage (5.12+) is found through
 * the task itself, without hashing; it is allocated zeroed on the thread's first use
 * and freed with the thread, so nothing is preallocated or evicted. A sleeping wait
 * used to be an LRU hash entry inserted at contention_begin and deleted at
 * contention_end; here it is two plain stores (under an mmap_lock storm, begin
 * 2.9 -> 2.7 us and end 750 -> 450 ns per wait).
 *
 * mmap_lock operations are not kept there: under thread churn each new thread would
 * allocate its storage on its first mmap_lock call and free it when it dies, which
 * measured no cheaper than an LRU insert. They live in mmap_slots below. */
struct ttop_thread_state {
	struct ttop_futex_call futex;
	struct ttop_lock_wait sleep;
};

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

struct ttop_mmap_slot {
	__u64 own;
	__u32 parked;
	__u32 pad;
	struct ttop_mmap_op op;
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
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ttop_thread_state);
} thread_state SEC(".maps");

/* This thread's state; created (zeroed) if `create`. NULL only if the allocation
 * failed, or under recursion (a task-storage call already running on this CPU). */
static __always_inline struct ttop_thread_state *my_state(bool create)
{
	return bpf_task_storage_get(&thread_state, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

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

/* Written by user space: 1 when lock:contention_begin is attached, so mmap_lock waits
 * are exactly the rwsem slow-path entries; 0 falls back to a duration threshold. */
volatile __u32 lock_tp_ok;
volatile __u64 tick_gen = 1;

/* Read by user space. */
__u64 cdrops[CDROP__COUNT];
/* New entries per walked map (TTOP_INS_*): while a count stands still, user space looks
 * up the keys it already knows instead of walking every bucket. */
__u64 inserts[TTOP_INS_CONTENTION];

static __always_inline void cdrop(int which)
{
	if (which >= 0 && which < CDROP__COUNT)
		__sync_fetch_and_add(&cdrops[which], 1);
}

/* A maximum per tick generation: user space bumps tick_gen after each read. Racy by
 * design (two CPUs may both write): the loser's value is off by one event at most. */
static __always_inline void max_gen_into(__u64 *slot, __u64 *gen, __u64 v)
{
	__u64 g = tick_gen;

	if (*gen != g) {
		*gen = g;
		*slot = v;
	} else if (v > *slot) {
		*slot = v;
	}
}

/* Look up a hash entry, creating it zeroed (or from `init`) if missing. */
static __always_inline void *get_or_init(void *map, const void *key, const void *init, int drop_idx,
					 int ins_idx)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	if (!bpf_map_update_elem(map, key, init, BPF_NOEXIST) && ins_idx >= 0 &&
	    ins_idx < TTOP_INS_CONTENTION)
		__sync_fetch_and_add(&inserts[ins_idx], 1);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		cdrop(drop_idx);
	return v;
}

/* ---------------------------------------------------------------- futex */

static __always_inline __u32 futex_kind(__u32 cmd, __u32 *flags)
{
	switch (cmd) {
	case FUTEX_WAIT:
		return KIND_WAIT;
	case FUTEX_WAIT_BITSET:
		*flags |= TTOP_FUTEX_BITSET;
		return KIND_WAIT;
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_WAIT_REQUEUE_PI:
		*flags |= TTOP_FUTEX_PI;
		return KIND_WAIT;
	case FUTEX_WAKE:
	case FUTEX_WAKE_OP:
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
		return KIND_WAKE;
	case FUTEX_WAKE_BITSET:
		*flags |= TTOP_FUTEX_BITSET;
		return KIND_WAKE;
	case FUTEX_UNLOCK_PI:
	case FUTEX_CMP_REQUEUE_PI:
		*flags |= TTOP_FUTEX_PI;
		return KIND_WAKE;
	}
	return KIND_OTHER;
}

static __always_inline bool is_futex_nr(long id)
{
	return id == NR_FUTEX || id == NR_FUTEX_WAITV || id == NR_FUTEX_WAIT ||
	       id == NR_FUTEX_WAKE || id == NR_FUTEX_REQUEUE;
}

/* Time for bookkeeping only: an entry's last_ns, which user space compares with windows
 * of a second and more. This is the CLOCK_MONOTONIC time of user space's last read,
 * which it writes here: no clocksource is read. On the VMs we measured,
 * bpf_ktime_get_ns() was the dearest helper of the futex probes (read_tsc), and
 * bpf_ktime_get_coarse_ns() is not allowed in tracing programs. */
volatile __u64 clock_ns;

/* Whether the syscall-exit tracepoint can read the call's arguments itself
 * (bpf_task_pt_regs, 5.15+): then only a wait needs its entry remembered. */
static __always_inline bool args_at_exit(void)
{
	return bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs);
}

/* A futex call from its syscall number and a0, a1 and a3, its first, second and fourth
 * arguments. kind KIND_OTHER with uaddr 0: not a futex call. */
static __always_inline void futex_decode(long id, __u64 a0, __u64 a1, __u64 a3,
					 struct ttop_futex_call *c)
{
	if (id == NR_FUTEX) {
		__u32 op = (__u32)a1;

		c->uaddr = a0;
		if (!(op & FUTEX_PRIVATE_FLAG))
			c->flags |= TTOP_FUTEX_SHARED;
		c->kind = futex_kind(op & FUTEX_CMD_MASK, &c->flags);
	} else if (id == NR_FUTEX_WAITV || id == NR_FUTEX_REQUEUE) {
		/* struct futex_waitv { u64 val; u64 uaddr; u32 flags; u32 reserved; }[]:
		 * account the call to the first word of the vector. */
		struct { __u64 val; __u64 uaddr; __u32 flags; __u32 rsvd; } w = {};

		bpf_probe_read_user(&w, sizeof(w), (void *)a0);
		c->uaddr = w.uaddr;
		if (!(w.flags & FUTEX_PRIVATE_FLAG))
			c->flags |= TTOP_FUTEX_SHARED;
		if (id == NR_FUTEX_WAITV) {
			c->flags |= TTOP_FUTEX_WAITV;
			c->kind = KIND_WAIT;
		} else {
			c->flags |= TTOP_FUTEX_FUTEX2;
			c->kind = KIND_WAKE;
		}
	} else if (id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE) {
		/* futex_wait(uaddr, val, mask, flags, ...), futex_wake(uaddr, mask, nr, flags) */
		__u32 fl = (__u32)a3;

		c->uaddr = a0;
		c->flags |= TTOP_FUTEX_FUTEX2;
		if (!(fl & FUTEX_PRIVATE_FLAG))
			c->flags |= TTOP_FUTEX_SHARED;
		c->kind = id == NR_FUTEX_WAIT ? KIND_WAIT : KIND_WAKE;
	}
}

/* The entry of a futex call, whichever hook saw it. Only a wait is remembered when
 * `lean` (the exit hook reads the arguments itself): a wake or any other call needs
 * nothing from its entry. Under a mutex storm about half the calls are wakes. */
static __always_inline int futex_enter(long id, __u64 a0, __u64 a1, __u64 a3, bool lean)
{
	struct ttop_futex_call c = {};
	struct ttop_thread_state *ts;

	if (!is_futex_nr(id))
		return 0;
	futex_decode(id, a0, a1, a3, &c);
	if (lean && c.kind != KIND_WAIT)
		return 0;
	/* Only a wait's duration is used; anything else only needs to be marked pending. */
	c.start_ns = c.kind == KIND_WAIT ? bpf_ktime_get_ns() : 1;
	ts = my_state(true);
	/* A stale entry (a lost exit) is simply overwritten. */
	if (ts)
		ts->futex = c;
	return 0;
}

/* Keep the registers and the top of the user stack of a kept futex stack, the first time
 * one is kept for the word (the DWARF unwinder in user space reads it). The stack's top
 * may be nearer than TTOP_USTACK_BYTES (a main thread's stack ends at the top of its
 * mapping): then a smaller read is tried. */
static __noinline void copy_ustack(__u32 tgid, __u64 uaddr)
{
	struct ttop_futex_key k = { .tid = 0, .tgid = tgid, .uaddr = uaddr };
	struct ttop_ustack_copy *c;
	struct pt_regs *regs;
	__u32 zero = 0;
	__u64 sp;

	if (!args_at_exit() || bpf_map_lookup_elem(&ustack_copies, &k))
		return;
	c = bpf_map_lookup_elem(&ustack_scratch, &zero);
	if (!c)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	c->ip = PT_REGS_IP_CORE(regs);
	sp = PT_REGS_SP_CORE(regs);
	c->sp = sp;
	c->bp = PT_REGS_FP_CORE(regs);
	c->tgid = tgid;
	if (!bpf_probe_read_user(c->bytes, TTOP_USTACK_BYTES, (void *)sp))
		c->len = TTOP_USTACK_BYTES;
	else if (!bpf_probe_read_user(c->bytes, 4096, (void *)sp))
		c->len = 4096;
	else if (!bpf_probe_read_user(c->bytes, 1024, (void *)sp))
		c->len = 1024;
	else
		c->len = 0;
	bpf_map_update_elem(&ustack_copies, &k, c, BPF_NOEXIST);
}

/* Account one finished futex call to its (thread, word) entry. Only this thread writes
 * that entry, so plain stores suffice; user space derives the per-word, per-thread and
 * per-process figures from these entries. */
static __always_inline int futex_account(void *ctx, const struct ttop_futex_call *c, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ttop_futex_key key;
	struct ttop_futex_stats *s;

	key.tid = (__u32)pid_tgid;
	key.tgid = pid_tgid >> 32;
	key.uaddr = c->uaddr;
	s = bpf_map_lookup_elem(&futexes, &key);
	if (!s) {
		struct ttop_futex_stats z = { .ustack = -1 };

		if (!bpf_map_update_elem(&futexes, &key, &z, BPF_NOEXIST))
			__sync_fetch_and_add(&inserts[TTOP_INS_FUTEXES], 1);
		s = bpf_map_lookup_elem(&futexes, &key);
		if (!s) {
			cdrop(CDROP_FUTEXES);
			return 0;
		}
	}
	s->calls++;
	s->flags |= c->flags;
	if (c->kind == KIND_WAIT) {
		s->waits++;
		/* 0: woken (or the PI lock taken); ETIMEDOUT, EINTR, ERESTART*: it slept
		 * until the timeout or a signal. EAGAIN: the word had already changed, it
		 * never slept. Other errors (EFAULT, EINVAL, EDEADLK, ...) are neither. */
		if (ret == -EAGAIN) {
			s->eagain++;
		} else if (ret == 0 || ret == -ETIMEDOUT || ret == -EINTR ||
			   (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK)) {
			__u64 now = bpf_ktime_get_ns();
			__u64 dur = now > c->start_ns ? now - c->start_ns : 0;

			s->last_ns = now;
			s->contended++;
			s->wait_ns += dur;
			max_gen_into(&s->max_wait_ns, &s->max_gen, dur);
			/* A user stack walk per contended wait is too much under a storm:
			 * take the first one, then one in 64. */
			if (s->ustack < 0 || (s->contended & 63) == 0) {
				long sid = bpf_get_stackid(ctx, &ustacks, BPF_F_USER_STACK);

				if (sid >= 0) {
					s->ustack = sid;
					copy_ustack(key.tgid, key.uaddr);
				}
				else if (s->ustack < 0)
					cdrop(CDROP_STACKS);
			}
			return 0;
		}
	} else if (c->kind == KIND_WAKE) {
		s->wakes++;
		if (ret > 0)
			s->woken += ret;
	}
	s->last_ns = clock_ns;
	return 0;
}

/* The exit of a futex call whose entry was remembered in the thread's state. */
static __always_inline int futex_exit(void *ctx, long ret)
{
	struct ttop_thread_state *ts = my_state(false);
	struct ttop_futex_call c;

	if (!ts)
		return 0;
	c = ts->futex;
	/* start_ns 0: this thread's last call was already accounted. */
	if (!c.start_ns)
		return 0;
	/* Consumed: the slot stays with the thread for its next call. */
	ts->futex.start_ns = 0;
	return futex_account(ctx, &c, ret);
}

/* Preferred hooks: the futex syscalls' own tracepoints (syscalls:sys_enter_futex, ...,
 * one program attached to each that exists), which run only for futex calls. They need
 * tracefs; user space loads either these or the raw_syscalls pair below, never both.
 * Their records are the kernel's struct syscall_trace_enter / syscall_trace_exit. */
SEC("tracepoint/syscalls/sys_enter_futex")
int ttop_futex_enter(struct syscall_trace_enter *ctx)
{
	long id = ctx->nr;
	__u64 a3 = id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? ctx->args[3] : 0;

	return futex_enter(id, ctx->args[0], ctx->args[1], a3, args_at_exit());
}

SEC("tracepoint/syscalls/sys_exit_futex")
int ttop_futex_exit(struct syscall_trace_exit *ctx)
{
	struct ttop_futex_call c = {};
	struct pt_regs *regs;
	long id = ctx->nr;

	/* A wait (and a futex_waitv, which is one) takes its start from its entry. */
	if (!args_at_exit() || id == NR_FUTEX_WAITV)
		return futex_exit(ctx, ctx->ret);
	/* The syscall's registers still hold its arguments here (the return value goes
	 * to ax on x86-64, to x0 on arm64, whose first argument is kept in orig_x0). */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	futex_decode(id, PT_REGS_PARM1_SYSCALL(regs), PT_REGS_PARM2_SYSCALL(regs),
		     id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? PT_REGS_PARM4_SYSCALL(regs) : 0,
		     &c);
	if (c.kind == KIND_WAIT)
		return futex_exit(ctx, ctx->ret);
	return futex_account(ctx, &c, ctx->ret);
}

/* Fallback without tracefs: every syscall on the machine comes through these. */
SEC("raw_tp/sys_enter")
int BPF_PROG(ttop_sys_enter, struct pt_regs *regs, long id)
{
	/* Filter first. */
	if (!is_futex_nr(id))
		return 0;
	return futex_enter(id, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
			   id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ?
				   PT_REGS_PARM4_CORE_SYSCALL(regs) : 0,
			   false);
}

static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#else
	return -1; /* unknown layout: fall back to the per-thread lookup */
#endif
}

SEC("raw_tp/sys_exit")
int BPF_PROG(ttop_sys_exit, struct pt_regs *regs, long ret)
{
	long id = syscall_nr(regs);

	if (id >= 0 && !is_futex_nr(id))
		return 0;
	return futex_exit(ctx, ret);
}

/* ---------------------------------------------------------------- mmap_lock helpers */

/* Before 5.8 the field was called mmap_sem. */
struct mm_struct___old {
	struct rw_semaphore mmap_sem;
} __attribute__((preserve_access_index));

static __always_inline __u64 mmap_lock_addr(struct mm_struct *mm)
{
	__u64 off;

	if (bpf_core_field_exists(struct mm_struct, mmap_lock))
		off = bpf_core_field_offset(struct mm_struct, mmap_lock);
	else
		off = bpf_core_field_offset(struct mm_struct___old, mmap_sem);
	return (__u64)(unsigned long)mm + off;
}

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

/* ---------------------------------------------------------------- kernel locks */

static __always_inline void lock_account(struct ttop_lock_wait *w, __u64 now)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ttop_lock_key key = {};
	struct ttop_lock_stats *s, z = {};
	__u64 dur = now > w->start_ns ? now - w->start_ns : 0;

	key.lock = w->lock;
	key.kstack = w->kstack;
	key.tgid = pid_tgid >> 32;
	key.flags = w->flags;
	key.is_mmap = w->is_mmap;
	s = bpf_map_lookup_elem(&locks, &key);
	if (!s) {
		bpf_get_current_comm(&z.comm, sizeof(z.comm));
		if (!bpf_map_update_elem(&locks, &key, &z, BPF_NOEXIST))
			__sync_fetch_and_add(&inserts[TTOP_INS_LOCKS], 1);
		s = bpf_map_lookup_elem(&locks, &key);
		if (!s) {
			cdrop(CDROP_LOCKS);
			return;
		}
	}
	__sync_fetch_and_add(&s->contended, 1);
	__sync_fetch_and_add(&s->wait_ns, dur);
	max_gen_into(&s->max_wait_ns, &s->max_gen, dur);
	s->last_ns = now;
	s->last_tid = (__u32)pid_tgid;
}

static __always_inline bool is_spin(__u32 flags)
{
	return (flags & TTOP_LCB_F_SPIN) && !(flags & TTOP_LCB_F_MUTEX);
}

SEC("raw_tp/contention_begin")
int BPF_PROG(ttop_contention_begin, void *lock, unsigned int flags)
{
	__u64 now = bpf_ktime_get_ns();
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
		kstack = lock_stack_id(ctx, 1);
		if (kstack < 0)
			cdrop(CDROP_STACKS);
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
		nw.start_ns = now;
		nw.flags = flags;
		nw.kstack = lock_stack_id(ctx, 2);
		if (nw.kstack < 0)
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
		*w = nw;
	}
	return 0;
}

SEC("raw_tp/contention_end")
int BPF_PROG(ttop_contention_end, void *lock, int ret)
{
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

static __always_inline void mmap_add_wait(struct ttop_mm_state *st, struct ttop_mmap_op *op, __u32 tid,
					  __u32 tgid, __u64 dur, struct mm_struct *mm)
{
	struct ttop_mmap_key key = {};
	struct ttop_mmap_stats *s, z = {};

	key.victim = st ? mm_victim(st, mm) : 0;
	key.holder = op->holder_tgid;
	key.waiter_tid = tid;
	z.waiter_tgid = tgid;
	z.holder_tid = op->holder_tid;
	bpf_get_current_comm(&z.comm, sizeof(z.comm));
	s = get_or_init(&mmap_waits, &key, &z, CDROP_MMAP, TTOP_INS_MMAP_WAITS);
	if (!s)
		return;
	__sync_fetch_and_add(&s->waits, 1);
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

static __always_inline int mmap_acquired(struct mm_struct *mm, bool write, bool success)
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
			mmap_add_wait(st, op, tid, tgid, dur, mm);
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

static __always_inline int mmap_released(struct mm_struct *mm, bool write)
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
			k.waiter_tid = 0;
			z.waiter_tgid = tgid;
			z.holder_tid = tid;
			bpf_get_current_comm(&z.comm, sizeof(z.comm));
			s = get_or_init(&mmap_waits, &k, &z, CDROP_MMAP, TTOP_INS_MMAP_WAITS);
			if (s) {
				__sync_fetch_and_add(&s->holds, 1);
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
	if (mmap_tp_old())
		return mmap_start((struct mm_struct *)ctx[0], (bool)ctx[2]);
	return mmap_start((struct mm_struct *)ctx[0], (bool)ctx[1]);
}

SEC("raw_tp/mmap_lock_acquire_returned")
int ttop_mmap_acquire_returned(__u64 *ctx)
{
	if (mmap_tp_old())
		return mmap_acquired((struct mm_struct *)ctx[0], (bool)ctx[2], (bool)ctx[3]);
	return mmap_acquired((struct mm_struct *)ctx[0], (bool)ctx[1], (bool)ctx[2]);
}

SEC("raw_tp/mmap_lock_released")
int ttop_mmap_released(__u64 *ctx)
{
	if (mmap_tp_old())
		return mmap_released((struct mm_struct *)ctx[0], (bool)ctx[2]);
	return mmap_released((struct mm_struct *)ctx[0], (bool)ctx[1]);
}
