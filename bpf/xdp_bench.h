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

/* Who counts the packets (.rodata count_mode). */
enum count_mode {
	COUNT_PROGRAM = 0, /* the program counts into rxq_stats (per CPU, per RX queue) */
	COUNT_DRIVER = 1,  /* the program counts nothing: read the driver's own XDP
			    * counters (veth rx_queue_N_xdp_drops, mlx5 rxN_xdp_drop);
			    * the verifier removes the rxq_stats access entirely */
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
