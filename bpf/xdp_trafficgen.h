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

#endif /* XDP_TRAFFICGEN_H */
