// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * On-CPU profile for ttop: a perf_event program on every CPU's cpu-clock at a fixed
 * frequency (99 Hz by default, as perf record -F 99). Each sample of a watched process
 * (or of any process but the idle task, when none is named) sends its thread, kernel
 * stack id and user registers plus the top of its user stack to user space, which
 * unwinds the copy from .eh_frame (a libc without frame pointers would end an in-kernel
 * frame-pointer walk at its first frame, and in-kernel counting by stack id would merge
 * call sites that die at one libc instruction), then counts stacks.
 *
 * Off-CPU mode (watched processes only) uses sched_switch instead: a watched thread
 * leaving a CPU sends the same record, with when and why it left; coming back sends
 * a small one, and user space weights the stack by the time in between, as offcputime
 * does. When switch-outs come faster than the reader can unwind, only some keep their
 * stack (off_per_window); the others send a small record, so the time is still exact
 * per process and reason and the kept stacks share it out. The user stack is copied at the switch-out, the only moment it is readable
 * (the thread is current, in its own address space) and unchanged until it returns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ttop.h"
#include "floor.h"
#include "compat.h"
#include "ustack_read.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Names the ring buffer records in the object's BTF, so the skeleton generates them for
 * user space (a ring buffer record is not a map's value type). */
struct ttop_prof_sample *prof_sample_type __attribute__((unused));
struct ttop_prof_oncpu *prof_oncpu_type __attribute__((unused));
struct ttop_prof_off *prof_off_type __attribute__((unused));

/* Only the processes in prof_pids are sampled when set (user space sets it when the
 * dashboard's filter comes or goes: not a constant). */
__u32 filter_pids = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} prof_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TTOP_STACK_DEPTH * sizeof(__u64));
} prof_kstacks SEC(".maps");

/* 2 CPUs x 99 Hz x 8.3 KB is 1.6 MB/s; user space drains it every 100 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} prof_samples SEC(".maps");

/* Samples lost: [0] ring buffer full, [1] kernel stack not stored. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} prof_lost SEC(".maps");

/* Off-CPU mode: watched switch-outs [0] seen and [1] sent with their stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} prof_waits SEC(".maps");

/* Off-CPU mode: the stacks one CPU may send per TTOP_OFF_WINDOW_NS (user space sets it
 * from what it can unwind; 0: every wait). Above it, waits keep their stack at random,
 * one in N, N from the CPU's rate in its last window; the others send only who, why and
 * when (24 bytes, not 8 KB), so every wait's time is still counted exactly per process
 * and reason, and only how it splits between stacks is estimated from the kept ones,
 * while the copies stay within what the reader drains instead of filling the ring
 * buffer and losing whole windows. */
__u32 off_per_window = 0;

struct off_rate {
	__u64 win_start;
	__u32 count;
	__u32 every;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct off_rate);
} off_rates SEC(".maps");

/* One more in slot `i` of a per-CPU counter array. */
static __always_inline void bump(void *counters, __u32 i)
{
	__u64 *n = bpf_map_lookup_elem(counters, &i);

	if (n)
		(*n)++;
}

static __always_inline void count_wait(__u32 which)
{
	bump(&prof_waits, which);
}

/* Whether a watched switch-out at `now` keeps its stack: 0 if not, else the N of its
 * CPU's one in N (1: every one). */
static __always_inline __u32 keep_stack(__u64 now)
{
	__u32 zero = 0, cap = off_per_window;
	struct off_rate *r = bpf_map_lookup_elem(&off_rates, &zero);
	__u64 elapsed, rate;

	count_wait(0);
	if (!r || !cap)
		return 1;
	elapsed = now - r->win_start;
	if (elapsed >= TTOP_OFF_WINDOW_NS) {
		/* The last window's count, per nominal window (an idle stretch dilutes it). */
		rate = r->count;
		if (elapsed >= 2 * TTOP_OFF_WINDOW_NS)
			rate = rate * TTOP_OFF_WINDOW_NS / elapsed;
		r->every = rate > cap ? (__u32)((rate + cap - 1) / cap) : 1;
		r->count = 0;
		r->win_start = now;
	}
	r->count++;
	if (r->every > 1 && bpf_get_prandom_u32() % r->every)
		return 0;
	/* A reader that fell behind (starved by the threads it watches) finds the ring
	 * buffer half full: no more 8 KB copies until it catches up, only the waits'
	 * small records, so the waits' time is never what gets lost. */
	if (bpf_ringbuf_query(&prof_samples, BPF_RB_AVAIL_DATA) >
	    bpf_ringbuf_query(&prof_samples, BPF_RB_RING_SIZE) / 2)
		return 0;
	return r->every > 1 ? r->every : 1;
}

