/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the contention object and the scheduler object share, so that futex waits that
 * slept are counted by the scheduler's own sched_switch program (one program and one
 * clock read per context switch, where there were two): the per-thread state, the
 * futex entries and their user stacks, the futex wait histogram, and the knobs and
 * counters in .data.fshare. Both objects include this header; user space creates these
 * maps once, with the contention object (bpf_object__prepare), and hands them to the
 * scheduler object (bpf_map__reuse_fd) before it loads (src/collect/futex_share.rs).
 * The scheduler object creates none of them when it does not count futex waits. */
#ifndef TTOP_FUTEX_SHARED_H
#define TTOP_FUTEX_SHARED_H

#include "ustack_read.h"

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

struct ttop_futex_call {
	__u64 uaddr;
	__u64 start_ns;
	__u32 kind;
	__u32 flags;
};

struct ttop_lock_wait {
	__u64 lock;
	__u64 start_ns;
	__u32 flags;
	__s32 kstack;
	__u32 is_mmap;
	__u32 pad;
};

/* A thread's futex calls on one word not yet added to its `futexes` entry (see
 * futex_account in contention_futex.h): the counts of struct ttop_futex_stats that a
 * call which did not sleep moves. */
struct ttop_futex_pend {
	__u64 uaddr;
	__u64 gen;          /* contention_gen when the first of them was made */
	__u64 woken;
	__u32 calls;        /* 0: nothing pending */
	__u32 waits;
	__u32 eagain;
	__u32 wakes;
	__u32 flags;
	__u32 pad;
};

/* What one thread has in flight: its futex call and the counts of its last calls, and
 * its sleeping kernel-lock wait (a sleeping thread waits for one lock at a time). Task storage (5.12+) is found through
 * the task itself, without hashing; it is allocated zeroed on the thread's first use
 * and freed with the thread, so nothing is preallocated or evicted. A sleeping wait
 * used to be an LRU hash entry inserted at contention_begin and deleted at
 * contention_end; here it is two plain stores (under an mmap_lock storm, begin
 * 2.9 -> 2.7 us and end 750 -> 450 ns per wait).
 *
 * mmap_lock operations are not kept there: under thread churn each new thread would
 * allocate its storage on its first mmap_lock call and free it when it dies, which
 * measured no cheaper than an LRU insert. They live in mmap_slots (contention_mmap.h). */
/* A futex wait the thread is asleep in, seen by the scheduler probes
 * (contention_sleep.h): its word, when it switched out, whether a futex wake woke it
 * and the process of the thread that made that wake. */
struct ttop_futex_sleep {
	__u64 uaddr;
	__u64 start_ns;     /* 0: not asleep in a futex wait */
	__u64 early_uaddr;  /* woken by a futex wake while still switching out, waiting on this */
	/* Futex wakes that found it asleep in a futex wait or about to be: added to (atomic)
	 * by the wakers, on other CPUs. A wait ended by a wake when it moved since the last
	 * wait ended (wakes_seen). No flag the waker sets and the sleeper resets: the two
	 * race on 2 CPUs, and a mutex storm lost 3-4% of its wakes so. */
	__u32 wakes;
	__u32 wakes_seen;
	__u32 waker;        /* the last waker's tgid */
	__u32 pad;
};

struct ttop_thread_state {
	struct ttop_futex_call futex;
	struct ttop_futex_pend pend;
	struct ttop_lock_wait sleep;
	struct ttop_futex_sleep fsleep;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ttop_thread_state);
} thread_state SEC(".maps");

/* Set at load, in each object: TTOP_USTACKS=off keeps no futex user stacks (the
 * benchmark's baseline for what keeping them costs). */
const volatile __u32 ustacks_off = 0;

/* One section, one map, shared by both objects. */
#define FSHARE SEC(".data.fshare")
/* Written by user space: 1 while the scheduler object's switch program counts the futex
 * waits that slept (the contention object's own switch program is then not attached);
 * 0 while the futex view hooks every call instead. */
