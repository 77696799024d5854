/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_trafficgen.h: definitions shared by xdp_trafficgen.bpf.c and the
 * xdplab-trafficgen userspace (Contract 2 in docs/ARCHITECTURE.md).
 */
#ifndef XDP_TRAFFICGEN_H
#define XDP_TRAFFICGEN_H

#include <linux/types.h>

/* Frame layout written by userspace: Ethernet + IPv4 (no options) + UDP. */
#define TG_ETH_LEN 14
#define TG_IPV4_LEN 20
#define TG_UDP_LEN 8
#define TG_HDRS_LEN (TG_ETH_LEN + TG_IPV4_LEN + TG_UDP_LEN)
#define TG_UDP_OFFSET (TG_ETH_LEN + TG_IPV4_LEN)

/* UDP source port of every flow: 9, the discard service. */
#define TG_UDP_SRC_PORT 9

/* Which destination port the next frame sent from a CPU gets.
 * One per CPU (per-CPU array, key 0): a sender thread pinned to a CPU walks
 * its flows round-robin. Ports are first_port, first_port + stride, ...
 * (nflows of them), so no division is needed per packet.
 */
struct flow_cursor {
	__u32 next;       /* index of the next flow, 0..nflows-1 */
	__u32 nflows;     /* flows this CPU sends; 0 = leave the frame as is */
	__u32 port;       /* destination port of flow `next` */
	__u32 first_port; /* destination port of flow 0 of this CPU */
	__u32 stride;     /* port distance between this CPU's flows (= queues) */
	__u32 pad;
};

/* When the next group of frames sent from a CPU may leave (per-CPU array,
 * key 0), for --rate: the program waits (spins) at the first frame of each
 * group of group_frames until the group's time, so groups leave evenly spaced
 * inside one BPF_PROG_RUN call instead of as fast as the CPU makes them (a
 * group, not each frame, so the clock is read once per group: reading it costs
 * more than the rest of the program). Groups follow an absolute schedule
 * (next_ns advances by gap_ns per group); a CPU behind it (after the gap
 * between two calls) catches up at PACE_CATCHUP_DIVISOR times the rate, never
 * as fast as it can, so a DUT that keeps up with the rate is never sent a
 * burst much faster than it.
 */
#define PACE_CATCHUP_DIVISOR 2
/* A CPU more than this behind its schedule (its CPU was taken) drops the
 * rest of the backlog instead of sending it later, at twice the rate: what a
 * constant-rate generator does, and the load offered in a measurement window
 * stays the one asked for (dropped_ns says how much was dropped).
 */
#define PACE_MAX_LAG_NS (20 * 1000ULL * 1000ULL)
/* a spin waits at most this many clock reads (bpf_loop's bound) */
#define PACE_MAX_SPINS (1U << 20)

struct pace_state {
	__u64 gap_ns;       /* nanoseconds between two groups of this CPU; 0: no pacing */
	__u64 next_ns;      /* bpf_ktime_get_ns() when the next group is due; 0: at the first frame */
	__u64 last_ns;      /* bpf_ktime_get_ns() when the last group left */
	__u32 group_frames; /* frames per group (1: every frame waits for its own time) */
	__u32 group_left;   /* frames of the current group still to send */
	__u64 dropped_ns;   /* schedule dropped, in all, by lagging more than PACE_MAX_LAG_NS */
};

/* Address lists (--dst-list, --src-list): each frame takes the next IPv4
 * destination (source) of a list userspace writes into the array map
 * dst_addrs (src_addrs), network byte order, TG_MAX_ADDRS at most. One
 * cursor per CPU (per-CPU array addr_cursors, key 0): the list is shared by
 * the sender threads, each CPU walks it round robin from its own start.
 * The IPv4 header checksum is updated for the new address (RFC 1624).
 */
#define TG_MAX_ADDRS 65536
#define TG_LIST_DST 1U /* addr_lists bit: destinations from dst_addrs */
#define TG_LIST_SRC 2U /* addr_lists bit: sources from src_addrs */

struct addr_cursor {
	__u32 dst_next;  /* index in dst_addrs of this CPU's next frame */
	__u32 dst_count; /* addresses in dst_addrs */
	__u32 src_next;
	__u32 src_count;
};

#endif /* XDP_TRAFFICGEN_H */
