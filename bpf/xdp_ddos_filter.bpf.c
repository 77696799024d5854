// SPDX-License-Identifier: GPL-2.0
/* xdp_ddos_filter.bpf.c: inline DoS mitigation as in the XDP paper's section 5 (issue 27): drop the attack's UDP
 * destination ports on the receiving CPU, send everything else through a cpumap to the application's CPU, where the
 * cpumap kthread builds the skbs and hands them to the stack (the entry has no program of its own).
 *
 * .rodata (plugins/modules/xdp_program.py variables):
 *   attack_port_min, attack_port_max  UDP destination ports dropped (inclusive, host order; default 9..9, the
 *                                     discard port xdp-bench's l4-filter drops)
 *   app_cpu                           key of cpu_map: the CPU the rest goes to
 *   count_mode                        1: count dropped and redirected frames per CPU in ddos_stats; 0: no map
 *                                     writes (the driver's XDP counters count the drops)
 * map_entries: {cpu_map: {APP_CPU: {qsize: Q}}} (plugins/module_utils/_systems.py cpumap_entries). An empty
 * cpumap entry makes the redirect fail: XDP_ABORTED, counted by the driver, never passed silently.
 *
 * ddos_stats (per-CPU array): key 0 = frames dropped (the attack), key 1 = frames redirected to app_cpu.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp_cpumap.h"

#define DDOS_DROPPED 0
#define DDOS_REDIRECTED 1

const volatile __u16 attack_port_min = 9;
const volatile __u16 attack_port_max = 9;
const volatile __u32 app_cpu = 0;
const volatile __u32 count_mode = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2);
} ddos_stats SEC(".maps");

static __always_inline void count(__u32 key)
{
	__u64 *n;

	if (!count_mode)
		return;
	n = bpf_map_lookup_elem(&ddos_stats, &key);
	if (n)
		*n += 1;
}

/* 1 when the frame is IPv4 UDP to one of the attack ports */
static __always_inline int is_attack(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp;
	__u16 port;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->ihl != 5) /* options: not the flood's frames; the stack decides */
		return 0;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return 0;
	port = bpf_ntohs(udp->dest);
	return port >= attack_port_min && port <= attack_port_max;
}

SEC("xdp")
int xdp_ddos_filter(struct xdp_md *ctx)
{
	if (is_attack(ctx)) {
		count(DDOS_DROPPED);
		return XDP_DROP;
	}
	count(DDOS_REDIRECTED);
	return bpf_redirect_map(&cpu_map, app_cpu, XDP_ABORTED);
}

char _license[] SEC("license") = "GPL";