volatile __u32 futex_sleeps_on FSHARE;
/* Written by user space: 1 while the ceiling on ttop's own cost (src/model/shed.rs) has
 * turned the futex user stack walks off; entries keep the stack they had. */
volatile __u32 ustacks_shed FSHARE;
/* The contention maxima's tick generation (max_gen_into), bumped by user space after
 * each read. */
volatile __u64 contention_gen FSHARE = 1;
/* CLOCK_MONOTONIC (bpf_ktime_get_ns's clock) when user space last turned the scheduler
 * side of the futex waits on: a sleep that began before it is left from before a switch
 * of the futex view. */
volatile __u64 sleeps_since_ns FSHARE;
/* Read by user space. */
__u64 cdrops[CDROP__COUNT] FSHARE;
/* Futex user stacks kept: [0] frame-pointer walks taken, [1] stack copies taken, [2] ns
 * spent walking and copying them. */
__u64 ustack_stats[3] FSHARE;
/* New (thread, word) entries in `futexes` (TTOP_INS_FUTEXES, see `inserts`). */
__u64 futex_inserts FSHARE;

static __always_inline void cdrop(int which)
{
	if (which >= 0 && which < CDROP__COUNT)
		__sync_fetch_and_add(&cdrops[which], 1);
}

/* A maximum per tick generation: user space bumps contention_gen after each read. Racy by
 * design (two CPUs may both write): the loser's value is off by one event at most. */
static __always_inline void max_gen_into(__u64 *slot, __u64 *gen, __u64 v)
{
	__u64 g = contention_gen;

	if (*gen != g) {
		*gen = g;
		*slot = v;
	} else if (v > *slot) {
		*slot = v;
	}
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_futex_hist);
} futex_hist SEC(".maps");

/* Count a futex wait that slept `dur` ns in this CPU's histogram: floor(log2) without
 * branches (log2.h), a few instructions on the path that already has the duration. */
static __always_inline void futex_hist_add(__u64 dur)
{
	__u32 zero = 0;
	struct ttop_futex_hist *h = bpf_map_lookup_elem(&futex_hist, &zero);
	__u64 e;

	if (!h)
		return;
	/* The index goes through this CPU's own value and back: loaded from a map it is
	 * a plain scalar to the verifier. Computed in registers, older verifiers (6.1 and
	 * before) followed the log2's branch LLVM makes (x > 2^32) into an impossible
	 * range at the bound check below (umin 40 > umax 38) and rejected the access. */
	*(volatile __u64 *)&h->scratch = log2_u64(dur);
	e = *(volatile __u64 *)&h->scratch;
	if (e >= TTOP_FUTEX_HIST_SLOTS)
		e = TTOP_FUTEX_HIST_SLOTS - 1;
	h->slots[e]++;
	h->sum_ns += dur;
}

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

/* Every stack map here has a spill map beside it. A stack map keeps a stack in the bucket
 * its hash picks and refuses one whose bucket holds another (-EEXIST: reusing the bucket
 * would rename the rows that hold the old id), so one call path that drew a taken bucket
 * went unnamed for as long as the other stack lived. Such a stack is stored in the spill
 * map instead, its id offset by TTOP_STACKS (every main map has at most that many
 * buckets); the spill map holds only refused stacks, so it refuses one again only when
 * two of those few share a bucket. User space reads and frees ids in both. */
#define stackid_or_spill(ctx, map, spill, flags)                                        \
	({                                                                               \
		long __id = bpf_get_stackid(ctx, map, flags);                            \
		if (__id == -17 /* EEXIST */) {                                          \
			long __s = bpf_get_stackid(ctx, spill, flags);                   \
			if (__s >= 0)                                                    \
				__id = __s + TTOP_STACKS;                                \
		}                                                                        \
		__id;                                                                    \
	})

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_STACKS_SPILL);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} ustacks_spill SEC(".maps");

