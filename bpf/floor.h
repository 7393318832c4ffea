/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The floor: with TTOP_BPF_FLOOR=1 user space sets ttop_floor in every object before load,
 * and every event program returns at its first instruction (the verifier drops the rest:
 * ttop_floor is a load-time constant). The same hooks stay attached, so what the kernel
 * spends to run a program on each of them (the tracepoint's dispatch, the statistics'
 * clock reads) is measured with no work in the programs: the benchmark and the CI gate
 * net ttop's cost of that floor, measured in the same run. Included once per object.
 */
#ifndef TTOP_FLOOR_H
#define TTOP_FLOOR_H

const volatile __u32 ttop_floor;

#define FLOOR()                  \
	do {                     \
		if (ttop_floor)  \
			return 0; \
	} while (0)

#endif
