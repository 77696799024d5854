/* SPDX-License-Identifier: GPL-2.0 */
/* xsk_bench.h: definitions shared by xsk_bench.bpf.c and xdplab-xsk-bench. */
#ifndef XSK_BENCH_H
#define XSK_BENCH_H

/* Entries of the XSKMAP (key = RX queue index): the highest queue id + 1
 * a run may bind. Queues at or above it are passed to the stack.
 */
#define XSK_MAX_QUEUES 64

#endif /* XSK_BENCH_H */
