// SPDX-License-Identifier: GPL-2.0
/* xdp_bench.bpf.c: the device-under-test program (Contract 1).
 *
 * One program per XDP action. Each touches the packet as touch_mode says
 * (like xdp_bench01_mem_access_cost) and, with count_mode COUNT_PROGRAM,
 * counts it per CPU and per RX queue in rxq_stats (like the kernel's
 * xdp_rxq_info sample). With COUNT_DRIVER it counts nothing: the driver's own
 * per-queue XDP counters count (ethtool -S), and since .rodata is frozen
 * before the verifier runs, the verifier sees the branch as never taken and
 * removes the rxq_stats lookup and writes from the loaded program (a counter
 * write costs 12-18 ns per packet on the virtual lab, bare XDP_DROP 69 ns).
 * .rodata holds only touch_mode, count_mode and redirect_ifindex: userspace
 * sets them by name through the BTF datasec, so no string literals or
 * bpf_printk here.
 *
 * Built with -DXDPLAB_NO_GLOBAL_DATA it is the non-CO-RE variant for kernels
 * without global data (before 5.2) or without BTF: touch_mode and count_mode
 * are compile-time constants (-DXDPLAB_TOUCH_MODE=, -DXDPLAB_COUNT_MODE=),
 * there is no .rodata, and -DXDPLAB_ONLY_DROP / _PASS / _TX keeps a single
 * program, so each object is one (action, touch mode, count mode). Redirect
 * needs redirect_ifindex at run time and has no such variant.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "xdp_bench.h"
#include "xdp_eth.h"

#ifdef XDPLAB_NO_GLOBAL_DATA
#if !defined(XDPLAB_TOUCH_MODE) || !defined(XDPLAB_COUNT_MODE)
#error "the non-CO-RE variant needs -DXDPLAB_TOUCH_MODE= and -DXDPLAB_COUNT_MODE="
#endif
#define touch_mode XDPLAB_TOUCH_MODE
#define count_mode XDPLAB_COUNT_MODE
#else
const volatile __u32 touch_mode = TOUCH_NONE;
const volatile __u32 redirect_ifindex = 0;
const volatile __u32 count_mode = COUNT_PROGRAM; /* enum count_mode */
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct rxq_counters);
	__uint(max_entries, RXQ_STATS_ENTRIES);
} rxq_stats SEC(".maps");

/* Touch the packet as configured; returns 0, or -1 if the frame is too
 * short to hold an Ethernet header for a mode that needs one.
 */
static __always_inline int touch_packet(struct xdp_md *ctx)
{
	void *data_end, *data;
	struct ethhdr *eth;

	if (touch_mode == TOUCH_NONE)
		return 0;
	data_end = (void *)(long)ctx->data_end;
	data = (void *)(long)ctx->data;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return -1;
	if (touch_mode == TOUCH_READ) {
		/* A volatile load so the header is really read from memory. */
		(void)((volatile struct ethhdr *)eth)->h_proto;
		return 0;
	}
	if (touch_mode == TOUCH_SWAPMAC)
		swap_mac(eth);
	return 0;
}

/* Count one packet on its RX queue in rxq_stats; returns the action to
 * take: the requested one, or XDP_ABORTED when the touch failed.
 */
static __always_inline int count_and_touch(struct xdp_md *ctx, int action)
{
	__u32 key = ctx->rx_queue_index;
	struct rxq_counters *rxq;
	void *data_end, *data;

	if (key >= MAX_RXQ)
		key = MAX_RXQ;
	rxq = bpf_map_lookup_elem(&rxq_stats, &key);
	if (!rxq)
		return XDP_ABORTED;
	data_end = (void *)(long)ctx->data_end;
	data = (void *)(long)ctx->data;
	rxq->packets++;
	rxq->bytes += data_end - data;
	if (touch_packet(ctx) < 0) {
		rxq->errors++;
		return XDP_ABORTED;
	}
	return action;
}

/* The action for one packet: count it as count_mode says, touch it as
 * touch_mode says. COUNT_DRIVER leaves the counting to the driver, so
 * nothing but the touch runs (a short frame is XDP_ABORTED, which the
 * driver counts as well).
 */
static __always_inline int handle(struct xdp_md *ctx, int action)
{
	if (count_mode == COUNT_DRIVER)
		return touch_packet(ctx) < 0 ? XDP_ABORTED : action;
	return count_and_touch(ctx, action);
}

#if !defined(XDPLAB_NO_GLOBAL_DATA) || defined(XDPLAB_ONLY_DROP)
SEC("xdp")
int xdp_bench_drop(struct xdp_md *ctx)
{
	return handle(ctx, XDP_DROP);
}

#endif

#if !defined(XDPLAB_NO_GLOBAL_DATA) || defined(XDPLAB_ONLY_PASS)
SEC("xdp")
int xdp_bench_pass(struct xdp_md *ctx)
{
	return handle(ctx, XDP_PASS);
}

#endif

#if !defined(XDPLAB_NO_GLOBAL_DATA) || defined(XDPLAB_ONLY_TX)
SEC("xdp")
int xdp_bench_tx(struct xdp_md *ctx)
{
	return handle(ctx, XDP_TX);
}

#endif

#ifndef XDPLAB_NO_GLOBAL_DATA
SEC("xdp")
int xdp_bench_redirect(struct xdp_md *ctx)
{
	int action = handle(ctx, XDP_REDIRECT);

	if (action != XDP_REDIRECT)
		return action;
	return bpf_redirect(redirect_ifindex, 0);
}
#endif

char _license[] SEC("license") = "GPL";
