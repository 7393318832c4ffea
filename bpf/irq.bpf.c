// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Inter-processor interrupts and TLB shootdowns for ttop.
 *
 * Received: irq_vectors:*_entry (x86) counts each IPI vector on the CPU that takes
 * it. Sent: ipi:ipi_send_cpu / ipi_send_cpumask (6.3+) fire once per IPI actually
 * raised (a target already holding a pending call, or idling with polling, gets
 * none). Their callback is NULL for a reschedule and the generic smp-call handler for
 * every smp_call_function IPI, so the function the IPI is *for* comes from
 * csd:csd_queue_cpu, which fires just before on the same CPU with the queued function:
 * we keep it in a per-CPU scratch slot. A TLB shootdown is a remote call of
 * flush_tlb_func; csd:csd_function_entry of it on another CPU is exactly what the
 * x86 /proc/interrupts TLB line counts (irq_tlb_count, bumped on entry of
 * flush_tlb_func for remote flushes, before any early return).
 *
 * tlb:tlb_flush counts flushes by reason. Its TLB_REMOTE_SEND_IPI is the sender's
 * intent, not an IPI count: CPUs lazily off the mm are skipped, and with KVM's
 * paravirtual flush a preempted vCPU gets a flag instead of an IPI.
 *
 * Function addresses come from /proc/kallsyms, written into .rodata before load
 * (0: unknown, then TLB and other function calls cannot be told apart).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ttop.h"
#include "floor.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TTOP_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct irq_cpu_stats);
} irq_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TTOP_MAX_IPI_SENDERS);
	__type(key, struct ipi_src_key);
	__type(value, struct ipi_src_stats);
} ipi_src SEC(".maps");

/* Set by user space before load. */
const volatile __u64 flush_tlb_func_addr;  /* flush_tlb_func */
const volatile __u64 smp_ipi_func_addr;    /* generic_smp_call_function_single_interrupt */
const volatile __u32 cpumask_words = 1;    /* longs of struct cpumask worth reading */
const volatile __u32 mm_owner_ok;          /* mm_struct has owner (CONFIG_MEMCG) */

/* Read by user space. */
__u64 idrops[IDROP__COUNT];
/* New ipi_src entries: while the count stands still, user space looks up the keys it
 * already knows instead of walking every bucket. */
__u64 inserts[1];

static __always_inline struct irq_cpu_stats *this_cpu(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&irq_cpu, &cpu);
}

static __always_inline void recv(int which)
{
	struct irq_cpu_stats *c = this_cpu();

	if (c && which >= 0 && which < IPI_RECV__COUNT)
		c->recv[which]++;
}

SEC("raw_tp/call_function_entry")
int BPF_PROG(ttop_call_function_entry, int vector)
{
	FLOOR();
	recv(IPI_RECV_CALL);
	return 0;
}

SEC("raw_tp/call_function_single_entry")
int BPF_PROG(ttop_call_function_single_entry, int vector)
{
	FLOOR();
	recv(IPI_RECV_CALL_SINGLE);
	return 0;
}

SEC("raw_tp/reschedule_entry")
int BPF_PROG(ttop_reschedule_entry, int vector)
{
	FLOOR();
	recv(IPI_RECV_RESCHED);
	return 0;
}

SEC("raw_tp/irq_work_entry")
int BPF_PROG(ttop_irq_work_entry, int vector)
{
	FLOOR();
	recv(IPI_RECV_IRQ_WORK);
	return 0;
}

static __always_inline struct ipi_src_stats *src_get_for(__u32 tgid, __u32 kind, __u64 func)
{
	struct ipi_src_key k = {
		.tgid = tgid,
		.kind = kind,
		.func = func,
	};
	struct ipi_src_stats zero = {}, *s;

	s = bpf_map_lookup_elem(&ipi_src, &k);
	if (s)
		return s;
	if (!bpf_map_update_elem(&ipi_src, &k, &zero, BPF_NOEXIST))
		__sync_fetch_and_add(&inserts[0], 1);
	s = bpf_map_lookup_elem(&ipi_src, &k);
	if (!s)
		__sync_fetch_and_add(&idrops[IDROP_SENDERS], 1);
	return s;
}

/* Add to the sender's entry in ipi_src. */
static __always_inline void src_add(struct ipi_src_key *k, __u64 ipis, __u64 queued)
{
	struct ipi_src_stats *s = src_get_for(k->tgid, k->kind, k->func);

	if (!s)
		return;
	if (ipis)
		__sync_fetch_and_add(&s->ipis, ipis);
	if (queued)
		__sync_fetch_and_add(&s->queued, queued);
}

/* The current process sent `ipis` IPIs or queued `queued` calls: counted in this CPU's
 * sums (c->acc), which go to ipi_src when this CPU counts another sender. */
static __always_inline void src_count(struct irq_cpu_stats *c, __u32 kind, __u64 func,
				      __u64 ipis, __u64 queued)
{
	struct ipi_src_key k = {
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.kind = kind,
		.func = func,
	};
	struct ipi_src_acc *a;

	/* No copy, or this run interrupted another program's change of it (an IPI sent
	 * from an interrupt): straight to the hash, which takes atomic adds. */
	if (!c || c->acc.seq_end != c->acc.seq_begin) {
		src_add(&k, ipis, queued);
		return;
	}
	a = &c->acc;
	/* Full barriers: the stores between them are seen after seq_end and before
	 * seq_begin by a reader on another CPU. */
	__sync_fetch_and_add(&a->seq_end, 1);
	if (a->key.tgid != k.tgid || a->key.kind != k.kind || a->key.func != k.func) {
		if (a->s.ipis || a->s.queued)
			src_add(&a->key, a->s.ipis, a->s.queued);
		a->key = k;
		a->s.ipis = 0;
		a->s.queued = 0;
	}
	a->s.ipis += ipis;
	a->s.queued += queued;
	__sync_fetch_and_add(&a->seq_begin, 1);
}

