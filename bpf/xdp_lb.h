/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_lb.h: the maps' layout shared by xdp_lb.bpf.c (the load balancer, on the DUT), xdp_lb_check.bpf.c (the far
 * side's check of the outer destination, on the generator) and the Python that fills and reads them
 * (plugins/module_utils/_lb.py, module xdplab.testbed.xdp_lb_config; docs/ARCHITECTURE.md "The load balancer").
 * Every address and port is in network byte order, as on the wire.
 */
#ifndef XDP_LB_H
#define XDP_LB_H

/* One consistent-hash ring per VIP: a prime number of slots (Maglev's table size, as Katran's 65,537). */
#define LB_RING_SIZE 65537
/* VIPs the program holds (the experiment: one per DUT core) and reals in all (the reals array). */
#define LB_MAX_VIPS 16
#define LB_MAX_REALS 4096
/* Flows each CPU's LRU flow table keeps. */
#define LB_LRU_SIZE 65536

/* vip_map key: the address, port and protocol a client sends to. */
struct lb_vip_key {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 pad;
};

/* vip_map value: the VIP's index (its ring is ch_rings[index * LB_RING_SIZE ...]) and flags. */
struct lb_vip_meta {
	__u32 index;
	__u32 flags;
};

/* lb_vip_meta.flags: hash the source address only (no ports: IPVS sh without sh-port). */
#define LB_F_HASH_SRC_ONLY 1U

/* lru_mapping key: the 5-tuple of the client's packet. */
struct lb_flow_key {
	__be32 src;
	__be32 dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

/* lru_mapping value: the real the flow went to. */
struct lb_flow_val {
	__u32 real;
	__u32 pad;
};

/* reals value: the real's address (0: an empty slot; a packet hashed to it is dropped and counted). */
struct lb_real {
	__be32 addr;
	__u32 flags;
};

/* lb_ctl[0]: the outer header's source address (the balancer's own). */
struct lb_ctl {
	__be32 outer_src;
	__u32 configured; /* non-zero once userspace has filled the maps */
};

/* lb_stats (per-CPU array, __u64 each): what the program did. */
enum lb_stat {
	LB_STAT_LRU_HIT = 0,  /* the flow was in this CPU's LRU table */
	LB_STAT_LRU_MISS,     /* looked up in the VIP's ring and added to the LRU table */
	LB_STAT_NOT_VIP,      /* IPv4 UDP/TCP to no VIP: passed to the stack */
	LB_STAT_NOT_LB,       /* not IPv4 UDP/TCP (ARP, IPv6, options, fragments): passed */
	LB_STAT_NO_REAL,      /* the ring slot's real is empty: dropped */
	LB_STAT_ENCAP_FAIL,   /* bpf_xdp_adjust_head refused the room: dropped */
	LB_STAT_TX,           /* encapsulated and sent back (XDP_TX) */
	LB_STAT_COUNT,
};

/* vip_stats (per-CPU array, LB_MAX_VIPS entries): packets and bytes (inner) each VIP sent to its reals. */
struct lb_vip_stat {
	__u64 packets;
	__u64 bytes;
};

/* xdp_lb_check: check_reals maps a real's address to its VIP's index; check_vips is vip_map's twin; check_stats
 * (per-CPU array, __u64 each) counts what came back. */
enum lb_check_stat {
	LB_CHECK_REAL_OK = 0, /* IPIP, outer daddr a real of the VIP the inner packet was sent to, checksum right */
	LB_CHECK_OTHER_VIP,   /* IPIP, outer daddr a real, but of another VIP */
	LB_CHECK_NOT_REAL,    /* IPIP, outer daddr no real */
	LB_CHECK_BAD_CSUM,    /* IPIP with a wrong outer header checksum */
	LB_CHECK_BAD_SRC,     /* IPIP whose outer saddr is not the balancer's */
	LB_CHECK_NOT_IPIP,    /* anything else */
	LB_CHECK_COUNT,
};

#endif /* XDP_LB_H */
