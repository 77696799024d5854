// SPDX-License-Identifier: GPL-2.0
/* xdp_forward.bpf.c: forward every frame out of another port through a devmap (the XDP paper's
 * XDP_REDIRECT test; kernel sample xdp_redirect_map). The Ethernet addresses are swapped first, as the
 * sample does, so the program does the same work per frame as xdp_bench_tx with touch swapmac.
 *
 * tx_ports holds the egress ifindex under key TX_PORT_KEY; userspace fills it after load
 * (xdplab.testbed.xdp_program map_entries: {tx_ports: {0: <egress interface>}}). An empty entry makes
 * bpf_redirect_map return the flags' low bits (XDP_ABORTED = 0): the frame is dropped and the driver counts
 * it as a drop, never silently as forwarded.
 *
 * The program counts nothing: the drivers' own per-queue counters count (veth rx_queue_N_xdp_redirect on the
 * ingress port, tx_queue_N_xdp_xmit on the egress port; plugins/module_utils/_driver_counters.py).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "xdp_forward.h"
#include "xdp_eth.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32); /* egress ifindex */
	__uint(max_entries, TX_PORTS_ENTRIES);
} tx_ports SEC(".maps");

SEC("xdp")
int xdp_fwd_redirect_map(struct xdp_md *ctx)
{
	return swap_mac_and_redirect(ctx, &tx_ports, TX_PORT_KEY);
}

char _license[] SEC("license") = "GPL";
