// SPDX-License-Identifier: GPL-2.0
/* xdp_trafficgen.bpf.c: the live-frames traffic generator program
 * (Contract 2). Run through BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES by
 * xdplab-trafficgen: sets the UDP destination port of the frame to the next
 * flow of the running CPU and redirects it out of egress_ifindex.
 * Live frames are recycled between runs without being re-initialised, so the
 * port is rewritten on every packet, and so are the Ethernet and IPv4 headers
 * (frame_hdrs, set by userspace from the frame it built): on veth the DUT
 * receives the generator's own page, and whatever it changes in place (a Linux
 * router's new MACs and TTL, XDP_TX's swapped MACs) came back with the page
 * and was sent again, until 0.4.0 (issue 28: 71 % of the frames reaching the
 * vlab's Linux router were for another host). The UDP payload is written once
 * (UDP checksum 0, so no checksum update is needed).
 * With stamp_latency set (xdplab-trafficgen --latency-stamp) it also writes a
 * struct latency_stamp (xdp_latency.h) at the start of the UDP payload: the
 * CPU's next sequence number and bpf_ktime_get_ns(), read by
 * xdp_latency_sink.bpf.c where the frame arrives. Off, the verifier removes
 * the stamping code (.rodata is frozen), so the drop experiments are unchanged.
 * With pace_frames set (xdplab-trafficgen --rate) the first frame of each
 * group first waits for the group's time in the CPU's struct pace_state
 * (xdp_trafficgen.h); off, the verifier removes that code too, and full-rate
 * runs are unchanged.
 * With addr_lists set (xdplab-trafficgen --dst-list/--src-list) each frame
 * takes the next IPv4 destination and/or source of the lists in dst_addrs and
 * src_addrs, from the running CPU's cursor (struct addr_cursor), and its IPv4
 * header checksum is updated for them (RFC 1624; the UDP checksum stays 0).
 * Off, the verifier removes that code as well: one address costs nothing.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_latency.h"
#include "xdp_trafficgen.h"

const volatile __u32 egress_ifindex = 0;
const volatile __u32 stamp_latency = 0; /* 1: write a struct latency_stamp into each frame */
const volatile __u32 pace_frames = 0;   /* 1: frames wait for their group's time in pace_states */
const volatile __u32 addr_lists = 0;    /* TG_LIST_DST | TG_LIST_SRC: addresses from dst_addrs / src_addrs */
/* The frame's Ethernet and IPv4 headers as userspace built them, written back on every packet. */
const volatile __u8 frame_hdrs[TG_ETH_LEN + TG_IPV4_LEN] __attribute__((aligned(8))) = {};

/* frame_hdrs into the frame: 4 x 8 + 2 bytes, each read as volatile (a plain copy would be folded into the
 * initialiser's zeros by the compiler: userspace sets the values only before the program loads). */
static __always_inline void write_hdrs(void *data)
{
	const volatile __u64 *src = (const volatile __u64 *)frame_hdrs;
	__u64 *dst = data;

	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
	*(__u16 *)(data + 32) = *(const volatile __u16 *)(frame_hdrs + 32);
}

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

/* When the next group of frames of each sending CPU may leave (per-CPU array, key 0). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct pace_state);
	__uint(max_entries, 1);
} pace_states SEC(".maps");

/* The address lists (--dst-list, --src-list), network byte order; userspace
 * sets max_entries to the list's length (1 when unused) before the load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, TG_MAX_ADDRS);
} dst_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, TG_MAX_ADDRS);
} src_addrs SEC(".maps");

/* Where each sending CPU is in the lists (per-CPU array, key 0). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct addr_cursor);
	__uint(max_entries, 1);
} addr_cursors SEC(".maps");

/* bpf_loop callback: stop once the clock has reached *ctx. */
static long clock_reached(__u32 index, void *ctx)
{
	return bpf_ktime_get_ns() >= *(__u64 *)ctx;
}

/* At the first frame of a group, wait until the group is due, then move the
 * CPU's schedule on by one group.
 */
