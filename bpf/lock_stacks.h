/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, after its maps, not a shared header):
 * the kernel stack of a lock wait, without a full unwind on every contention.
 *
 * bpf_get_stackid() costs 3-8 us per call on the VMs we measured (an ORC unwind from
 * the helper's own frame, cold tables), and contention_begin often runs inside the
 * lock's slow path with interrupts off: every walk lengthens the very wait it is
 * measuring. So each contention first takes a key of its call site: the lock's flags
 * and the first KEY_TEXT core-kernel text addresses (with their positions) in the
 * words just above the program's frame: the return addresses into the locking code
 * and into its callers. Two waits with the same key were taken by the same locking
 * code from the same caller; a stale text word in a frame only makes one call site
 * look like several, which costs walks, never a wrong caller.
 *
 * A per-CPU cache maps key -> stack id. A key new to the cache is walked; after that
 * 1 use in KCACHE_RECHECK is walked again (a sample), and the entry takes that walk's
 * id. Each re-walk that finds the cached stack again halves the rate of the next ones,
 * down to 1 use in KCACHE_RECHECK << KCACHE_CONF_MAX; one that finds another stack
 * sets it back to 1 in KCACHE_RECHECK. Under a lock storm the keys hold still, and
 * the re-walks at 1 in 32 were most of the walks: a million contentions a second
 * walked 30k times a second at several us each. Frames deeper than the key (the
 * caller's callers) may differ between two waits of one key: the cache names the path
 * of the last walk for them, and the re-walks that found another stack are counted
 * (KSTACK_WRONG). The callers
 * shown (the first frame outside the locking code) come out as a walk of every event
 * names them (tests/kernel_contention.rs). Issue 36 measured the earlier cache, which
 * hashed every text word up to the syscall entry: under the storms a stale word deep
 * in the frames made most fingerprints new, and 2-3 of 3 contentions walked.
 * User space deletes from `kstacks` the ids no live lock entry has referred to for two
 * reads (so a long run does not fill it), and bumps kstack_epoch as it does: an entry
 * cached in an older epoch may hold a freed id, and is walked again first.
 */
#ifndef TTOP_LOCK_STACKS_H
#define TTOP_LOCK_STACKS_H

/* Core kernel text and do_syscall_64, from kallsyms by user space; 0 = unknown, in
 * which case every contention is walked. */
const volatile __u64 ktext_lo;
const volatile __u64 ktext_len;
const volatile __u64 syscall_entry_lo;
const volatile __u64 syscall_entry_len;
/* Kernel task stacks are this size (x86-64 and arm64 without KASAN; a bigger stack
 * only means fewer cache hits): a scan never reads past the end of the stack. */
#define KSTACK_SIZE 16384

#define KSCAN_WORDS 64   /* 512 bytes of stack above the program's frame */
#define KEY_TEXT 6       /* text words in a key: the locking code and its callers */
#define KEY_MIN 4        /* fewer than this in the window (and no syscall entry): walk */
#define KCACHE_SLOTS 4096 /* per CPU, direct-mapped by key */
#define KCACHE_RECHECK 32 /* a power of two: 1 use in 32 is walked again, at first */
#define KCACHE_CONF_MAX 5 /* then down to 1 use in 32 << 5 = 1,024 */

/* Cumulative, one row per CPU (a cache line each: no two CPUs write one line, and a
 * plain add does; contention_begin, their only writer, does not nest on a CPU), summed
 * by user space. */
#define KSTACK_WALKED 0
#define KSTACK_CACHED 1
#define KSTACK_WRONG 2
#define KSTACK_SPILLED 3 /* walks stored in kstacks_spill (their kstacks bucket was taken) */
#define KSTACK_SHED 4 /* contentions left without a stack by the ceiling (below) */
#define KSTACK_NS 5 /* what lock_stack_id took, ns: 1 call in KSTACK_CLOCK_EVERY clocked */
#define KSTACK_ROW 8
__u64 kstack_stats[TTOP_MAX_CPUS][KSTACK_ROW] __attribute__((aligned(64)));

static __always_inline void kstat_add(int which, __u64 v)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (cpu < TTOP_MAX_CPUS && which < KSTACK_ROW)
		kstack_stats[cpu][which] += v;
}

/* The ceiling on ttop's own cost (src/model/shed.rs), written by user space: 0 keeps a
 * stack for every contention as above; 1..KSHED_OFF-1 keeps one for 1 contention in
 * 2^kstack_shed, picked at random, and the others skip the key scan and the walk and are
 * counted under the stack id TTOP_KSTACK_SHED (their waits and times still exact);
 * KSHED_OFF and above keeps none. */
volatile __u32 kstack_shed;
#define KSHED_OFF 16
/* The stack id of a contention the ceiling left without a stack (src/collect/contention
 * names it): below bpf_get_stackid's -errno values. */
#define TTOP_KSTACK_SHED (-4096)

struct ttop_kscan {
	__u64 sp;
	__u64 n;    /* words read */
	__u64 stop; /* 1 once the key is complete (KEY_TEXT words or the syscall entry) */
	__u64 texts; /* text words hashed */
	__u64 h;    /* the key being hashed */
	__u64 w[KSCAN_WORDS];
};

struct ttop_kcache_ent {
	__u64 fp;
	__s32 id;
	__u32 epoch; /* kstack_epoch when a walk last gave it its id */
	__u32 conf;  /* re-walks in a row that found `id` again (up to KCACHE_CONF_MAX) */
	__u32 pad;
};

/* Written by user space: bumped whenever it frees kstacks ids (see above). */
volatile __u32 kstack_epoch;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttop_kscan);
} kscan SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct ttop_kcache_ent);
} kcache SEC(".maps");