static __always_inline void lost(__u32 why)
{
	bump(&prof_lost, why);
}

/* The sample interrupted user code (no kernel stack to take). */
static __always_inline bool in_user(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* The context is read 8 bytes at a time: cs is a u16 in newer pt_regs layouts,
	 * its slot (the user_regs_struct ABI) 8 bytes. */
	__u64 cs = *(volatile __u64 *)((void *)ctx + __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3;
#else
	return false; /* asked anyway: a user-mode sample gets no kernel stack id */
#endif
}

/* The user registers where the current task entered the kernel, and the top of its
 * user stack; nothing for a kernel thread. */
static __always_inline void copy_user_stack(struct ttop_prof_sample *s, struct task_struct *task)
{
	struct pt_regs *regs;
	__u64 sp;

	s->ip = s->sp = s->bp = 0;
	s->len = 0;
	if (!BPF_CORE_READ(task, mm))
		return;
	regs = task_user_regs(task);
	if (!regs)
		return;
	s->ip = PT_REGS_IP_CORE(regs);
	sp = PT_REGS_SP_CORE(regs);
	s->sp = sp;
	s->bp = PT_REGS_FP_CORE(regs);
	_Static_assert(TTOP_PROF_STACK_BYTES == 2 * TTOP_PAGE, "read_ustack_top copies 8 KB");
	s->len = read_ustack_top(s->bytes, sp);
}

SEC("perf_event")
int ttop_profile(struct bpf_perf_event_data *ctx)
{
	FLOOR();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ttop_prof_sample *s;

	if (tid == 0)
		return 0; /* the idle task */
	if (filter_pids && !bpf_map_lookup_elem(&prof_pids, &tgid))
		return 0;
	s = bpf_ringbuf_reserve(&prof_samples, sizeof(*s), 0);
	if (!s) {
		lost(0);
		return 0;
	}
	s->tgid = tgid;
	s->tid = tid;
	s->kind = TTOP_PROF_ON_CPU;
	s->reason = 0;
	s->keep_one_in = 1;
	s->pad = 0;
	s->ts = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->kstack = -1;
	if (!in_user(ctx)) {
		s->kstack = bpf_get_stackid(ctx, &prof_kstacks, 0);
		if (s->kstack < 0)
			lost(1);
	}
	copy_user_stack(s, current_task());
	/* No wake-up: user space drains the buffer every 100 ms. A wake-up per sample
	 * is an irq_work and a reschedule on the sampled CPU, whose return to user mode
	 * the next samples then caught (15% of them in irqentry_exit_to_user_mode). */
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	return 0;
}

#define TTOP_TASK_RUNNING 0x0
#define TTOP_TASK_UNINTERRUPTIBLE 0x2
#define TTOP_TASK_DEAD 0x80

/* The system call a task is in, from its saved user registers (-1: none). */
static __always_inline long syscall_nr(struct task_struct *task)
{
	struct pt_regs *regs = task_user_regs(task);

	if (!regs)
		return -1;
#if defined(__TARGET_ARCH_x86)
	return (long)BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return (long)BPF_CORE_READ((struct user_pt_regs *)regs, regs[8]);
#else
	return -1;
#endif
}

#if defined(__TARGET_ARCH_x86)
#define TTOP_NR_FUTEX 202
#define TTOP_NR_FUTEX_WAITV 449
#define TTOP_NR_NANOSLEEP 35
#define TTOP_NR_CLOCK_NANOSLEEP 230
#elif defined(__TARGET_ARCH_arm64)
#define TTOP_NR_FUTEX 98
#define TTOP_NR_FUTEX_WAITV 449
#define TTOP_NR_NANOSLEEP 101
#define TTOP_NR_CLOCK_NANOSLEEP 115
#else
#define TTOP_NR_FUTEX -2
#define TTOP_NR_FUTEX_WAITV -2
#define TTOP_NR_NANOSLEEP -2
#define TTOP_NR_CLOCK_NANOSLEEP -2
#endif

/* Why `prev` leaves its CPU. */
static __always_inline __u32 off_reason(bool preempt, struct task_struct *prev,
					unsigned int state)
{
	long nr;

	if (preempt || state == TTOP_TASK_RUNNING)
		return TTOP_OFF_RUNNABLE;
	if (BPF_CORE_READ_BITFIELD(prev, in_iowait))
		return TTOP_OFF_IO;
	nr = syscall_nr(prev);
	if (nr == TTOP_NR_FUTEX || nr == TTOP_NR_FUTEX_WAITV)
		return TTOP_OFF_FUTEX;
	if (nr == TTOP_NR_NANOSLEEP || nr == TTOP_NR_CLOCK_NANOSLEEP)
		return TTOP_OFF_SLEEP;
	if (state & TTOP_TASK_UNINTERRUPTIBLE)
		return TTOP_OFF_BLOCKED;
	return TTOP_OFF_WAIT;
}

/* Off-CPU mode (loaded only then, with filter_pids set: user space refuses the whole
 * machine, a stack copy per context switch of every process). */
static __always_inline int offcpu(void *ctx, bool preempt, struct task_struct *prev,
				  struct task_struct *next, unsigned int prev_state)
{
	__u32 tgid = prev->tgid, tid = prev->pid, one_in;
	__u64 now = bpf_ktime_get_ns();
	struct ttop_prof_sample *s;

	if (tid && !(prev_state & TTOP_TASK_DEAD) && bpf_map_lookup_elem(&prof_pids, &tgid)) {
		/* A stack kept (or none, when the ring buffer has no room for one): the wait
		 * is sent either way, with its stack or without. */
		one_in = keep_stack(now);
		s = one_in ? bpf_ringbuf_reserve(&prof_samples, sizeof(*s), 0) : NULL;
		if (s) {
			count_wait(1);
			s->tgid = tgid;
			s->tid = tid;
			s->kind = TTOP_PROF_OFF_CPU;
			s->keep_one_in = one_in;
			s->pad = 0;
			s->reason = off_reason(preempt, prev, prev_state);
			s->ts = now;
			bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), prev->comm);
			/* prev is current: its kernel stack is the one taken here. */
			s->kstack = bpf_get_stackid(ctx, &prof_kstacks, 0);
			if (s->kstack < 0)
				lost(1);
			copy_user_stack(s, prev);
			bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
		} else {
			struct ttop_prof_off *o = bpf_ringbuf_reserve(&prof_samples, sizeof(*o), 0);

			if (o) {
				o->tgid = tgid;
				o->tid = tid;
				o->reason = off_reason(preempt, prev, prev_state);
				o->pad = 0;
				o->ts = now;
				bpf_ringbuf_submit(o, BPF_RB_NO_WAKEUP);
			} else {
				lost(0);
			}
		}
	}
	tgid = next->tgid;
	tid = next->pid;
	if (tid && bpf_map_lookup_elem(&prof_pids, &tgid)) {
		struct ttop_prof_oncpu *o = bpf_ringbuf_reserve(&prof_samples, sizeof(*o), 0);

		if (o) {
			o->tid = tid;
			o->pad = 0;
			o->ts = now;
			bpf_ringbuf_submit(o, BPF_RB_NO_WAKEUP);
		} else {
			lost(0);
		}
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_offcpu, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	FLOOR();
	return offcpu(ctx, preempt, prev, next, prev_state);
}

/* Before 5.18: no prev_state argument (compat.h). */
SEC("tp_btf/sched_switch")
int BPF_PROG(ttop_offcpu3, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	FLOOR();
	return offcpu(ctx, preempt, prev, next, switch_state(preempt, prev));
}
