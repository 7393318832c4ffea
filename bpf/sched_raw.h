/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The raw_tp copies of sched.bpf.c's tp_btf programs, for kernels without tp_btf
 * (before 5.5): the same code, each field read with a helper call (btf = false).
 * Included once, at the end of sched.bpf.c; user space loads one set.
 */
#ifndef TTOP_SCHED_RAW_H
#define TTOP_SCHED_RAW_H

SEC("raw_tp/sched_wakeup")
int BPF_PROG(ttop_raw_sched_wakeup, struct task_struct *p)
{
	FLOOR();
	on_wakeup(false, p);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(ttop_raw_sched_wakeup_new, struct task_struct *p)
{
	FLOOR();
	on_wakeup_new(false, p);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(ttop_raw_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	FLOOR();
	on_switch(false, preempt, prev, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(ttop_raw_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	FLOOR();
	on_migrate(false, p, dest_cpu);
	return 0;
}

SEC("raw_tp/task_newtask")
int BPF_PROG(ttop_raw_task_newtask, struct task_struct *task, u64 clone_flags)
{
	FLOOR();
	on_newtask(false, task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(ttop_raw_sched_process_exit, struct task_struct *task)
{
	FLOOR();
	on_exit(false, task);
	return 0;
}

SEC("raw_tp/task_rename")
int BPF_PROG(ttop_raw_task_rename, struct task_struct *task)
{
	FLOOR();
	mark_dirty(BPF_CORE_READ(task, pid));
	return 0;
}

#endif
