/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): futex calls per (thread, futex
 * word), from the futex syscalls' tracepoints or the raw_syscalls fallback, with the
 * user stacks of contended waits. */
#ifndef TTOP_CONTENTION_FUTEX_H
#define TTOP_CONTENTION_FUTEX_H

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

/* The mmap_lock rows' own stack walks and copies (bpf/contention_mmap.h), kept apart
 * from the futex words': a thread-churning process has a new waiter thread on its
 * mmap_lock every few microseconds, and their walks and copies filled the maps the futex
 * rows need (seed 000's stack-cache waiters lost their stacks). Copies of threads with no
 * row left are deleted by user space each tick; until then a full map only costs new
 * mmap_lock rows their copy. (Not LRU: a small LRU map evicts long before it is full.) */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_MMAP_STACKS);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} mmap_ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, TTOP_STACKS_SPILL);
	__type(key, __u32);
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} mmap_ustacks_spill SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MMAP_USTACK_COPIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ttop_futex_key);
	__type(value, struct ttop_ustack_copy);
} mmap_ustack_copies SEC(".maps");

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

/* CLOCK_MONOTONIC (bpf_ktime_get_ns's clock) when user space last attached the per-call
 * hooks, and the scheduler ones (contention_sleep.h): state older than that is left
 * from before a switch of the futex view. */
volatile __u64 calls_since_ns;
volatile __u64 sleeps_since_ns;

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

/* Keep the registers and the top of the user stack with each kept futex stack walk (an
 * entry's first contended wait, then one in 64), replacing the word's previous copy (key
 * tid `id`: 0 for a futex word, the thread for an mmap_lock row): user space unwinds each
 * new copy with the DWARF unwinder and weighs the stacks it finds, so call sites whose
 * frame-pointer walks are one stack id are still told apart. The element is replaced whole (never written in place), so a reader sees one
 * copy or the other, never a mix. The top may be nearer than TTOP_USTACK_BYTES (a main
 * thread's stack ends at the top of its mapping): then a smaller read is tried. */
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
	if (!bpf_probe_read_user(c->bytes, TTOP_USTACK_BYTES, (void *)sp))
		c->len = TTOP_USTACK_BYTES;
	else if (!bpf_probe_read_user(c->bytes, 4096, (void *)sp))
		c->len = 4096;
	else if (!bpf_probe_read_user(c->bytes, 1024, (void *)sp))
		c->len = 1024;
	else
		c->len = 0;
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
			__sync_fetch_and_add(&inserts[TTOP_INS_FUTEXES], 1);
		s = bpf_map_lookup_elem(&futexes, &key);
		if (!s)
			cdrop(CDROP_FUTEXES);
	}
	return s;
}

/* Add a thread's pending counts to its entry for their word, and clear them. */
static __always_inline void pend_into(struct ttop_futex_pend *p, struct ttop_futex_stats *s)
{
	s->calls += p->calls;
	s->waits += p->waits;
	s->eagain += p->eagain;
	s->wakes += p->wakes;
	s->woken += p->woken;
	s->flags |= p->flags;
	s->last_ns = clock_ns;
	p->calls = 0;
	p->waits = 0;
	p->eagain = 0;
	p->wakes = 0;
	p->woken = 0;
	p->flags = 0;
}

static __noinline int pend_flush(struct ttop_futex_pend *p)
{
	struct ttop_futex_stats *s;

	if (!p || !p->calls)
		return 0;
	s = futex_entry(bpf_get_current_pid_tgid(), p->uaddr);
	if (s)
		pend_into(p, s);
	else
		p->calls = 0; /* counted in cdrops[CDROP_FUTEXES] */
	return 0;
}

