/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, after its maps, not a shared header):
 * the kernel stack of a lock wait, without a full unwind on every contention.
 *
 * bpf_get_stackid() costs 3-8 us per call on the VMs we measured (an ORC unwind from
 * the helper's own frame, cold tables), and contention_begin often runs inside the
 * lock's slow path with interrupts off: every walk lengthens the very wait it is
 * measuring. So each contention first takes a fingerprint of its call path: a hash of
 * the core-kernel text addresses found in the words above the program's frame, up to
 * the syscall entry (above it, do_syscall_64's randomised stack offset holds stale
 * words). Return addresses are such words, so two different paths give different
 * fingerprints; a stale text address left in a live frame only makes one path look
 * like several, which costs walks, never a wrong stack.
 *
 * A per-CPU cache maps fingerprint -> stack id. An entry answers only after a walk of
 * its path proved that the scan saw every frame (ttop_kscan_covers), and even then 1 use
 * in KCACHE_RECHECK is walked again (1 in KCACHE_RECHECK_LATE once KCACHE_EARLY such
 * walks agreed: at 1 in 16, the re-walks were half of a cache hit's average cost on a
 * fixed path). A fingerprint found naming two stacks is never trusted again and is
 * counted (kstack_stats[KSTACK_WRONG]). User space deletes from `kstacks` the ids no
 * live lock entry has referred to for two reads (so a long run does not fill it), and
 * bumps kstack_epoch as it does: an entry cached in an older epoch may hold a freed id,
 * and answers again only once a walk gave it the same id in this epoch.
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

#define KSCAN_WORDS 256   /* at most 2 KB of stack above the program's frame */
#define KSCAN_SKIP 4       /* frames that may lie below the scan's start */
#define KSCAN_UNSEEN 0xffff
#define KCACHE_SLOTS 4096 /* per CPU, direct-mapped by fingerprint */
#define KCACHE_RECHECK 16 /* a power of two: 1 use in 16 is walked again... */
#define KCACHE_RECHECK_LATE 256 /* ...and 1 in 256 once an entry passed KCACHE_EARLY of them */
#define KCACHE_EARLY 8

/* Cumulative, read by user space. */
#define KSTACK_WALKED 0
#define KSTACK_CACHED 1
#define KSTACK_WRONG 2
__u64 kstack_stats[3];

struct ttop_kscan {
	__u64 sp;
	__u64 n;    /* words read */
	__u64 stop; /* index of the syscall-entry word the scan stopped at; n if none */
	__u64 k;    /* ttop_kscan_covers' position in f (KSCAN_UNSEEN: none matched yet) */
	__u64 nf;   /* the frames in f */
	__u64 h;    /* the fingerprint being hashed */
	__u64 bad;  /* covers: stopped at a stale syscall-entry word */
	__u64 step0; /* the fingerprint scan's first bpf_loop step */
	__u64 w[KSCAN_WORDS];
	__u64 f[TTOP_STACK_DEPTH]; /* a learning walk's frames */
};

struct ttop_kcache_ent {
	__u64 fp;
	__s32 id;
	__u32 state; /* KCACHE_NEW, KCACHE_TRUSTED or KCACHE_NEVER */
	__u32 checks; /* re-walks that agreed since the entry was trusted */
	__u32 epoch; /* kstack_epoch when a walk last gave it its id */
};

/* Written by user space: bumped whenever it frees kstacks ids (see above). */
volatile __u32 kstack_epoch;
#define KCACHE_NEW 0
#define KCACHE_TRUSTED 1
#define KCACHE_NEVER 2

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

static __always_inline bool is_ktext(__u64 w)
{
	return in_span(w, ktext_lo, ktext_len);
}

static __always_inline bool is_syscall_entry(__u64 w)
{
	return in_span(w, syscall_entry_lo, syscall_entry_len);
}

/* The loops below run through bpf_loop (5.17+): the verifier checks the body once.
 * Written as plain bounded loops, the two scans took the verifier about 135 ms at
 * every start of ttop (its start-up target is 300 ms). Without bpf_loop every
 * contention is walked, as without the cache. */
static __always_inline bool have_bpf_loop(void)
{
	return bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop);
}

