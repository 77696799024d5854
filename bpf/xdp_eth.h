/* SPDX-License-Identifier: GPL-2.0 */
/* Ethernet helpers shared by the XDP programs of bpf/ (xdp_bench's XDP_TX,
 * xdp_forward's redirect, xdp_redirect_cpu's cpumap program): included after <linux/bpf.h>,
 * <linux/if_ether.h> and <bpf/bpf_helpers.h>.
 */
#ifndef XDPLAB_XDP_ETH_H
#define XDPLAB_XDP_ETH_H

/* Swap the Ethernet source and destination addresses in place. */
static __always_inline void swap_mac(struct ethhdr *eth)
{
	__u8 tmp[ETH_ALEN];

	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
}

/* Swap the frame's Ethernet addresses and redirect it out of the port that the devmap ports holds under
 * key. A frame shorter than an Ethernet header, or an empty entry, is aborted: the driver counts it as a
 * drop, never as forwarded.
 */
static __always_inline int swap_mac_and_redirect(struct xdp_md *ctx, void *ports, __u32 key)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)(long)ctx->data;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	swap_mac(eth);
	return bpf_redirect_map(ports, key, XDP_ABORTED);
}

#endif /* XDPLAB_XDP_ETH_H */