/* Count one finished call in `p` (the counts a call moves, whether it slept or not). */
static __always_inline void pend_count(struct ttop_futex_pend *p, const struct ttop_futex_call *c,
				       long ret)
{
	p->calls++;
	p->flags |= c->flags;
	if (c->kind == KIND_WAIT) {
		p->waits++;
		if (ret == -EAGAIN)
			p->eagain++;
	} else if (c->kind == KIND_WAKE) {
		p->wakes++;
		if (ret > 0)
			p->woken += ret;
	}
}

/* Pending counts are added to the entry at the latest after this many calls; the
 * figures of one read lack at most this many of each thread's latest calls, which the
 * next read has. */
#define PEND_MAX 64

/* A call that did not sleep (a wake, an EAGAIN, any other call): counted in the
 * thread's task storage, while the thread stays on one word, instead of in the hash
 * map. Under a mutex storm almost every call is one, made by one thread after another
 * on one word; a hash lookup per call was most of the probes' cost. The counts move to
 * the entry when the word changes, a wait sleeps, the tick generation changes (user
 * space read the map), PEND_MAX calls have gathered, or the thread exits
 * (ttop_futex_thread_exit). */
static __always_inline void pend_add(struct ttop_thread_state *ts,
				     const struct ttop_futex_call *c, long ret)
{
	struct ttop_futex_pend *p = &ts->pend;
	__u64 g = tick_gen;

	if (p->calls && (p->uaddr != c->uaddr || p->gen != g))
		pend_flush(p);
	if (!p->calls) {
		p->uaddr = c->uaddr;
		p->gen = g;
	}
	pend_count(p, c, ret);
	if (p->calls >= PEND_MAX)
		pend_flush(p);
}

/* 0: woken (or the PI lock taken); ETIMEDOUT, EINTR, ERESTART*: it slept until the
 * timeout or a signal. EAGAIN: the word had already changed, it never slept. Other
 * errors (EFAULT, EINVAL, EDEADLK, ...) are neither. */
static __always_inline bool wait_slept(long ret)
{
	return ret == 0 || ret == -ETIMEDOUT || ret == -EINTR ||
	       (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK);
}

/* Account one finished futex call. Only this thread writes its (thread, word) entries,
 * so plain stores suffice; user space derives the per-word, per-thread and per-process
 * figures from these entries. `ts` is the thread's state (NULL if it has none: then
 * the call goes to the entry directly). */
static __always_inline int futex_account(void *ctx, struct ttop_thread_state *ts,
					 const struct ttop_futex_call *c, long ret)
{
	struct ttop_futex_pend one = {};
	__u64 pid_tgid, now, dur;
	struct ttop_futex_stats *s;
	struct ttop_futex_pend *p;
	bool slept = c->kind == KIND_WAIT && wait_slept(ret);

	if (!slept && ts) {
		pend_add(ts, c, ret);
		return 0;
	}
	/* A wait that slept (or a thread without state): its entry now, with the thread's
	 * pending counts for the same word. */
	pid_tgid = bpf_get_current_pid_tgid();
	p = ts ? &ts->pend : NULL;
	if (p && p->calls && p->uaddr != c->uaddr)
		pend_flush(p);
	s = futex_entry(pid_tgid, c->uaddr);
	if (!s)
		return 0;
	if (p && p->calls)
		pend_into(p, s);
	pend_count(&one, c, ret);
	pend_into(&one, s);
	if (!slept)
		return 0;
	now = bpf_ktime_get_ns();
	dur = now > c->start_ns ? now - c->start_ns : 0;
	s->last_ns = now;
	s->contended++;
	s->wait_ns += dur;
	futex_hist_add(dur);
	max_gen_into(&s->max_wait_ns, &s->max_gen, dur);
	/* A user stack walk per contended wait is too much under a storm: take the first
	 * one, then one in 64. A stack the map refused (-2) waits for the next one in 64
	 * too: retried at every wait, a full map cost a walk per wait. */
	if (!ustacks_off && !ustacks_shed && (s->ustack == -1 || (s->contended & 63) == 0)) {
		long sid = stackid_or_spill(ctx, &ustacks, &ustacks_spill, BPF_F_USER_STACK);

		if (sid >= 0) {
			s->ustack = sid;
			__sync_fetch_and_add(&ustack_stats[0], 1);
			copy_ustack(pid_tgid >> 32, c->uaddr, 0, false);
		} else if (s->ustack < 0) {
			s->ustack = -2;
			cdrop(CDROP_STACKS);
		}
		__sync_fetch_and_add(&ustack_stats[2], bpf_ktime_get_ns() - now);
	}
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
	/* A wait entered before these hooks were last attached (the futex view switched
	 * them off and on): this exit is of a later call whose entry was not seen. */
	if (c.kind == KIND_WAIT && c.start_ns < calls_since_ns)
		return 0;
	return futex_account(ctx, ts, &c, ret);
}