#define KSCAN_STRIDE 8 /* words per bpf_loop step of the fingerprint scan */
/* Bytes read first: most paths reach the syscall entry within them, and only the
 * others read (and hash) the rest of the window. A multiple of KSCAN_STRIDE words. */
#define KSCAN_FIRST 512

/* KSCAN_STRIDE words of the fingerprint scan: 1 stops the scan. Several words a step,
 * because most words are not text and a step costs a call (a mutex storm's
 * contention_begin hashes about a hundred words). */
static long kscan_hash_words(__u64 step, void *ctx)
{
	struct ttop_kscan *b = *(struct ttop_kscan **)ctx;
	__u64 base = (step + b->step0) * KSCAN_STRIDE, n = b->n, lo = ktext_lo, len = ktext_len;

	for (int j = 0; j < KSCAN_STRIDE; j++) {
		__u64 i = base + j, w;

		if (i >= KSCAN_WORDS || i >= n)
			return 1;
		w = b->w[i];
		if (!in_span(w, lo, len)) /* is_ktext, with the bounds loaded once a step */
			continue;
		b->h = (b->h ^ w ^ (i << 52)) * 0x100000001b3ULL;
		/* A return address into the syscall entry: above it are the entry's frame
		 * and the stale words of its random stack offset. */
		if (is_syscall_entry(w)) {
			b->stop = i;
			return 1;
		}
	}
	return 0;
}

/* The fingerprint of the current kernel call path (0 when none could be taken): each
 * core-kernel text word above the anchor, with its position. Fills *b for
 * ttop_kscan_covers(). sp is the address the scan starts at. */
/* A global function: the verifier checks it once, not once per call site and path. */
__noinline __u64 ttop_kscan_hash(__u64 sp, __u64 salt)
{
	__u64 avail, first, n, task_stack;
	struct ttop_kscan *b;
	__u32 zero = 0;
	bool deep;

	if (!have_bpf_loop())
		return 0;
	b = bpf_map_lookup_elem(&kscan, &zero);
	if (!b || !ktext_len)
		return 0;
	/* On an interrupt stack the walk goes on into whatever task was interrupted,
	 * which the scan cannot see: walk every time. */
	task_stack = (__u64)(unsigned long)BPF_CORE_READ(
		(struct task_struct *)bpf_get_current_task(), stack);
	if (sp - task_stack >= KSTACK_SIZE)
		return 0;
	avail = KSTACK_SIZE - (sp - task_stack);
	deep = avail > sizeof(b->w);
	if (deep)
		avail = sizeof(b->w);
	barrier_var(avail);
	if (avail > sizeof(b->w)) /* for the verifier */
		return 0;
	first = avail < KSCAN_FIRST ? avail : KSCAN_FIRST;
	barrier_var(first);
	if (first > KSCAN_FIRST) /* for the verifier */
		return 0;
	if (bpf_probe_read_kernel(b->w, first, (void *)sp))
		return 0;
	n = first / sizeof(__u64);
	b->n = n;
	b->stop = n;
	b->step0 = 0;
	b->h = 0xcbf29ce484222325ULL ^ salt;
	bpf_loop(KSCAN_FIRST / sizeof(__u64) / KSCAN_STRIDE, kscan_hash_words, &b, 0);
	if (b->stop >= n && avail > first) {
		__u64 rest = avail - first;

		barrier_var(rest);
		if (rest > sizeof(b->w) - KSCAN_FIRST) /* for the verifier */
			return 0;
		if (bpf_probe_read_kernel(&b->w[KSCAN_FIRST / sizeof(__u64)], rest,
					  (void *)(sp + KSCAN_FIRST)))
			return 0;
		n = avail / sizeof(__u64);
		b->n = n;
		b->stop = n;
		b->step0 = KSCAN_FIRST / sizeof(__u64) / KSCAN_STRIDE;
		bpf_loop((sizeof(b->w) - KSCAN_FIRST) / sizeof(__u64) / KSCAN_STRIDE,
			 kscan_hash_words, &b, 0);
	}
	/* Neither the syscall entry nor the top of the stack in sight: the frames
	 * beyond the window would go unseen. */
	if (deep && b->stop >= n)
		return 0;
	return b->h | 1;
}

