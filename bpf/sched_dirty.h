/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of sched.bpf.c (included once, not a shared header): which threads the /proc scan
 * must read again (src/collect/dirty.rs). */
#ifndef TTOP_SCHED_DIRTY_H
#define TTOP_SCHED_DIRTY_H

/* Threads the /proc scan must read again: one byte per tid (8 per entry), set to 1 by
 * every event that can change what task/TID/stat shows (switch in or out, wakeup, birth,
 * exit, rename). User space maps it, and before reading a thread's stat file swaps its
 * byte back to 0; a thread whose byte is still 0 shows what the scan read last time.
 * Plain byte stores: no two tids share a byte, so no atomics are needed. User space
 * sizes it to pid_max before loading (and drops BPF_F_MMAPABLE where the kernel lacks
 * it, which turns the skipping off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dirty_tids SEC(".maps");

/* The same for processes, by tgid: set when one of its threads is born or exits, so the
 * scan lists its task/ directory again (and keeps the last listing otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dirty_tgids SEC(".maps");

static __always_inline void mark_in(void *map, __u32 id)
{
	__u32 slot = id >> 3;
	__u8 *b = bpf_map_lookup_elem(map, &slot);

	if (!b)
		return;
	b += id & 7;
	if (!*b)
		*b = 1;
}

static __always_inline void mark_dirty(__u32 tid)
{
	mark_in(&dirty_tids, tid);
}

#endif
