/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): futex calls per (thread, futex
 * word), from the futex syscalls' tracepoints or the raw_syscalls fallback, with the
 * user stacks of contended waits. The futex maps, the call decoding and the stack
 * copies the scheduler side shares are in futex_shared.h. */
#ifndef TTOP_CONTENTION_FUTEX_H
#define TTOP_CONTENTION_FUTEX_H

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

/* Time for bookkeeping only: an entry's last_ns, which user space compares with windows
 * of a second and more. This is the CLOCK_MONOTONIC time of user space's last read,
 * which it writes here: no clocksource is read. On the VMs we measured,
 * bpf_ktime_get_ns() was the dearest helper of the futex probes (read_tsc), and
 * bpf_ktime_get_coarse_ns() is not allowed in tracing programs. */
volatile __u64 clock_ns;

/* CLOCK_MONOTONIC (bpf_ktime_get_ns's clock) when user space last attached the per-call
 * hooks: a call older than that is left from before a switch of the futex view (the
 * scheduler side's mark is sleeps_since_ns, futex_shared.h). */
volatile __u64 calls_since_ns;

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
#define PEND_MAX 16

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
	__u64 g = contention_gen;

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
	FLOOR();
	long id = ctx->nr;
	__u64 a3 = id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ? ctx->args[3] : 0;

	return futex_enter(id, ctx->args[0], ctx->args[1], a3, args_at_exit());
}

SEC("tracepoint/syscalls/sys_exit_futex")
int ttop_futex_exit(struct ttop_sys_exit_rec *ctx)
{
	FLOOR();
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
	FLOOR();
	/* Filter first. */
	if (!is_futex_nr(id))
		return 0;
	return futex_enter(id, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
			   id == NR_FUTEX_WAIT || id == NR_FUTEX_WAKE ?
				   PT_REGS_PARM4_CORE_SYSCALL(regs) : 0,
			   false);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(ttop_sys_exit, struct pt_regs *regs, long ret)
{
	FLOOR();
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
	FLOOR();
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
