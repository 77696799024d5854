// SPDX-License-Identifier: GPL-2.0
/* xdp_trafficgen.bpf.c: the live-frames traffic generator program
 * (Contract 2). Run through BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES by
 * xdplab-trafficgen: sets the UDP destination port of the frame to the next
 * flow of the running CPU and redirects it out of egress_ifindex.
 * Live frames are recycled between runs without being re-initialised, so the
 * port is rewritten on every packet; everything else is written once by
 * userspace (UDP checksum 0, so no checksum update is needed).
 * With stamp_latency set (xdplab-trafficgen --latency-stamp) it also writes a
 * struct latency_stamp (xdp_latency.h) at the start of the UDP payload: the
 * CPU's next sequence number and bpf_ktime_get_ns(), read by
 * xdp_latency_sink.bpf.c where the frame arrives. Off, the verifier removes
 * the stamping code (.rodata is frozen), so the drop experiments are unchanged.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_latency.h"
#include "xdp_trafficgen.h"

const volatile __u32 egress_ifindex = 0;
const volatile __u32 stamp_latency = 0; /* 1: write a struct latency_stamp into each frame */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct flow_cursor);
	__uint(max_entries, 1);
} flow_cursors SEC(".maps");

/* The next stamp sequence number of each sending CPU (per-CPU array, key 0). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} stamp_sequences SEC(".maps");

/* Write the stream's next sequence number and the time into the payload. */
static __always_inline int write_stamp(void *data, void *data_end)
{
	struct latency_stamp *stamp = data + TG_HDRS_LEN;
	__u32 key = 0, *seq;

	if ((void *)(stamp + 1) > data_end)
		return -1;
	seq = bpf_map_lookup_elem(&stamp_sequences, &key);
	if (!seq)
		return -1;
	stamp->magic = bpf_htonl(LATENCY_STAMP_MAGIC);
	stamp->seq = (*seq)++;
	stamp->stream = bpf_get_smp_processor_id();
	/* last: as late as possible before the frame leaves */
	stamp->sent_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("xdp")
int xdp_trafficgen(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct flow_cursor *cur;
	__be16 *dport;
	__u32 key = 0;

	if (data + TG_HDRS_LEN > data_end)
		return XDP_ABORTED;
	cur = bpf_map_lookup_elem(&flow_cursors, &key);
	if (!cur)
		return XDP_ABORTED;
	if (cur->nflows) {
		/* struct udphdr: source (2 bytes), then dest. */
		dport = data + TG_UDP_OFFSET + sizeof(__be16);
		*dport = bpf_htons((__u16)cur->port);
		if (++cur->next < cur->nflows) {
			cur->port += cur->stride;
		} else {
			cur->next = 0;
			cur->port = cur->first_port;
		}
	}
	if (stamp_latency && write_stamp(data, data_end))
		return XDP_ABORTED;
	return bpf_redirect(egress_ifindex, 0);
}

char _license[] SEC("license") = "GPL";
