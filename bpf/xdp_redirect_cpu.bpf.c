// SPDX-License-Identifier: GPL-2.0
/* xdp_redirect_cpu.bpf.c: receive on one CPU, forward from another (XDP_REDIRECT into a cpumap; the
 * XDP paper's CPU redirect, xdp-tools' xdp_redirect_cpu with its --redirect-device).
 *
 * xdp_redirect_cpu runs in the ingress port's receive path (its NAPI, on the receiving CPU) and only
 * enqueues each frame to the cpumap entry of remote_cpu. The kernel's cpumap kthread of that CPU dequeues
 * the frames (at most qsize in flight, the entry's bpf_cpumap_val) and runs the entry's program,
 * xdp_cpumap_fwd, there: it swaps the Ethernet addresses and redirects out of the egress port through the
 * devmap tx_ports, the work xdp_forward's xdp_fwd_redirect_map does on the receiving CPU.
 *
 * Userspace fills both maps after load (xdplab.testbed.xdp_program):
 *   variables:   {remote_cpu: N}
 *   map_entries: {cpu_map: {N: {qsize: Q, program: xdp_cpumap_fwd}}, tx_ports: {0: <egress interface>}}
 * An empty cpumap or devmap entry makes bpf_redirect_map return XDP_ABORTED: the frame is dropped and
 * counted by the driver (or the cpumap tracepoint), never silently as forwarded.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "xdp_forward.h"
#include "xdp_cpumap.h"
#include "xdp_eth.h"

/* the CPU that forwards: key of cpu_map */
const volatile __u32 remote_cpu = 0;

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32); /* egress ifindex */
	__uint(max_entries, TX_PORTS_ENTRIES);
} tx_ports SEC(".maps");

SEC("xdp")
int xdp_redirect_cpu(struct xdp_md *ctx)
{
	return bpf_redirect_map(&cpu_map, remote_cpu, XDP_ABORTED);
}

SEC("xdp/cpumap")
int xdp_cpumap_fwd(struct xdp_md *ctx)
{
	return swap_mac_and_redirect(ctx, &tx_ports, TX_PORT_KEY);
}

char _license[] SEC("license") = "GPL";