static __always_inline void wait_for_slot(void)
{
	struct pace_state *pace;
	__u64 now, leave, earliest;
	__u32 key = 0;

	pace = bpf_map_lookup_elem(&pace_states, &key);
	if (!pace || !pace->gap_ns)
		return;
	if (pace->group_left) {
		pace->group_left--;
		return;
	}
	now = bpf_ktime_get_ns();
	if (!pace->next_ns)
		pace->next_ns = now;
	if (now > pace->next_ns + PACE_MAX_LAG_NS) {
		pace->dropped_ns += now - PACE_MAX_LAG_NS - pace->next_ns;
		pace->next_ns = now - PACE_MAX_LAG_NS;
	}
	leave = pace->next_ns;
	/* behind the schedule: catch up, but not faster than PACE_CATCHUP_DIVISOR x the rate */
	earliest = pace->last_ns + pace->gap_ns / PACE_CATCHUP_DIVISOR;
	if (pace->last_ns && leave < earliest)
		leave = earliest;
	if (now < leave) {
		bpf_loop(PACE_MAX_SPINS, clock_reached, &leave, 0);
		now = bpf_ktime_get_ns();
	}
	pace->last_ns = now;
	pace->next_ns += pace->gap_ns;
	pace->group_left = pace->group_frames ? pace->group_frames - 1 : 0;
}

/* Write addr (network byte order, as it lies in memory) at offset off of the
 * IPv4 header ip and update the header checksum: HC' = ~(~HC + ~m + m')
 * (RFC 1624, eqn. 3) over the two 16-bit words that change. A ones'
 * complement sum is the same in either byte order, so the words are added as
 * they lie in memory.
 */
static __always_inline void rewrite_addr(__u8 *ip, int off, __u32 addr)
{
	__u16 *check = (__u16 *)(ip + 10), *old = (__u16 *)(ip + off), new[2];
	__u32 sum;

	__builtin_memcpy(new, &addr, sizeof(new));
	sum = (__u16)~*check;
	sum += (__u16)~old[0];
	sum += (__u16)~old[1];
	sum += new[0];
	sum += new[1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	old[0] = new[0];
	old[1] = new[1];
	*check = (__u16)~sum;
}

/* The list's address at *next, and *next moved on, round robin over count. */
static __always_inline int next_addr(void *list, __u32 *next, __u32 count, __u32 *addr)
{
	__u32 *value = bpf_map_lookup_elem(list, next);

	if (!value)
		return -1;
	*addr = *value;
	if (++*next >= count)
		*next = 0;
	return 0;
}

/* The CPU's next destination and/or source from the lists into the frame. */
static __always_inline int write_addrs(void *data)
{
	__u8 *ip = (__u8 *)data + TG_ETH_LEN;
	struct addr_cursor *cur;
	__u32 key = 0, addr;

	cur = bpf_map_lookup_elem(&addr_cursors, &key);
	if (!cur)
		return -1;
	if ((addr_lists & TG_LIST_DST) && cur->dst_count) {
		if (next_addr(&dst_addrs, &cur->dst_next, cur->dst_count, &addr))
			return -1;
		rewrite_addr(ip, 16, addr); /* struct iphdr: daddr */
	}
	if ((addr_lists & TG_LIST_SRC) && cur->src_count) {
		if (next_addr(&src_addrs, &cur->src_next, cur->src_count, &addr))
			return -1;
		rewrite_addr(ip, 12, addr); /* struct iphdr: saddr */
	}
	return 0;
}

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
	write_hdrs(data);
	if (addr_lists && write_addrs(data))
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
	if (pace_frames)
		wait_for_slot();
	if (stamp_latency && write_stamp(data, data_end))
		return XDP_ABORTED;
	return bpf_redirect(egress_ifindex, 0);
}

/* Attached (driver mode, through a BPF link) by xdplab-trafficgen to its egress NIC for the run when that NIC has no
 * XDP program: a NIC driver takes redirected frames (ndo_xdp_xmit) only while one is attached (virtio_net answers
 * -ENXIO otherwise). Whatever the NIC receives goes on to the stack as before. */
SEC("xdp")
int xdp_trafficgen_egress(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
