// SPDX-License-Identifier: GPL-2.0
/* xdp_router.bpf.c: an IPv4 router in XDP (the XDP paper's routing use case, section 5; the kernel sample
 * samples/bpf/xdp_fwd_kern.c does the same work). For every IPv4 frame: check and decrement the TTL (with the
 * incremental header checksum update), ask the kernel's FIB (bpf_fib_lookup), and on success write the next hop's
 * and the egress port's MAC addresses and redirect the frame through the devmap tx_ports, keyed by the egress
 * ifindex the lookup returned. Everything else goes to the stack (XDP_PASS): IPv6 and ARP, a TTL of 1 or less
 * (the stack answers with ICMP), and every lookup that did not succeed (no route, no neighbour yet, fragmentation
 * needed, forwarding disabled on the ingress port): the stack resolves or answers those.
 *
 * .rodata:
 *   direct     1: BPF_FIB_LOOKUP_DIRECT (the main table straight, no policy rules; the paper ran xdp_fwd -D),
 *              0: the full lookup (fib rules first)
 *   count_fib  FIB_COUNT_ON: count every frame's outcome in fib_counts (per-CPU), one slot per
 *              BPF_FIB_LKUP_RET_* code plus xdp_router.h's own slots. The counter writes (a per-CPU array update
 *              or two per frame) were put at 12-18 ns per packet on the virtual lab by the brief, not
 *              re-measured here (system xdp_router_nocount beside xdp_router measures it); the routing experiment
 *              runs with them on and records it (provenance.program.variables.count_fib). FIB_COUNT_OFF: nothing
 *              is counted (the drivers' per-queue XDP counters still count redirects and passes).
 *
 * tx_ports is filled by userspace after load (xdplab.testbed.xdp_program map_entries: {tx_ports: {<egress>:
 * <egress>}}, the key and the value both the egress ifindex). A port the lookup returns that is not in it is
 * passed to the stack and counted (FIB_COUNT_NO_TX_PORT), never dropped silently.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_router.h"

#ifndef AF_INET
#define AF_INET 2
#endif

const volatile __u32 direct = 1;
const volatile __u32 count_fib = FIB_COUNT_ON;

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__type(key, __u32);   /* egress ifindex */
	__type(value, __u32); /* the same ifindex */
	__uint(max_entries, ROUTER_TX_PORTS_ENTRIES);
} tx_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, FIB_COUNT_SLOTS);
} fib_counts SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *n;

	if (count_fib != FIB_COUNT_ON)
		return;
	n = bpf_map_lookup_elem(&fib_counts, &slot);
	if (n)
		*n += 1;
}

/* Decrement the TTL and patch the header checksum incrementally (RFC 1624: the TTL is the high byte of its
 * 16-bit word, so the sum gains 0x0100 in network order, with the end-around carry). */
static __always_inline void ip_decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check;

	check += (__u32)bpf_htons(0x0100);
	iph->check = (__u16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

SEC("xdp")
int xdp_router(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct iphdr *iph;
	__u32 slot;
	int rc;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP)) {
		count(FIB_COUNT_NOT_IPV4);
		return XDP_PASS;
	}
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;
	if (iph->ttl <= 1) {
		count(FIB_COUNT_TTL_EXPIRED);
		return XDP_PASS;
	}

	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ctx->ingress_ifindex;

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), direct ? BPF_FIB_LOOKUP_DIRECT : 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
		slot = rc >= 0 && rc < FIB_RET_SLOTS ? (__u32)rc : FIB_RET_SLOTS - 1;
		count(slot);
		return XDP_PASS;
	}
	count(BPF_FIB_LKUP_RET_SUCCESS);
	/* the devmap's entry first: a port that is not ours goes to the stack with its TTL untouched */
	if (!bpf_map_lookup_elem(&tx_ports, &fib.ifindex)) {
		count(FIB_COUNT_NO_TX_PORT);
		return XDP_PASS;
	}
	ip_decrease_ttl(iph);
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	rc = bpf_redirect_map(&tx_ports, fib.ifindex, 0);
	if (rc == XDP_REDIRECT)
		count(FIB_COUNT_REDIRECTED);
	return rc;
}

char _license[] SEC("license") = "GPL";
