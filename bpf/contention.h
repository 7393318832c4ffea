/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): what the futex, kernel-lock
 * and mmap_lock probes share: constants, the per-thread state in task storage, the
 * counters user space reads, and small helpers. */
#ifndef TTOP_CONTENTION_H
#define TTOP_CONTENTION_H

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
	__u64 gen;          /* tick_gen when the first of them was made */
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

/* Before 5.11 there is no task storage (nor bpf_get_current_task_btf): the same state is
 * kept in this hash by thread id, and deleted when the thread exits
 * (ttop_futex_thread_exit). User space sets state_by_tid, sizes this map (one entry
 * otherwise) and leaves thread_state uncreated; the task-storage code is then never
 * reached, so the verifier of an old kernel never sees it. LRU: a thread whose exit was
 * missed cannot fill it. */
const volatile __u32 state_by_tid;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_thread_state);
} thread_state_h SEC(".maps");

static const struct ttop_thread_state thread_state_zero;

/* This thread's state; created (zeroed) if `create`. NULL only if the allocation
 * failed, or under recursion (a task-storage call already running on this CPU). */
static __always_inline struct ttop_thread_state *my_state(bool create)
{
	struct ttop_thread_state *ts;
	__u32 tid;

	if (!state_by_tid)
		return bpf_task_storage_get(&thread_state, bpf_get_current_task_btf(), 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	tid = (__u32)bpf_get_current_pid_tgid();
	ts = bpf_map_lookup_elem(&thread_state_h, &tid);
	if (ts || !create)
		return ts;
	bpf_map_update_elem(&thread_state_h, &tid, &thread_state_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&thread_state_h, &tid);
}

/* Written by user space: 1 when lock:contention_begin is attached, so mmap_lock waits
 * are exactly the rwsem slow-path entries; 0 falls back to a duration threshold. */
volatile __u32 lock_tp_ok;
volatile __u64 tick_gen = 1;

/* Set at load: TTOP_USTACKS=off keeps no futex user stacks (the benchmark's baseline for
 * what keeping them costs). */
const volatile __u32 ustacks_off = 0;
/* Written by user space: 1 while the ceiling on ttop's own cost (src/model/shed.rs) has
 * turned the futex user stack walks off; entries keep the stack they had. */
volatile __u32 ustacks_shed;

/* Read by user space. */
__u64 cdrops[CDROP__COUNT];
/* Futex user stacks kept: [0] frame-pointer walks taken, [1] stack copies taken, [2] ns
 * spent walking and copying them. */
__u64 ustack_stats[3];
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

#endif
