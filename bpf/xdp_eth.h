/* SPDX-License-Identifier: GPL-2.0 */
/* Ethernet helpers shared by the XDP programs of bpf/ (xdp_bench's XDP_TX,
 * xdp_forward's redirect): included after <linux/if_ether.h>.
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

#endif /* XDPLAB_XDP_ETH_H */
