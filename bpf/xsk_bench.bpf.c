// SPDX-License-Identifier: GPL-2.0
/* xsk_bench.bpf.c: XDP program of xdplab-xsk-bench.
 *
 * Redirects every frame received on RX queue q to the AF_XDP socket bound
 * to q (XSKMAP key q). A queue without a socket passes its frames to the
 * stack (bpf_redirect_map's fallback action).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xsk_bench.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XSK_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_bench_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
