// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * On-CPU profile for ttop: a perf_event program on every CPU's cpu-clock at a fixed
 * frequency (99 Hz by default, as perf record -F 99). Each sample of a watched process
 * (or of any process but the idle task, when none is named) sends its thread, kernel
 * stack id and user registers plus the top of its user stack to user space, which
 * unwinds the copy from .eh_frame (a libc without frame pointers would end an in-kernel
 * frame-pointer walk at its first frame, and in-kernel counting by stack id would merge
 * call sites that die at one libc instruction), then counts stacks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ttop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Names struct ttop_prof_sample in the object's BTF, so the skeleton generates it for
 * user space (a ring buffer record is not a map's value type). */
struct ttop_prof_sample *prof_sample_type __attribute__((unused));

/* Only the processes in prof_pids are sampled when set. */
const volatile bool filter_pids = false;

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

static __always_inline void lost(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&prof_lost, &why);

	if (n)
		(*n)++;
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

SEC("perf_event")
int ttop_profile(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task;
	struct ttop_prof_sample *s;
	struct pt_regs *regs;
	__u64 sp;

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
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->kstack = -1;
	if (!in_user(ctx)) {
		s->kstack = bpf_get_stackid(ctx, &prof_kstacks, 0);
		if (s->kstack < 0)
			lost(1);
	}
	s->ip = s->sp = s->bp = 0;
	s->len = 0;
	task = bpf_get_current_task_btf();
	/* A kernel thread has no user stack. */
	if (task->mm) {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		s->ip = PT_REGS_IP_CORE(regs);
		sp = PT_REGS_SP_CORE(regs);
		s->sp = sp;
		s->bp = PT_REGS_FP_CORE(regs);
		if (!bpf_probe_read_user(s->bytes, TTOP_PROF_STACK_BYTES, (void *)sp))
			s->len = TTOP_PROF_STACK_BYTES;
		else if (!bpf_probe_read_user(s->bytes, 4096, (void *)sp))
			s->len = 4096;
		else if (!bpf_probe_read_user(s->bytes, 1024, (void *)sp))
			s->len = 1024;
	}
	/* No wake-up: user space drains the buffer every 100 ms. A wake-up per sample
	 * is an irq_work and a reschedule on the sampled CPU, whose return to user mode
	 * the next samples then caught (15% of them in irqentry_exit_to_user_mode). */
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	return 0;
}