static __always_inline bool in_span(__u64 w, __u64 lo, __u64 len)
{
	return w - lo < len;
}

static __always_inline bool is_syscall_entry(__u64 w)
{
	return in_span(w, syscall_entry_lo, syscall_entry_len);
}

/* The loop below runs through bpf_loop (5.17+): the verifier checks the body once.
 * Without bpf_loop every contention is walked, as without the cache. */
static __always_inline bool have_bpf_loop(void)
{
	return bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop);
}

#define KSCAN_STRIDE 8 /* words per bpf_loop step of the key scan */

/* KSCAN_STRIDE words of the key scan: 1 stops the scan. Several words a step,
 * because most words are not text and a step costs a call. */
static long kscan_hash_words(__u64 step, void *ctx)
{
	struct ttop_kscan *b = *(struct ttop_kscan **)ctx;
	__u64 base, n = b->n, lo = ktext_lo, len = ktext_len;

	if (step >= KSCAN_WORDS / KSCAN_STRIDE) /* for the verifier */
		return 1;
	base = step * KSCAN_STRIDE;
	barrier_var(base);
	for (int j = 0; j < KSCAN_STRIDE; j++) {
		__u64 i = base + j, w;

		if (i >= KSCAN_WORDS || i >= n)
			return 1;
		w = b->w[i];
		if (!in_span(w, lo, len)) /* core kernel text, bounds loaded once a step */
			continue;
		b->h = (b->h ^ w ^ (i << 52)) * 0x100000001b3ULL;
		b->texts++;
		/* KEY_TEXT frames, or a return address into the syscall entry: above it
		 * are the entry's frame and the stale words of its random stack offset. */
		if (b->texts >= KEY_TEXT || is_syscall_entry(w)) {
			b->stop = 1;
			return 1;
		}
	}
	return 0;
}

/* The key of the current lock call site (0 when none could be taken): `salt` (the
 * lock's flags and the program's call site) and the first KEY_TEXT core-kernel text
 * words above sp, with their positions. */
/* A global function: the verifier checks it once, not once per call site and path. */
__noinline __u64 ttop_kscan_hash(__u64 sp, __u64 salt)
{
	__u64 task_stack, size = KSCAN_WORDS * 8;
	struct ttop_kscan *b;
	__u32 zero = 0;

	if (!have_bpf_loop())
		return 0;
	b = bpf_map_lookup_elem(&kscan, &zero);
	if (!b || !ktext_len)
		return 0;
	/* On the task's stack, never read past its end: a contention less than the window
	 * below the top (a system call a few frames deep: under thread churn a quarter of
	 * the walks were these) reads what there is, and its key ends at the system call
	 * entry. On an interrupt stack the read fails near its end, and that contention is
	 * walked. */
	task_stack = (__u64)(unsigned long)BPF_CORE_READ(
		(struct task_struct *)bpf_get_current_task(), stack);
	if (sp - task_stack < KSTACK_SIZE && KSTACK_SIZE - (sp - task_stack) < size) {
		/* Whole words, below the window's size (a mask the verifier can follow). */
		size = (KSTACK_SIZE - (sp - task_stack)) & (KSCAN_WORDS * 8 - 8);
		if (!size || bpf_probe_read_kernel(b->w, size, (void *)sp))
			return 0;
	} else if (bpf_probe_read_kernel(b->w, sizeof(b->w), (void *)sp)) {
		return 0;
	}
	b->n = size / 8;
	b->stop = 0;
	b->texts = 0;
	b->h = 0xcbf29ce484222325ULL ^ salt;
	bpf_loop(KSCAN_WORDS / KSCAN_STRIDE, kscan_hash_words, &b, 0);
	/* Too few frames in sight to be sure the caller is among them. */
	if (!b->stop && b->texts < KEY_MIN)
		return 0;
	return b->h | 1;
}

