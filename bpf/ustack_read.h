/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Copying the top of a user stack for the unwinder (profile.bpf.c's samples,
 * futex_shared.h's kept stacks). */
#ifndef TTOP_USTACK_READ_H
#define TTOP_USTACK_READ_H

#define TTOP_PAGE 4096

/* Copy up to 8192 bytes of user stack from sp into dst (8192 bytes); returns the count
 * copied, 0 when nothing could be. Where fewer than 8192 bytes lie between sp and the
 * end of the stack's mapping (a main thread near the top of its stack: the kernel
 * starts it up to 8 KB below the top at random, and above that sit only the
 * environment and auxv), the copy stops at that end. The mapping ends at a page
 * boundary, and 8192 bytes did not fit, so it is one of the two boundaries after sp.
 * (Fixed 4096- and 1024-byte retries could leave such a thread's stack without the
 * frames above its innermost ones, or with nothing.) */
static __always_inline __u32 read_ustack_top(void *dst, __u64 sp)
{
	__u32 to_page = TTOP_PAGE - (__u32)(sp & (TTOP_PAGE - 1)); /* 1..4096 */
	__u32 n;

	if (!bpf_probe_read_user(dst, 2 * TTOP_PAGE, (void *)sp))
		return 2 * TTOP_PAGE;
	n = to_page + TTOP_PAGE;
	if (n < 2 * TTOP_PAGE) {
		n &= 2 * TTOP_PAGE - 1;
		if (!bpf_probe_read_user(dst, n, (void *)sp))
			return n;
	}
	n = to_page & (2 * TTOP_PAGE - 1);
	if (!bpf_probe_read_user(dst, n, (void *)sp))
		return n;
	return 0;
}

#endif
