// SPDX-License-Identifier: GPL-2.0
/* xdp_udp_port_filter.bpf.c: drop IPv4 UDP packets to a range of destination ports, pass everything else.
 *
 * An example of a user's XDP program that the lab runs as a system of its own (examples/README.md): one
 * line of inventory (xdplab_custom_systems) and the role xdplab.testbed.bpf_programs builds it with the
 * lab's flags. The range is two .rodata variables that module xdplab.testbed.xdp_program sets at load time
 * (variables: {port_first: 12, port_last: 75}); the defaults cover the ports the lab's generator sends to
 * (xdplab_port_base 12, one port per flow, up to 64 flows). No map and no counters: the experiment counts
 * the drops with the driver's counters.
 *
 * Parsing is bounds-checked at every header, as in xdp-tools' samples: Ethernet, up to two VLAN tags
 * (802.1Q / 802.1ad), IPv4 with options, UDP. A non-first IPv4 fragment carries no UDP header: passed.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define VLAN_MAX_DEPTH 2
#define IP_OFFSET_MASK 0x1fff

/* the first and last destination port dropped (host byte order, inclusive) */
const volatile __u16 port_first = 12;
const volatile __u16 port_last = 75;

struct vlan_hdr {
	__be16 tci;
	__be16 encapsulated_proto;
};

static __always_inline int proto_is_vlan(__u16 h_proto)
{
	return h_proto == bpf_htons(ETH_P_8021Q) || h_proto == bpf_htons(ETH_P_8021AD);
}

SEC("xdp")
int xdp_udp_port_filter(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct vlan_hdr *vlh;
	struct iphdr *iph;
	struct udphdr *udph;
	__u16 h_proto, dport;
	int i;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	h_proto = eth->h_proto;
	vlh = (void *)(eth + 1);

#pragma unroll
	for (i = 0; i < VLAN_MAX_DEPTH; i++) {
		if (!proto_is_vlan(h_proto))
			break;
		if ((void *)(vlh + 1) > data_end)
			return XDP_PASS;
		h_proto = vlh->encapsulated_proto;
		vlh++;
	}
	if (h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;

	iph = (void *)vlh;
	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;
	if (iph->ihl < 5 || (void *)iph + iph->ihl * 4 > data_end)
		return XDP_PASS;
	if (iph->protocol != IPPROTO_UDP || (iph->frag_off & bpf_htons(IP_OFFSET_MASK)))
		return XDP_PASS;

	udph = (void *)iph + iph->ihl * 4;
	if ((void *)(udph + 1) > data_end)
		return XDP_PASS;
	dport = bpf_ntohs(udph->dest);
	if (dport >= port_first && dport <= port_last)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
