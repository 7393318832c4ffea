// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Kernel symbols without /proc/kallsyms. Printing that file makes the kernel format
 * ~150k lines (~75 ms of system time here, a quarter of ttop's start-up), while ttop
 * needs a handful of addresses before loading its probes and, later, the names of the
 * few hundred addresses its kernel stacks hold. The kernel answers both by binary
 * search: bpf_kallsyms_lookup_name() (5.16+) for a name, and bpf_snprintf()'s "%pS"
 * (5.13+) for an address ("schedule+0x2c/0x90": the function, the offset, its size).
 *
 * A BPF_PROG_TYPE_SYSCALL program (5.14+), run on demand by BPF_PROG_RUN; the queries
 * and answers are in .bss, which user space maps. Where it does not load, ttop reads
 * /proc/kallsyms as before (src/collect/kallsyms.rs).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ttop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct ttop_ksym_io io;
static const char ps_fmt[] = "%pS";

SEC("syscall")
int ttop_ksym(void *ctx)
{
	__u32 n = io.n;

	for (__u32 i = 0; i < TTOP_KSYM_BATCH; i++) {
		char *text = &io.text[i][0][0];
		__u64 a;

		if (i >= n)
			break;
		if (io.by_name) {
			/* The helper wants the last byte of the buffer to be the NUL. */
			text[TTOP_KSYM_TEXT - 1] = 0;
			a = 0;
			io.err[i] = bpf_kallsyms_lookup_name(text, TTOP_KSYM_TEXT, 0, &a);
			io.addr[i] = io.err[i] ? 0 : a;
			if (io.err[i])
				continue;
		}
		a = io.addr[i];
		io.err[i] = bpf_snprintf(text, TTOP_KSYM_TEXT, ps_fmt, &a, sizeof(a));
		if (io.err[i] > 0)
			io.err[i] = 0;
	}
	return 0;
}
