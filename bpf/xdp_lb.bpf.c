// SPDX-License-Identifier: GPL-2.0
/* xdp_lb.bpf.c: a load balancer in the manner of Katran (the XDP paper's section 5.3), written for this project.
 * Per packet, as Katran does:
 *   1. parse Ethernet, IPv4 (no options, no fragments) and the UDP or TCP ports; anything else goes to the stack;
 *   2. look the destination (address, port, protocol) up in vip_map, a hash map: no VIP, to the stack;
 *   3. look the 5-tuple up in this CPU's LRU flow table (lru_mapping, BPF_MAP_TYPE_LRU_PERCPU_HASH): a hit names the
 *      real the flow went to before;
 *   4. on a miss, hash the 5-tuple (the source address alone with LB_F_HASH_SRC_ONLY) into the VIP's consistent-hash
 *      ring (ch_rings, an array of LB_RING_SIZE = 65,537 slots per VIP, filled by userspace with a Maglev
 *      permutation: plugins/module_utils/_lb.py) and remember the real in the LRU table;
 *   5. read the real's address from the reals array;
 *   6. encapsulate in IPIP: bpf_xdp_adjust_head makes room for an outer IPv4 header (source: the balancer's address
 *      in lb_ctl, destination: the real, checksum computed), the Ethernet addresses swapped for the way back;
 *   7. XDP_TX: back out of the port it came in on (towards the next hop, which routes to the reals).
 * Counters (per-CPU arrays, read by xdplab.testbed.xdp_lb_config): LRU hits and misses and what was not balanced
 * (lb_stats), packets and bytes per VIP (vip_stats): three per-CPU array lookups and adds per balanced packet, about
 * 9 ns of the program's ~190 ns under BPF_PROG_RUN here (benchmarks/lb_counter_cost.py; docs/BENCHMARKS.md).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp_lb.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct lb_vip_key);
	__type(value, struct lb_vip_meta);
	__uint(max_entries, LB_MAX_VIPS);
} vip_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__type(key, struct lb_flow_key);
	__type(value, struct lb_flow_val);
	__uint(max_entries, LB_LRU_SIZE);
} lru_mapping SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32); /* index into reals */
	__uint(max_entries, LB_MAX_VIPS * LB_RING_SIZE);
} ch_rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct lb_real);
	__uint(max_entries, LB_MAX_REALS);
} reals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct lb_ctl);
	__uint(max_entries, 1);
} lb_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, LB_STAT_COUNT);
} lb_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct lb_vip_stat);
	__uint(max_entries, LB_MAX_VIPS);
} vip_stats SEC(".maps");

/* -DXDPLAB_LB_NO_COUNTERS: the same program without its counters (benchmarks/lb_counter_cost.py measures the
 * difference); the maps stay, so the same userspace fills it. */
#ifdef XDPLAB_LB_NO_COUNTERS
#define LB_COUNTERS 0
#else
#define LB_COUNTERS 1
#endif

static __always_inline void count(__u32 stat)
{
	__u64 *value;

	if (!LB_COUNTERS)
		return;
	value = bpf_map_lookup_elem(&lb_stats, &stat);
	if (value)
		*value += 1;
}

/* A 32-bit mix of the flow key's words (murmur3's finaliser after each word): spreads neighbouring addresses and
 * ports over the ring. */
static __always_inline __u32 mix(__u32 h, __u32 word)
{
	h ^= word;
	h ^= h >> 16;
	h *= 0x85ebca6bU;
	h ^= h >> 13;
	h *= 0xc2b2ae35U;
	h ^= h >> 16;
	return h;
}

static __always_inline __u32 flow_hash(const struct lb_flow_key *flow, __u32 flags)
{
	__u32 h = mix(0x9e3779b9U, flow->src);

	if (flags & LB_F_HASH_SRC_ONLY)
		return h;
	h = mix(h, flow->dst);
	h = mix(h, ((__u32)flow->sport << 16) | flow->dport);
	return mix(h, flow->proto);
}

