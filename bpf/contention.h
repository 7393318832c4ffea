/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of contention.bpf.c (included once, not a shared header): what the futex, kernel-lock
 * and mmap_lock probes share: constants, the per-thread state in task storage, the
 * counters user space reads, and small helpers. */
#ifndef TTOP_CONTENTION_H
#define TTOP_CONTENTION_H

/* The futex constants, the per-thread state and what the scheduler's switch program
 * shares with these probes are in futex_shared.h. */

/* Without lock:contention_begin, an mmap_lock acquisition this slow counts as a wait. */
#define MMAP_SLOW_NS 10000ULL
/* A per-thread lock entry older than this is stale (its end event was lost). */
#define LOCK_STALE_NS 60000000000ULL
#define SPIN_SLOTS 4

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
/* New entries per walked map (TTOP_INS_*): while a count stands still, user space looks
 * up the keys it already knows instead of walking every bucket. */
__u64 inserts[TTOP_INS_CONTENTION];

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
