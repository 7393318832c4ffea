/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* floor(log2(v)) without a branch, shared by the scheduling-latency slots
 * (sched_latency.h) and the futex wait histogram (contention.h). A branch per step gave
 * the verifier a distinct state for every exponent at each call site. */
#ifndef TTOP_LOG2_H
#define TTOP_LOG2_H

/* 1 when t != 0, else 0, with no branch: the top bit of t | -t. */
#define LOG2_NZ(t) ((((__u64)(t)) | -((__u64)(t))) >> 63)

/* floor(log2(v)) by halving; 0 for 0 and 1. */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 x = v, s, e = 0;

	s = LOG2_NZ(x >> 32) << 5; x >>= s; e += s;
	s = LOG2_NZ(x >> 16) << 4; x >>= s; e += s;
	s = LOG2_NZ(x >> 8) << 3; x >>= s; e += s;
	s = LOG2_NZ(x >> 4) << 2; x >>= s; e += s;
	s = LOG2_NZ(x >> 2) << 1; x >>= s; e += s;
	return e + (x >> 1);
}

#endif