/* The kernel stack id of the current contention (bpf_get_stackid's result), for
 * lock_stack_id below once the ceiling has kept it. salt tells the call sites in this
 * program apart (their frames differ in the stack) and carries the lock's flags. */
static __always_inline long lock_stack_id_now(void *ctx, __u64 salt)
{
	__u32 zero = 0, slot, epoch = kstack_epoch;
	struct ttop_kscan *b = bpf_map_lookup_elem(&kscan, &zero);
	struct ttop_kcache_ent *e = NULL;
	__u64 fp = 0;
	long id;

	if (b) {
		/* A raw tracepoint's context is the argument array in bpf_trace_run*()'s
		 * frame, on the kernel stack; above it are that frame and the traced call
		 * path. (The program's own frame can be elsewhere: kernels since 6.13 give
		 * big ones a private per-CPU stack.) Its address becomes a number by way of
		 * a map value, which the verifier allows a privileged program (ttop runs as
		 * root). */
		b->sp = (__u64)(unsigned long)ctx;
		fp = ttop_kscan_hash(*(volatile __u64 *)&b->sp, salt);
	}

	if (fp) {
		slot = (__u32)(fp >> 20) & (KCACHE_SLOTS - 1);
		e = bpf_map_lookup_elem(&kcache, &slot);
	}
	if (e && e->fp == fp && e->epoch == epoch) {
		__u32 conf = e->conf < KCACHE_CONF_MAX ? e->conf : KCACHE_CONF_MAX;

		if (bpf_get_prandom_u32() & ((KCACHE_RECHECK << conf) - 1)) {
			kstat_add(KSTACK_CACHED, 1);
			return e->id;
		}
	}
	id = stackid_or_spill(ctx, &kstacks, &kstacks_spill, 0);
	kstat_add(KSTACK_WALKED, 1);
	if (id >= TTOP_STACKS)
		kstat_add(KSTACK_SPILLED, 1);
	if (!e || id < 0)
		return id;
	if (e->fp == fp && e->epoch == epoch) {
		/* A sampled re-walk of a current entry: the same path, or another one below
		 * the key. */
		if (e->id != id) {
			kstat_add(KSTACK_WRONG, 1);
			e->conf = 0;
		} else if (e->conf < KCACHE_CONF_MAX) {
			e->conf++;
		}
	} else {
		e->conf = 0;
	}
	e->fp = fp;
	e->id = id;
	e->epoch = epoch;
	return id;
}

/* The ceiling judges kernel stacks by what they cost (the key scan, the cache and the
 * walks of the contentions that keep one), not by contention_begin's whole run time,
 * most of which is the counting that cannot be shed: 1 of them in KSTACK_CLOCK_EVERY,
 * picked at random, is clocked and counts KSTACK_CLOCK_EVERY times in
 * KSTACK_NS. Two clock reads on 1 call in 16 cost a few ns a contention. */
#define KSTACK_CLOCK_EVERY 16
static __always_inline long lock_stack_id(void *ctx, __u64 salt)
{
	__u32 shed = kstack_shed;
	__u64 t0;
	long id;

	if (shed && (shed >= KSHED_OFF ||
		     (bpf_get_prandom_u32() & ((1u << (shed & (KSHED_OFF - 1))) - 1)))) {
		kstat_add(KSTACK_SHED, 1);
		return TTOP_KSTACK_SHED;
	}
	if (bpf_get_prandom_u32() & (KSTACK_CLOCK_EVERY - 1))
		return lock_stack_id_now(ctx, salt);
	t0 = bpf_ktime_get_ns();
	id = lock_stack_id_now(ctx, salt);
	kstat_add(KSTACK_NS, (bpf_ktime_get_ns() - t0) * KSTACK_CLOCK_EVERY);
	return id;
}

#endif
