// SPDX-License-Identifier: GPL-2.0
/* xdp_lb_check.bpf.c: the far side of the load-balancer experiment, in place of xdp_bare_drop on the generator's
 * port the encapsulated frames come back to. It drops every frame (so the driver's per-queue XDP drop counter counts
 * them, as it counts xdp_bare_drop's) and checks each IPIP frame on the way:
 *   - the outer header's checksum (all 20 bytes sum to 0xffff);
 *   - the outer source is the balancer's address (check_ctl[0].outer_src);
 *   - the outer destination is a real (check_reals: address -> its VIP's index), and a real of the VIP the inner
 *     packet was sent to (check_vips: the inner destination address, port, protocol -> VIP index; vip_map's twin).
 * check_stats counts each verdict (enum lb_check_stat); xdplab.testbed.xdp_lb_config fills and reads the maps.
 * Its cost on the generator's receive CPU: two hash lookups and a 20-byte sum per frame.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp_lb.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __be32);
	__type(value, __u32);
	__uint(max_entries, LB_MAX_REALS);
} check_reals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct lb_vip_key);
	__type(value, struct lb_vip_meta);
	__uint(max_entries, LB_MAX_VIPS);
} check_vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct lb_ctl);
	__uint(max_entries, 1);
} check_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, LB_CHECK_COUNT);
} check_stats SEC(".maps");

static __always_inline int verdict(__u32 stat)
{
	__u64 *value = bpf_map_lookup_elem(&check_stats, &stat);

	if (value)
		*value += 1;
	return XDP_DROP;
}

SEC("xdp")
int xdp_lb_check(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct lb_vip_key vip = {};
	struct lb_vip_meta *meta;
	struct iphdr *outer, *inner;
	struct udphdr *ports;
	struct lb_ctl *ctl;
	__u32 zero = 0, sum = 0, *real_vip;
	const __u16 *word;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return verdict(LB_CHECK_NOT_IPIP);
	outer = (void *)(eth + 1);
	if ((void *)(outer + 1) > data_end || outer->protocol != IPPROTO_IPIP || outer->ihl != 5)
		return verdict(LB_CHECK_NOT_IPIP);
	word = (const __u16 *)outer;
#pragma unroll
	for (int i = 0; i < (int)(sizeof(*outer) / 2); i++)
		sum += word[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		return verdict(LB_CHECK_BAD_CSUM);
	ctl = bpf_map_lookup_elem(&check_ctl, &zero);
	if (!ctl || outer->saddr != ctl->outer_src)
		return verdict(LB_CHECK_BAD_SRC);
	real_vip = bpf_map_lookup_elem(&check_reals, &outer->daddr);
	if (!real_vip)
		return verdict(LB_CHECK_NOT_REAL);
	inner = (void *)(outer + 1);
	ports = (void *)(inner + 1);
	if ((void *)(ports + 1) > data_end || inner->ihl != 5)
		return verdict(LB_CHECK_OTHER_VIP);
	/* UDP and TCP both start with the source and destination ports */
	vip.addr = inner->daddr;
	vip.port = ports->dest;
	vip.proto = inner->protocol;
	meta = bpf_map_lookup_elem(&check_vips, &vip);
	if (!meta || meta->index != *real_vip)
		return verdict(LB_CHECK_OTHER_VIP);
	return verdict(LB_CHECK_REAL_OK);
}

char _license[] SEC("license") = "GPL";