/* One word of ttop_kscan_covers' check: 1 stops it. */
static long kscan_cover_word(__u64 i, void *ctx)
{
	struct ttop_kscan *b = *(struct ttop_kscan **)ctx;
	__u64 w, k;

	if (i >= KSCAN_WORDS || i >= b->n || i > b->stop)
		return 1;
	w = b->w[i];
	if (!is_ktext(w))
		return 0;
	k = b->k;
	if (k == KSCAN_UNSEEN) {
		for (int j = 0; j < KSCAN_SKIP; j++) {
			if (j < b->nf && w == b->f[j]) {
				b->k = j + 1;
				return 0;
			}
		}
	} else if (k < b->nf && w == b->f[k & (TTOP_STACK_DEPTH - 1)]) {
		b->k = k + 1;
		return 0;
	}
	if (i == b->stop) {
		b->bad = 1; /* stopped at a stale syscall-entry word */
		return 1;
	}
	return 0;
}

/* Whether the last scan saw this call path whole: a walk of it (nf frames in b->f) finds each
 * frame above the anchor among the scanned text words, in order, and, when the scan
 * stopped at a syscall-entry word, that word is one of the frames (and not a stale
 * copy in some frame's locals). Then every return address up to the stop is hashed at
 * its position, and since a function's frame layout at a given return address is
 * fixed, any path with the same fingerprint has the same frames: the cache may answer
 * for it. */
__noinline int ttop_kscan_covers(__u64 nf)
{
	struct ttop_kscan *b;
	__u32 zero = 0;

	if (!have_bpf_loop())
		return false;
	b = bpf_map_lookup_elem(&kscan, &zero);
	if (!b)
		return false;
	b->nf = nf;
	b->bad = 0;
	/* The frames below the anchor (this program, bpf_trace_run*) are not in the
	 * scan: the first match may be any of the first KSCAN_SKIP frames. */
	b->k = KSCAN_UNSEEN;
	bpf_loop(KSCAN_WORDS, kscan_cover_word, &b, 0);
	if (b->bad || b->k == KSCAN_UNSEEN)
		return false;
	/* Stopped at a frame, or scanned to the top with every frame found. */
	return b->stop < b->n || b->k >= b->nf;
}

/* The kernel stack id of the current contention (bpf_get_stackid's result). salt
 * tells the call sites in this program apart (their frames differ in the stack). */
static __always_inline long lock_stack_id(void *ctx, __u64 salt)
{
	__u32 zero = 0, slot, epoch = kstack_epoch;
	struct ttop_kscan *b = bpf_map_lookup_elem(&kscan, &zero);
	struct ttop_kcache_ent *e = NULL;
	__u64 fp = 0;
	long id, len;

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
	if (e && e->fp == fp && e->state == KCACHE_TRUSTED && e->epoch == epoch &&
	    (bpf_get_prandom_u32() &
	     (e->checks < KCACHE_EARLY ? KCACHE_RECHECK - 1 : KCACHE_RECHECK_LATE - 1))) {
		__sync_fetch_and_add(&kstack_stats[KSTACK_CACHED], 1);
		return e->id;
	}
	id = bpf_get_stackid(ctx, &kstacks, 0);
	__sync_fetch_and_add(&kstack_stats[KSTACK_WALKED], 1);
	if (!e || !b || id < 0)
		return id;
	if (e->fp != fp) {
		if (e->state == KCACHE_NEVER)
			return id; /* the slot keeps its verdict; this fingerprint walks */
		e->fp = fp;
		e->id = id;
		e->state = KCACHE_NEW;
		e->checks = 0;
		e->epoch = epoch;
	}
	if (e->state == KCACHE_NEVER)
		return id;
	if (e->id != id) {
		e->state = KCACHE_NEVER;
		__sync_fetch_and_add(&kstack_stats[KSTACK_WRONG], 1);
	} else if (e->state == KCACHE_TRUSTED) {
		/* Trusted in an older epoch: the walk gave the same id again, so it is
		 * stored (again) and may be answered from here on. */
		if (e->epoch != epoch)
			e->epoch = epoch;
		else
			e->checks++;
	} else if (e->state == KCACHE_NEW) {
		e->epoch = epoch;
		len = bpf_get_stack(ctx, b->f, sizeof(b->f), 0);
		e->state = len > 0 && ttop_kscan_covers((__u64)len / sizeof(__u64)) ?
				   KCACHE_TRUSTED : KCACHE_NEVER;
	}
	return id;
}

#endif
