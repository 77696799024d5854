/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_bench.h: definitions shared by xdp_bench.bpf.c and userspace readers
 * of its rxq_stats map (Contract 1 in docs/ARCHITECTURE.md).
 */
#ifndef XDP_BENCH_H
#define XDP_BENCH_H

#include <linux/types.h>

/* How much of the packet the program touches before acting on it. */
enum touch_mode {
	TOUCH_NONE = 0,    /* do not touch packet data */
	TOUCH_READ = 1,    /* load the Ethernet header (h_proto) */
	TOUCH_SWAPMAC = 2, /* swap source and destination MAC (for XDP_TX) */
};

/* rx_queue_index values >= MAX_RXQ are counted in key MAX_RXQ. */
#define MAX_RXQ 64
#define RXQ_STATS_ENTRIES (MAX_RXQ + 1)

/* Value of rxq_stats (per CPU, key = rx_queue_index). */
struct rxq_counters {
	__u64 packets;
	__u64 bytes;
	__u64 errors; /* frame too short for the touch mode */
};

#endif /* XDP_BENCH_H */
