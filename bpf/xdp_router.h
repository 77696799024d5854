/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_router.h: definitions shared by xdp_router.bpf.c and the userspace that reads its counters
 * (plugins/module_utils/_fib_routes.py FIB_COUNTER_NAMES; docs/ARCHITECTURE.md "Routing").
 */
#ifndef XDP_ROUTER_H
#define XDP_ROUTER_H

/* tx_ports (devmap hash): egress ports keyed by their own ifindex, as bpf_fib_lookup returns it. */
#define ROUTER_TX_PORTS_ENTRIES 64

/* fib_counts (per-CPU array): slots 0..FIB_RET_SLOTS-1 are bpf_fib_lookup's return codes
 * (BPF_FIB_LKUP_RET_SUCCESS = 0 ... BPF_FIB_LKUP_RET_NO_SRC_ADDR = 9, room for later ones),
 * then what the program decided before or after the lookup. */
#define FIB_RET_SLOTS 12
#define FIB_COUNT_NOT_IPV4 12   /* not IPv4 (IPv6, ARP, ...): XDP_PASS, no lookup */
#define FIB_COUNT_TTL_EXPIRED 13 /* ttl <= 1: XDP_PASS, the stack sends the ICMP error */
#define FIB_COUNT_NO_TX_PORT 14  /* SUCCESS but the egress port is not in tx_ports: XDP_PASS */
#define FIB_COUNT_REDIRECTED 15  /* SUCCESS and bpf_redirect_map returned XDP_REDIRECT */
#define FIB_COUNT_SLOTS 16

/* count_fib (.rodata) */
#define FIB_COUNT_OFF 0
#define FIB_COUNT_ON 1

#endif /* XDP_ROUTER_H */
