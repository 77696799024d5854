// SPDX-License-Identifier: GPL-2.0
/* xdp_bare_drop.bpf.c: drop everything and do nothing else. The baseline
 * that benchmarks/bpf_overhead.sh compares xdp_bench_drop against.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_bare_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
