// SPDX-License-Identifier: GPL-2.0
/* xdp_latency_sink.bpf.c: the latency sink (Contract 2, latency).
 *
 * Attached to the generator's receive port. For every frame that carries a
 * struct latency_stamp (written by xdp_trafficgen.bpf.c with --latency-stamp)
 * it takes bpf_ktime_get_ns() - sent_ns, adds it to the per-CPU log-linear
 * histogram latency_histogram and to latency_summaries (count, sum, min,
 * max), follows the stream's sequence numbers (skipped numbers = gaps, older ones = late)
 * and drops the frame. Frames without a stamp are counted and dropped.
 * Both clocks are CLOCK_MONOTONIC of the same host, so the latency needs no
 * clock synchronisation; the controller merges the per-CPU histograms into
 * an HdrHistogram (plugins/module_utils/_latency.py).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_latency.h"
#include "xdp_trafficgen.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, LATENCY_BUCKETS);
} latency_histogram SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct latency_summary);
	__uint(max_entries, 1);
} latency_summaries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct latency_stream);
	__uint(max_entries, LATENCY_MAX_STREAMS);
} latency_streams SEC(".maps");

/* Index of the highest set bit of v (v > 0), by halving: BPF has no clz. */
static __always_inline __u32 highest_bit(__u64 v)
{
	__u32 bit = 0;

	if (v >> 32) { v >>= 32; bit += 32; }
	if (v >> 16) { v >>= 16; bit += 16; }
	if (v >> 8) { v >>= 8; bit += 8; }
	if (v >> 4) { v >>= 4; bit += 4; }
	if (v >> 2) { v >>= 2; bit += 2; }
	if (v >> 1)
		bit += 1;
	return bit;
}

/* The histogram bucket of a latency (see xdp_latency.h); ns < 2^LATENCY_MAX_EXP. */
static __always_inline __u32 latency_bucket(__u64 ns)
{
	__u32 exp, shift;

	if (ns < LATENCY_SUB_BUCKETS)
		return ns;
	exp = highest_bit(ns);
	shift = exp - LATENCY_SUB_BITS;
	/* (ns >> shift) is in [SUB_BUCKETS, 2 * SUB_BUCKETS): its low bits pick the sub-bucket */
	return LATENCY_SUB_BUCKETS * (shift + 1) + ((ns >> shift) - LATENCY_SUB_BUCKETS);
}

/* Gaps and reordering of the frame's stream. */
static __always_inline void follow_sequence(struct latency_summary *sum, __u32 stream, __u32 seq)
{
	struct latency_stream *st;

	if (stream >= LATENCY_MAX_STREAMS) {
		sum->unknown_stream++;
		return;
	}
	st = bpf_map_lookup_elem(&latency_streams, &stream);
	if (!st)
		return;
	if (!st->seen) {
		st->seen = 1;
		/* frames before the first one seen count as missing: the generator starts at 0 */
		sum->seq_gaps += seq;
		st->next_seq = seq + 1;
		return;
	}
	if ((__s32)(seq - st->next_seq) >= 0) {
		sum->seq_gaps += seq - st->next_seq;
		st->next_seq = seq + 1;
	} else {
		/* a frame counted in a gap arrives late after all */
		sum->seq_late++;
	}
}

SEC("xdp")
int xdp_latency_sink(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct latency_summary *sum;
	struct latency_stamp *stamp;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u64 now, sent, ns;
	__u32 key = 0, bucket;
	__u64 *slot;

	sum = bpf_map_lookup_elem(&latency_summaries, &key);
	if (!sum)
		return XDP_ABORTED;
	now = bpf_ktime_get_ns();
	ip = data + TG_ETH_LEN;
	stamp = data + TG_HDRS_LEN;
	if ((void *)(stamp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->ihl * 4 != TG_IPV4_LEN || ip->protocol != IPPROTO_UDP ||
	    stamp->magic != bpf_htonl(LATENCY_STAMP_MAGIC)) {
		sum->unstamped++;
		return XDP_DROP;
	}
	sent = stamp->sent_ns;
	follow_sequence(sum, stamp->stream, stamp->seq);
	if (sent > now) {
		sum->clock_behind++;
		return XDP_DROP;
	}
	ns = now - sent;
	if (ns >> LATENCY_MAX_EXP) {
		sum->over_range++;
		return XDP_DROP;
	}
	bucket = latency_bucket(ns);
	slot = bpf_map_lookup_elem(&latency_histogram, &bucket);
	if (slot)
		(*slot)++;
	if (!sum->count || ns < sum->min_ns)
		sum->min_ns = ns;
	if (ns > sum->max_ns)
		sum->max_ns = ns;
	sum->count++;
	sum->sum_ns += ns;
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
