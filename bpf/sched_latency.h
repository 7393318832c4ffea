/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of sched.bpf.c (included once, after its helpers, not a shared header):
 * scheduling latency, runnable -> on CPU, per CPU and per thread. */
#ifndef TTOP_SCHED_LATENCY_H
#define TTOP_SCHED_LATENCY_H

/* Scheduling latency (runnable -> on CPU): per CPU, and per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TTOP_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct lat_stats);
} lat_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_LAT_THREADS);
	__type(key, __u32);
	__type(value, struct lat_stats);
} lat_threads SEC(".maps");

/* Exited threads' one latency, for user space to drain each tick. A ring buffer, not a
 * hash keyed by tid: under thread churn (24.7k threads/s) the hash insert was half of
 * sched_process_exit's 1.2 us, and user space deleted every record again. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TTOP_LAT_EXITS_BYTES);
} lat_exits SEC(".maps");
/* Its record's type, in the object's BTF for the generated Rust types (a ring buffer
 * record is not a map's value type). */
struct lat_exit *lat_exit_type __attribute__((unused));

/* Too large for the BPF stack: the initial value of a new lat_threads entry. */
const struct lat_stats lat_zero = {};

/* Histogram slot of a latency (see TTOP_LAT_SLOTS in ttop.h): log2 by halving, with no
 * branch (log2.h). A branch per step gave the verifier a distinct state for every exponent at
 * each of the two call sites: sched_switch took 47k verified instructions and 2,848
 * states, most of ttop's start-up verification. Same slots as the branchy form (checked
 * over 50 M values). */
static __always_inline __u32 lat_slot(__u64 v)
{
	__u64 e, slot;

	if (v < (1ULL << TTOP_LAT_MIN_SHIFT))
		return 0;
	e = log2_u64(v);
	slot = 1 + ((e - TTOP_LAT_MIN_SHIFT) << TTOP_LAT_SUB_BITS) +
	       ((v >> (e - TTOP_LAT_SUB_BITS)) & ((1 << TTOP_LAT_SUB_BITS) - 1));
	return slot < TTOP_LAT_SLOTS ? slot : TTOP_LAT_SLOTS - 1;
}

/* Single writer per entry: a CPU's own slot, or the thread switching in. A global
 * function (checked once, on its own): inlined, the slot's value range had to be
 * tracked precisely through its computation and every caller state stayed apart. */
static __noinline int lat_add(struct lat_stats *s, __u64 lat, __u64 now, __u32 slot)
{
	if (!s)
		return 0;
	s->count++;
	s->sum_ns += lat;
	if (s->max_gen != tick_gen || lat > s->max_ns) {
		s->max_gen = tick_gen;
		s->max_ns = lat;
		s->max_ts = now;
	}
	if (slot < TTOP_LAT_SLOTS)
		s->slots[slot]++;
	return 0;
}

/* A wait of `lat` ns for this CPU, ended now by thread tid of process tgid; t is the
 * thread's own entry. A thread's first latency stays in it (most short-lived threads
 * have only one): zeroing an 800-byte lat_threads entry, and deleting it at exit, cost
 * more than all the rest of sched_switch. The second one moves both to lat_threads, as
 * if the first had been added there.
 *
 * A global function: the verifier checks it once, on its own, instead of once for each
 * state sched_switch reaches it in (it was 13k of that program's 14k verified
 * instructions). Returns 0; t may be NULL (a global function's pointer argument). */
static __noinline int lat_account(__u32 tgid, __u32 tid, struct thread_stats *t, __u64 lat, __u64 now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 slot = lat_slot(lat), slot1;
	struct lat_stats *s = bpf_map_lookup_elem(&lat_cpu, &cpu);

	if (!t)
		return 0;

	lat_add(s, lat, now, slot);
	if (t->lat_state == TTOP_LAT_NONE) {
		t->lat1_ns = lat;
		t->lat1_ts = now;
		t->lat1_gen = tick_gen;
		t->lat_state = TTOP_LAT_ONE;
		return 0;
	}
	s = t->lat_state == TTOP_LAT_MAP ? bpf_map_lookup_elem(&lat_threads, &tid) : 0;
	if (!s) {
		/* The thread has no entry of its own yet (or user space deleted it): one under
		 * its tid is an earlier thread's, which exited. Start afresh; if user space had
		 * not read that one's last interval yet, it is lost: counted. */
		s = t->lat_state == TTOP_LAT_MAP ? 0 : bpf_map_lookup_elem(&lat_threads, &tid);
		if (s && s->exited)
			drop(DROP_LAT_THREADS);
		if (!bpf_map_update_elem(&lat_threads, &tid, &lat_zero, BPF_ANY))
			__sync_fetch_and_add(&inserts[TTOP_INS_LAT_THREADS], 1);
		s = bpf_map_lookup_elem(&lat_threads, &tid);
		if (!s) {
			drop(DROP_LAT_THREADS);
			return 0;
		}
		s->tgid = tgid;
		if (t->lat_state == TTOP_LAT_ONE) {
			s->count = 1;
			s->sum_ns = t->lat1_ns;
			s->max_ns = t->lat1_ns;
			s->max_ts = t->lat1_ts;
			s->max_gen = t->lat1_gen;
			slot1 = lat_slot(t->lat1_ns);
			barrier_var(slot1);
			if (slot1 < TTOP_LAT_SLOTS)
				s->slots[slot1] = 1;
		}
		t->lat_state = TTOP_LAT_MAP;
	}
	lat_add(s, lat, now, slot);
	return 0;
}

/* Thread tid of process tgid exits (t: its thread_stats entry, NULL if it had none).
 * Its latencies stay until user space has read them: its lat_threads entry gets its
 * name and is marked exited (user space deletes it after reading it), or a record in
 * lat_exits keeps the one latency held in t (drained next), with its name. */
static __always_inline void lat_exit(struct task_struct *task, __u32 tgid, __u32 tid,
				     struct thread_stats *t)
{
	struct lat_stats *s;
	struct lat_exit e = {};

	if (t && t->lat_state == TTOP_LAT_ONE) {
		e.tgid = tgid;
		e.lat1_ns = t->lat1_ns;
		e.lat1_ts = t->lat1_ts;
		e.lat1_gen = t->lat1_gen;
		e.tid = tid;
		BPF_CORE_READ_STR_INTO(&e.comm, task, comm);
		/* No wakeup: user space drains it at each tick, not when woken. */
		if (bpf_ringbuf_output(&lat_exits, &e, sizeof(e), BPF_RB_NO_WAKEUP))
			drop(DROP_LAT_THREADS);
		return;
	}
	/* Without t the entry's owner is unknown: it may only be an earlier thread's;
	 * either way it has ended. */
	if (t && t->lat_state != TTOP_LAT_MAP)
		return;
	s = bpf_map_lookup_elem(&lat_threads, &tid);
	if (!s)
		return;
	BPF_CORE_READ_STR_INTO(&s->comm, task, comm);
	s->exited = 1;
}

#endif