/* The records of syscalls:sys_enter_* and sys_exit_*: the kernel's struct
 * syscall_trace_enter / syscall_trace_exit, whose layout is the tracefs format (an ABI:
 * the 8-byte common header, `int __syscall_nr` at 8, the arguments or `long ret` at 16).
 * Declared here rather than taken from vmlinux.h so that they carry no CO-RE
 * relocation: each relocated type costs libbpf a search of the kernel's whole BTF at
 * start-up (dropping these two saved ~0.5 ms of `perf stat` task-clock, within its noise). */
struct ttop_sys_enter_rec {
	__u64 common;
	int nr;
	unsigned long args[6];
};

struct ttop_sys_exit_rec {
	__u64 common;
	int nr;
	long ret;
};

_Static_assert(__builtin_offsetof(struct ttop_sys_enter_rec, args) == 16, "tracefs format");
_Static_assert(__builtin_offsetof(struct ttop_sys_exit_rec, ret) == 16, "tracefs format");

/* Preferred hooks: the futex syscalls' own tracepoints (syscalls:sys_enter_futex, ...,
 * one program attached to each that exists), which run only for futex calls. They need
 * tracefs; user space loads either these or the raw_syscalls pair below, never both. */
SEC("tracepoint/syscalls/sys_enter_futex")
int ttop_futex_enter(struct ttop_sys_enter_rec *ctx)
{
	long id = ctx->nr;
	__u64 a3 = id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? ctx->args[3] : 0;

	return futex_enter(id, ctx->args[0], ctx->args[1], a3, args_at_exit());
}

SEC("tracepoint/syscalls/sys_exit_futex")
int ttop_futex_exit(struct ttop_sys_exit_rec *ctx)
{
	struct ttop_futex_call c = {};
	struct pt_regs *regs;
	long id = ctx->nr;

	/* A wait (and a futex_waitv, which is one) takes its start from its entry. */
	if (!args_at_exit() || id == NR_FUTEX_WAITV)
		return futex_exit(ctx, ctx->ret);
	/* The syscall's registers still hold its arguments here (the return value goes
	 * to ax on x86-64, to x0 on arm64, whose first argument is kept in orig_x0). */
	regs = task_user_regs(current_task());
	if (!regs)
		return futex_exit(ctx, ctx->ret);
	futex_decode(id, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
		     id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? PT_REGS_PARM4_CORE_SYSCALL(regs) : 0,
		     &c);
	if (c.kind == KIND_WAIT)
		return futex_exit(ctx, ctx->ret);
	return futex_account(ctx, my_state(true), &c, ctx->ret);
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

/* A thread's last pending counts, when it exits (do_exit runs in the exiting thread,
 * whose task storage is freed only later). */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(ttop_futex_thread_exit, struct task_struct *task)
{
	struct ttop_thread_state *ts = my_state(false);
	__u32 tid;

	if (ts)
		pend_flush(&ts->pend);
	if (state_by_tid) {
		tid = (__u32)bpf_get_current_pid_tgid();
		bpf_map_delete_elem(&thread_state_h, &tid);
	}
	return 0;
}

#endif