static __always_inline __u32 call_kind(__u64 func)
{
	return func && func == flush_tlb_func_addr ? IPI_SENT_TLB : IPI_SENT_CALL;
}

/* A remote function call is queued for `cpu` (an IPI may or may not follow). */
SEC("raw_tp/csd_queue_cpu")
int BPF_PROG(ttop_csd_queue_cpu, unsigned int cpu, unsigned long callsite, void *func,
	     void *csd)
{
	FLOOR();
	struct irq_cpu_stats *c = this_cpu();
	__u64 f = (__u64)func;
	__u32 kind = call_kind(f);

	if (c) {
		c->csd_func = f;
		if (kind == IPI_SENT_TLB)
			c->tlb_requests++;
	}
	src_count(c, kind, f, 0, 1);
	return 0;
}

static __always_inline __u32 popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

static __always_inline void sent(__u64 callback, __u32 n)
{
	struct irq_cpu_stats *c = this_cpu();
	__u64 func = callback;
	__u32 kind;

	if (!n)
		return;
	if (!callback) {
		kind = IPI_SENT_RESCHED;
	} else if (!smp_ipi_func_addr || callback == smp_ipi_func_addr) {
		/* An smp_call_function IPI: for the function just queued on this CPU. */
		if (c && c->csd_func) {
			func = c->csd_func;
			c->csd_func = 0;
		}
		kind = call_kind(func);
	} else {
		kind = IPI_SENT_OTHER;
	}
	barrier_var(kind);
	if (c && kind < IPI_SENT__COUNT)
		c->sent[kind] += n;
	src_count(c, kind, func, n, 0);
}

SEC("raw_tp/ipi_send_cpu")
int BPF_PROG(ttop_ipi_send_cpu, unsigned int cpu, unsigned long callsite, void *callback)
{
	FLOOR();
	sent((__u64)callback, 1);
	return 0;
}

SEC("raw_tp/ipi_send_cpumask")
int BPF_PROG(ttop_ipi_send_cpumask, struct cpumask *mask, unsigned long callsite,
	     void *callback)
{
	FLOOR();
	__u32 n = 0;

	for (int i = 0; i < TTOP_MAX_CPUS / 64; i++) {
		__u64 w = 0;

		if (i >= cpumask_words)
			break;
		bpf_probe_read_kernel(&w, sizeof(w), &mask->bits[i]);
		n += popcount64(w);
	}
	sent((__u64)callback, n);
	return 0;
}

/* A queued remote call runs here. Remote-only: a CPU calling itself passes no csd. */
SEC("raw_tp/csd_function_entry")
int BPF_PROG(ttop_csd_function_entry, void *func, void *csd)
{
	FLOOR();
	struct irq_cpu_stats *c;

	if (!csd || !flush_tlb_func_addr || (__u64)func != flush_tlb_func_addr)
		return 0;
	c = this_cpu();
	if (c)
		c->tlb_shootdowns++;
	return 0;
}

SEC("raw_tp/tlb_flush")
int BPF_PROG(ttop_tlb_flush, int reason, unsigned long pages)
{
	FLOOR();
	struct irq_cpu_stats *c = this_cpu();
	__u32 r = reason;

	barrier_var(r); /* keep the bounds check the verifier needs */
	if (c && r < TTOP_TLB_REASONS)
		c->tlb[r]++;
	return 0;
}

/*
 * Before csd:* (6.3) a TLB shootdown received is the flush function called on behalf of
 * another CPU; where the kernel takes kprobes, one on it counts exactly what the
 * /proc/interrupts TLB line counts (irq_tlb_count is bumped on its entry for remote
 * flushes, before any early return). 5.10's flush_tlb_func_remote runs only for other
 * CPUs (its flush_tlb_info has no initiating_cpu); from 5.13 flush_tlb_func runs for both
 * and tells them apart by initiating_cpu. User space attaches this program to whichever
 * function the kernel has. The flush is charged to the process whose address space it
 * is (mm->owner): the sender's own, but for a flush of another process's memory (page
 * migration by a kernel thread) the victim, where csd_queue_cpu would charge the sender.
 */
SEC("kprobe")
int BPF_KPROBE(ttop_kp_flush_tlb_func, struct flush_tlb_info *f)
{
	FLOOR();
	struct irq_cpu_stats *c;
	struct ipi_src_stats *s;
	struct mm_struct *mm;
	__u32 tgid = 0;

	if (bpf_core_field_exists(f->initiating_cpu) &&
	    BPF_CORE_READ(f, initiating_cpu) == bpf_get_smp_processor_id())
		return 0;
	c = this_cpu();
	if (c)
		c->tlb_shootdowns++;
	mm = BPF_CORE_READ(f, mm);
	if (mm && mm_owner_ok)
		tgid = BPF_CORE_READ(mm, owner, tgid);
	s = src_get_for(tgid, IPI_SENT_TLB, flush_tlb_func_addr);
	if (s)
		__sync_fetch_and_add(&s->queued, 1);
	return 0;
}