/* Copies of user stacks by (process, futex word), the key's tid 0 (see struct
 * ttop_ustack_copy): the word's latest copy, replaced with each kept walk; user space
 * weighs the stacks the copies unwind to by the contended waits of the intervals they
 * were latest, so the word's most frequent stack is shown. User space deletes the copies
 * of words with no entry left (idle past its read window), so a long-lived process that
 * moves to new words (locks in new heap objects) does not fill the map: keyed by word
 * and frame-pointer stack id and kept while the process lived, the copies of idle words
 * stayed, and once the map was full new words got none. Allocated on use. */
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

/* The mmap_lock rows' copies (bpf/contention_mmap.h), here because copy_ustack writes
 * either map. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MMAP_USTACK_COPIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ttop_futex_key);
	__type(value, struct ttop_ustack_copy);
} mmap_ustack_copies SEC(".maps");

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

/* Whether the syscall-exit tracepoint can read the call's arguments itself (its saved
 * user registers: compat.h): then only a wait needs its entry remembered. */
static __always_inline bool args_at_exit(void)
{
	return have_user_regs();
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

static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#else
	return -1; /* unknown layout: fall back to the per-thread lookup */
#endif
}

/* Keep the registers and the top of the user stack with each kept futex stack walk (an
 * entry's first contended wait, then one in 64), replacing the word's previous copy (key
 * tid `id`: 0 for a futex word, the thread for an mmap_lock row): user space unwinds each
 * new copy with the DWARF unwinder and weighs the stacks it finds, so call sites whose
 * frame-pointer walks are one stack id are still told apart. The element is replaced whole (never written in place), so a reader sees one
 * copy or the other, never a mix. The top may be nearer than TTOP_USTACK_BYTES (a main
 * thread's stack ends at the top of its mapping): then a smaller read is tried. */
/* A global function: verified once, whatever calls it, and verified even where only dead
 * code calls it (the scheduler object when it shares nothing: user space still creates
 * the maps it uses there, src/collect/futex_share.rs). */
__noinline int copy_ustack(__u32 tgid, __u64 uaddr, __u32 id, bool mmap_row)
{
	struct ttop_futex_key k = { .tid = id, .tgid = tgid, .uaddr = uaddr };
	struct ttop_ustack_copy *c;
	struct pt_regs *regs;
	__u32 zero = 0;
	__u64 sp;

	if (!args_at_exit())
		return 0;
	c = bpf_map_lookup_elem(&ustack_scratch, &zero);
	if (!c)
		return 0;
	regs = task_user_regs(current_task());
	if (!regs)
		return 0;
	c->ip = PT_REGS_IP_CORE(regs);
	sp = PT_REGS_SP_CORE(regs);
	c->sp = sp;
	c->bp = PT_REGS_FP_CORE(regs);
	c->tgid = tgid;
	_Static_assert(TTOP_USTACK_BYTES == 2 * TTOP_PAGE, "read_ustack_top copies 8 KB");
	c->len = read_ustack_top(c->bytes, sp);
	if (!c->len)
		return 0;
	if (mmap_row ? !bpf_map_update_elem(&mmap_ustack_copies, &k, c, BPF_ANY)
		     : !bpf_map_update_elem(&ustack_copies, &k, c, BPF_ANY))
		__sync_fetch_and_add(&ustack_stats[1], 1);
	return 0;
}

/* The (thread, word) entry of the current thread, created zeroed if missing. */
static __always_inline struct ttop_futex_stats *futex_entry(__u64 pid_tgid, __u64 uaddr)
{
	struct ttop_futex_key key;
	struct ttop_futex_stats *s;

	key.tid = (__u32)pid_tgid;
	key.tgid = pid_tgid >> 32;
	key.uaddr = uaddr;
	s = bpf_map_lookup_elem(&futexes, &key);
	if (!s) {
		struct ttop_futex_stats z = { .ustack = -1 };

		if (!bpf_map_update_elem(&futexes, &key, &z, BPF_NOEXIST))
			__sync_fetch_and_add(&futex_inserts, 1);
		s = bpf_map_lookup_elem(&futexes, &key);
		if (!s)
			cdrop(CDROP_FUTEXES);
	}
	return s;
}

#endif
