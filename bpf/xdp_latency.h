/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_latency.h: the in-band latency stamp and the sink's maps, shared by
 * xdp_trafficgen.bpf.c (writes the stamp), xdp_latency_sink.bpf.c (reads it)
 * and the controller (plugins/module_utils/_latency.py mirrors the bucket
 * layout; docs/ARCHITECTURE.md, Contract 2).
 *
 * The stamp sits at the start of the UDP payload, like pktgen's header
 * (magic, sequence, time). A 64-byte frame has 60 - 42 = 18 payload bytes:
 * the stamp is packed to fit exactly.
 */
#ifndef XDP_LATENCY_H
#define XDP_LATENCY_H

#include <linux/types.h>

/* "XLAT": tells a stamped frame from any other. Stored big-endian. */
#define LATENCY_STAMP_MAGIC 0x584c4154U

struct latency_stamp {
	__be32 magic;    /* LATENCY_STAMP_MAGIC */
	__u32 seq;       /* per stream, from 0, +1 per frame (host order) */
	__u64 sent_ns;   /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) when the generator program ran */
	__u16 stream;    /* the sending CPU: one sequence per stream */
} __attribute__((packed));

/* Streams the sink follows (sender CPUs); a higher id is counted as unknown. */
#define LATENCY_MAX_STREAMS 256

/* The histogram: log-linear in nanoseconds, like HdrHistogram with 2 significant
 * digits. Values below 2^LATENCY_SUB_BITS ns have a bucket each (1 ns wide);
 * above, each power of two [2^e, 2^(e+1)) is split into 2^LATENCY_SUB_BITS
 * buckets of width 2^(e - LATENCY_SUB_BITS), so a bucket is at most
 * 1 / 2^LATENCY_SUB_BITS = 0.78 % of its values wide.
 * Range: 0 .. 2^LATENCY_MAX_EXP ns = 17.2 s (>= 10 s); longer is counted in
 * latency_summary.over_range.
 */
#define LATENCY_SUB_BITS 7
#define LATENCY_SUB_BUCKETS (1U << LATENCY_SUB_BITS)
#define LATENCY_MAX_EXP 34
#define LATENCY_BUCKETS (LATENCY_SUB_BUCKETS * (LATENCY_MAX_EXP - LATENCY_SUB_BITS + 1))

/* Per CPU of the sink (per-CPU array, key 0); the controller sums the CPUs. */
struct latency_summary {
	__u64 count;        /* stamped frames put in the histogram */
	__u64 sum_ns;       /* sum of their latencies */
	__u64 min_ns;       /* smallest latency; 0 while count == 0 */
	__u64 max_ns;       /* largest latency */
	__u64 seq_gaps;     /* sequence numbers skipped (frames missing when a later one came) */
	__u64 seq_late;     /* frames older than the expected number: reordered (or duplicated) */
	__u64 over_range;   /* latency >= 2^LATENCY_MAX_EXP ns (not in the histogram) */
	__u64 clock_behind; /* stamp later than the sink's clock (cannot happen on one host) */
	__u64 unknown_stream; /* stream id >= LATENCY_MAX_STREAMS */
	__u64 unstamped;    /* frames without a stamp (dropped, not counted otherwise) */
};

/* Per stream (array, key = stream id): the next sequence number expected.
 * Lost = seq_gaps - seq_late (a late frame was counted in a gap before).
 * One stream comes from one sender CPU and, on veth and with RSS by flow,
 * arrives on one RX queue, so one sink CPU updates it at a time.
 */
struct latency_stream {
	__u32 next_seq;  /* expected sequence number */
	__u32 seen;      /* 0 until the first frame of the stream */
};

#endif /* XDP_LATENCY_H */