/* The Internet checksum of a 20-byte IPv4 header whose check field is 0. */
static __always_inline __u16 ipv4_csum(const struct iphdr *iph)
{
	const __u16 *word = (const __u16 *)iph;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < (int)(sizeof(*iph) / 2); i++)
		sum += word[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Put an outer IPv4 header (IPIP) in front of the packet's IPv4 header, the Ethernet addresses swapped: 0, or -1
 * when the driver gives no room or the frame is too short. */
static __always_inline int encap_ipip(struct xdp_md *ctx, __be32 saddr, __be32 daddr, __u16 inner_len, __u8 tos)
{
	struct ethhdr *eth, *old_eth;
	struct iphdr *outer;
	void *data, *data_end;

	if (bpf_xdp_adjust_head(ctx, 0 - (int)sizeof(struct iphdr)))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	outer = data + sizeof(struct ethhdr);
	old_eth = data + sizeof(struct iphdr);
	if ((void *)(outer + 1) > data_end)
		return -1;
	/* the way back: to whoever sent it (the router in front of the balancer), from the port it came in on; the old
	 * header is read before the outer IPv4 header overwrites it */
	__builtin_memcpy(eth->h_dest, old_eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, old_eth->h_dest, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	outer->version = 4;
	outer->ihl = sizeof(*outer) / 4;
	outer->tos = tos;
	outer->tot_len = bpf_htons(inner_len + sizeof(*outer));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = saddr;
	outer->daddr = daddr;
	outer->check = ipv4_csum(outer);
	return 0;
}

SEC("xdp")
int xdp_lb(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct lb_flow_key flow = {};
	struct lb_vip_key vip = {};
	struct lb_flow_val *cached;
	struct lb_vip_meta *meta;
	struct lb_vip_stat *vstat;
	struct lb_real *real;
	struct lb_ctl *ctl;
	struct iphdr *iph;
	__u32 zero = 0, real_index, slot;
	__u16 inner_len;
	__u8 tos;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		goto not_lb;
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end || iph->ihl != 5 || (iph->frag_off & bpf_htons(0x3fff)))
		goto not_lb;
	if (iph->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)(iph + 1);

		if ((void *)(udp + 1) > data_end)
			goto not_lb;
		flow.sport = udp->source;
		flow.dport = udp->dest;
	} else if (iph->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = (void *)(iph + 1);

		if ((void *)(tcp + 1) > data_end)
			goto not_lb;
		flow.sport = tcp->source;
		flow.dport = tcp->dest;
	} else {
		goto not_lb;
	}
	flow.src = iph->saddr;
	flow.dst = iph->daddr;
	flow.proto = iph->protocol;

	vip.addr = flow.dst;
	vip.port = flow.dport;
	vip.proto = flow.proto;
	meta = bpf_map_lookup_elem(&vip_map, &vip);
	if (!meta) {
		count(LB_STAT_NOT_VIP);
		return XDP_PASS;
	}
	ctl = bpf_map_lookup_elem(&lb_ctl, &zero);
	if (!ctl)
		return XDP_ABORTED;

	cached = bpf_map_lookup_elem(&lru_mapping, &flow);
	if (cached) {
		real_index = cached->real;
		count(LB_STAT_LRU_HIT);
	} else {
		struct lb_flow_val fresh = {};
		__u32 *ring_slot;

		if (meta->index >= LB_MAX_VIPS)
			return XDP_ABORTED;
		slot = meta->index * LB_RING_SIZE + flow_hash(&flow, meta->flags) % LB_RING_SIZE;
		ring_slot = bpf_map_lookup_elem(&ch_rings, &slot);
		if (!ring_slot)
			return XDP_ABORTED;
		real_index = *ring_slot;
		fresh.real = real_index;
		bpf_map_update_elem(&lru_mapping, &flow, &fresh, BPF_ANY);
		count(LB_STAT_LRU_MISS);
	}
	real = bpf_map_lookup_elem(&reals, &real_index);
	if (!real || !real->addr) {
		count(LB_STAT_NO_REAL);
		return XDP_DROP;
	}
	vstat = LB_COUNTERS ? bpf_map_lookup_elem(&vip_stats, &meta->index) : NULL;
	inner_len = bpf_ntohs(iph->tot_len);
	tos = iph->tos;
	if (vstat) {
		vstat->packets += 1;
		vstat->bytes += inner_len;
	}
	if (encap_ipip(ctx, ctl->outer_src, real->addr, inner_len, tos)) {
		count(LB_STAT_ENCAP_FAIL);
		return XDP_DROP;
	}
	count(LB_STAT_TX);
	return XDP_TX;

not_lb:
	count(LB_STAT_NOT_LB);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
