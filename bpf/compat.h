/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What differs between the kernels ttop runs on, for the BPF side only (not shared with
 * Rust): CO-RE flavours of fields that were renamed, and readers that pick the one this
 * kernel has at load time. User space chooses which programs load (src/collect/kernel.rs);
 * these keep one program body working on every kernel that can take it. */
#ifndef TTOP_COMPAT_H
#define TTOP_COMPAT_H

/* task_struct.state became __state (unsigned int) in 5.14. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* sched_switch's prev_state argument (5.18+): before it, the tracepoint read the task's
 * state itself, and a preempted task counted as running. The same here. */
static __always_inline unsigned int switch_state(bool preempt, struct task_struct *prev)
{
	return preempt ? 0 : task_state(prev);
}

/* The current task: a BTF pointer where the kernel has bpf_get_current_task_btf (5.11),
 * else a plain one. Read its fields with BPF_CORE_READ, which takes either. */
static __always_inline struct task_struct *current_task(void)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/* x86-64's kernel stack (THREAD_SIZE: 16 KiB; 32 KiB under KASAN, which server kernels
 * are not built with). */
#define TTOP_THREAD_SIZE 16384

/* The user registers `task` saved when it entered the kernel (what the kernel's
 * task_pt_regs() returns): bpf_task_pt_regs (5.15) where the kernel has it; before, on
 * x86-64, the same place computed as the kernel does, at the top of the task's kernel
 * stack. NULL where neither works. Read the fields with the PT_REGS_*_CORE macros
 * (probe reads), which both pointers allow. `task` must be a BTF pointer when the
 * helper exists (tp_btf arguments, current_task()). */
static __always_inline struct pt_regs *task_user_regs(struct task_struct *task)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		return (struct pt_regs *)bpf_task_pt_regs(task);
#if defined(__TARGET_ARCH_x86)
	{
		void *stack = BPF_CORE_READ(task, stack);

		return stack ? (struct pt_regs *)(stack + TTOP_THREAD_SIZE) - 1 : 0;
	}
#else
	return 0;
#endif
}

/* A field of the registers task_user_regs returned: a plain load where they are a BTF
 * pointer (bpf_task_pt_regs), a probe read (a helper call) before. On the switch and
 * wake-up paths these reads ran at every sleep: see docs/dev/benchmarks.md. */
#define UREG(regs, field)                                                      \
	(bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)   \
		 ? (regs)->field                                               \
		 : BPF_CORE_READ(regs, field))

/* Whether task_user_regs can answer on this kernel. */
static __always_inline bool have_user_regs(void)
{
#if defined(__TARGET_ARCH_x86)
	return true;
#else
	return bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs);
#endif
}

/* Before 5.8 the field was called mmap_sem. */
struct mm_struct___old {
	struct rw_semaphore mmap_sem;
} __attribute__((preserve_access_index));

/* The address of mm's mmap_lock (what lock:contention_begin names). */
static __always_inline __u64 mmap_lock_addr(struct mm_struct *mm)
{
	__u64 off;

	if (bpf_core_field_exists(struct mm_struct, mmap_lock))
		off = bpf_core_field_offset(struct mm_struct, mmap_lock);
	else
		off = bpf_core_field_offset(struct mm_struct___old, mmap_sem);
	return (__u64)(unsigned long)mm + off;
}

#endif
