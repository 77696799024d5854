# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The latency sink's maps (bpf/xdp_latency_sink.bpf.c, bpf/xdp_latency.h) read into an HdrHistogram.

The sink keeps, per CPU, a log-linear histogram of latencies in nanoseconds (``latency_histogram``, one
counter per bucket), a ``struct latency_summary`` (count, sum, min, max, sequence gaps and late frames, ...)
and, per stream, the next sequence number expected (``latency_streams``). This module mirrors the bucket
layout of xdp_latency.h (``bucket_of``, ``bucket_bounds``), sums the CPUs, and records every bucket at its
midpoint into an ``hdrh.histogram.HdrHistogram`` (PyPI ``hdrhistogram``): percentiles, the mean of the
buckets and the encoded form come from that library, not from code here. min, max and the mean in the result
are the sink's exact ones (its sum / count), not the buckets'.

Kernel access is in ``SinkMaps`` (through ``_libbpf``); everything else is pure and driven by unit tests.
"""

from __future__ import annotations

import ctypes
import struct

# --- the layout of xdp_latency.h -------------------------------------------------------------------
SUB_BITS = 7  # LATENCY_SUB_BITS
SUB_BUCKETS = 1 << SUB_BITS  # LATENCY_SUB_BUCKETS
MAX_EXP = 34  # LATENCY_MAX_EXP: values < 2**34 ns (17.2 s) are in the histogram
BUCKETS = SUB_BUCKETS * (MAX_EXP - SUB_BITS + 1)  # LATENCY_BUCKETS
MAX_STREAMS = 256  # LATENCY_MAX_STREAMS
STAMP_MAGIC = 0x584C4154  # LATENCY_STAMP_MAGIC, "XLAT"
# struct latency_stamp (packed): __be32 magic, __u32 seq, __u64 sent_ns, __u16 stream
STAMP = struct.Struct("<IIQH")
# struct latency_summary: ten __u64 in this order
SUMMARY_FIELDS = (
    "count",
    "sum_ns",
    "min_ns",
    "max_ns",
    "seq_gaps",
    "seq_late",
    "over_range",
    "clock_behind",
    "unknown_stream",
    "unstamped",
)
SUMMARY = struct.Struct("<" + "Q" * len(SUMMARY_FIELDS))
STREAM = struct.Struct("<II")  # struct latency_stream { __u32 next_seq; __u32 seen; }
COUNTER = struct.Struct("<Q")

# Map names as the kernel keeps them (BPF_OBJ_NAME_LEN - 1 = 15 characters).
MAP_NAME_LEN = 15
HISTOGRAM_MAP = "latency_histogram"[:MAP_NAME_LEN]
SUMMARY_MAP = "latency_summaries"[:MAP_NAME_LEN]
STREAMS_MAP = "latency_streams"[:MAP_NAME_LEN]
PROGRAM = "xdp_latency_sink"

# The HdrHistogram the buckets go into: 1 ns .. the sink's range, 3 significant digits (0.1 %: finer
# than the sink's 0.78 % buckets, so the merge adds no resolution loss of its own).
HDR_LOWEST_NS = 1
HDR_HIGHEST_NS = 1 << MAX_EXP
HDR_SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
UNDER_NS = 10_000  # the paper's "below 10 us"
HDRH_HINT = "the controller needs the PyPI package hdrhistogram (pip install -r requirements.txt)"


def bucket_of(ns):
    """The bucket of a latency of ``ns`` nanoseconds (0 <= ns < 2**MAX_EXP), as latency_bucket() in C."""
    ns = int(ns)
    if ns < 0 or ns >> MAX_EXP:
        raise ValueError(f"{ns} ns is outside the sink's range 0 .. 2**{MAX_EXP} ns")
    if ns < SUB_BUCKETS:
        return ns
    shift = ns.bit_length() - 1 - SUB_BITS
    return SUB_BUCKETS * (shift + 1) + ((ns >> shift) - SUB_BUCKETS)


def bucket_bounds(index):
    """(lowest, highest + 1) nanoseconds of a bucket."""
    index = int(index)
    if not 0 <= index < BUCKETS:
        raise ValueError(f"bucket {index} is outside 0 .. {BUCKETS - 1}")
    if index < SUB_BUCKETS:
        return index, index + 1
    shift = index // SUB_BUCKETS - 1
    low = (SUB_BUCKETS + index % SUB_BUCKETS) << shift
    return low, low + (1 << shift)


def bucket_midpoint(index):
    low, high = bucket_bounds(index)
    return (low + high - 1) // 2


def sum_summaries(per_cpu):
    """One summary from the per-CPU ``struct latency_summary`` values (bytes each): counters summed,
    min over the CPUs that counted something, max over all."""
    out = dict.fromkeys(SUMMARY_FIELDS, 0)
    mins = []
    for raw in per_cpu:
        vals = dict(zip(SUMMARY_FIELDS, SUMMARY.unpack_from(raw)))
        for name in SUMMARY_FIELDS:
            if name not in ("min_ns", "max_ns"):
                out[name] += vals[name]
        if vals["count"]:
            mins.append(vals["min_ns"])
        out["max_ns"] = max(out["max_ns"], vals["max_ns"])
    out["min_ns"] = min(mins) if mins else 0
    return out


def sum_buckets(per_key_per_cpu):
    """{bucket: count} (non-zero only) from a per-CPU array read: ``values[bucket][cpu]`` raw bytes."""
    out = {}
    for index, cpus in enumerate(per_key_per_cpu):
        n = sum(COUNTER.unpack_from(raw)[0] for raw in cpus)
        if n:
            out[index] = n
    return out


def hdr_histogram(buckets):
    """An HdrHistogram holding every bucket's count at the bucket's midpoint."""
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(f"cannot import hdrh ({exc}): {HDRH_HINT}") from exc
    hist = HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_SIGNIFICANT_DIGITS)
    for index, count in sorted(buckets.items()):
        hist.record_value(bucket_midpoint(index), count)
    return hist


def percentile_key(p):
    """50.0 -> 'p50', 99.9 -> 'p99_9', 99.99 -> 'p99_99'."""
    text = ("%g" % p).replace(".", "_")
    return "p" + text


def share_under(buckets, limit_ns=UNDER_NS):
    """Share (0..1) of the histogram's frames in buckets that lie wholly below ``limit_ns``.

    The one bucket that straddles the limit (0.78 % wide at most) is counted as not below: a lower bound.
    """
    total = sum(buckets.values())
    if not total:
        return None
    below = sum(n for i, n in buckets.items() if bucket_bounds(i)[1] <= limit_ns)
    return below / total


def stream_totals(streams):
    """Frames the streams' sequence numbers say were sent up to the last one received (sum of next_seq)."""
    return sum(next_seq for next_seq, seen in streams if seen)


def statistics(buckets, summary, streams=(), sent=None, seconds=None, encode=True):
    """The record's ``latency`` section from one read of the sink.

    ``sent``: frames the generator sent (its summary), for the loss against what was sent, which also counts
    frames lost after the last one received (no later sequence number shows those as a gap).
    ``seconds``: the generator's run, for the achieved offered rate.
    """
    count = summary["count"]
    hist = hdr_histogram(buckets) if buckets else None
    seq_lost = max(summary["seq_gaps"] - summary["seq_late"], 0)
    highest_seq = stream_totals(streams)
    received = count + summary["over_range"] + summary["clock_behind"]
    out = {
        "count": count,
        "average_ns": summary["sum_ns"] / count if count else None,
        "min_ns": summary["min_ns"] if count else None,
        "max_ns": summary["max_ns"] if count else None,
        "share_under_10us": share_under(buckets),
        "lost_in_sequence": seq_lost,
        "reordered": summary["seq_late"],
        "received": received,
        "over_range": summary["over_range"],
        "clock_behind": summary["clock_behind"],
        "unknown_stream": summary["unknown_stream"],
        "unstamped": summary["unstamped"],
        "streams": sum(1 for _next, seen in streams if seen),
        "bucket_relative_width": 1.0 / SUB_BUCKETS,
        "histogram": {
            "kind": "hdrhistogram",
            "lowest_ns": HDR_LOWEST_NS,
            "highest_ns": HDR_HIGHEST_NS,
            "significant_digits": HDR_SIGNIFICANT_DIGITS,
            "encoded": hist.encode().decode("ascii") if (hist is not None and encode) else None,
        },
    }
    for p in PERCENTILES:
        out[percentile_key(p) + "_ns"] = hist.get_value_at_percentile(p) if hist is not None else None
    out["hdr_mean_ns"] = hist.get_mean_value() if hist is not None else None
    if sent is not None:
        sent = int(sent)
        out["sent"] = sent
        out["lost"] = max(sent - received, 0)
        out["lost_after_last"] = max(sent - highest_seq, 0)
        out["loss_pct"] = 100.0 * out["lost"] / sent if sent else None
        # every frame sent is in the histogram, outside its range, or lost
        out["accounted"] = count + summary["over_range"] + summary["clock_behind"] + out["lost"] == sent
    if seconds:
        out["seconds"] = float(seconds)
        out["received_pps"] = received / float(seconds)
        if sent is not None:
            out["offered_pps"] = sent / float(seconds)
    return out


def decode_hdr(encoded):
    """The HdrHistogram of a record's ``latency.histogram.encoded`` (for the report's CDF)."""
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError(f"cannot import hdrh ({exc}): {HDRH_HINT}") from exc
    return HdrHistogram.decode(encoded)


def cdf_points(encoded, points=200):
    """[(latency_ns, cumulative share 0..1)] of an encoded HdrHistogram, from its recorded values."""
    hist = decode_hdr(encoded)
    total = hist.get_total_count()
    if not total:
        return []
    out = []
    seen = 0
    for item in hist.get_recorded_iterator():
        seen += item.count_at_value_iterated_to
        out.append((hist.get_highest_equivalent_value(item.value_iterated_to), seen / total))
    if len(out) > points:
        step = len(out) / points
        out = [out[int(i * step)] for i in range(points)] + [out[-1]]
    return out


class SinkMaps:
    """The maps of the xdp_latency_sink program attached to an interface (ids only, no pins)."""

    def __init__(self, libbpf, ifindex):
        self.libbpf = libbpf
        self.ifindex = ifindex
        prog_id, _mode = libbpf.attached_program(ifindex)
        if not prog_id:
            raise LookupError("no XDP program is attached")
        info = libbpf.prog_info(prog_id)
        if info.get("name") != PROGRAM[: MAP_NAME_LEN]:
            raise LookupError(f"the attached XDP program is {info.get('name')!r}, not {PROGRAM}")
        self.prog_id = prog_id
        self.program = info
        self.maps = {}
        for name in (HISTOGRAM_MAP, SUMMARY_MAP, STREAMS_MAP):
            found = libbpf.find_prog_map(prog_id, name=name)
            if not found:
                raise LookupError(f"program {PROGRAM} (id {prog_id}) has no map {name}: rebuild bpf/")
            self.maps[name] = found

    def read(self):
        """(buckets, summary, streams) summed over the CPUs."""
        hist = self.libbpf.read_percpu_array(self.maps[HISTOGRAM_MAP]["id"])
        summ = self.libbpf.read_percpu_array(self.maps[SUMMARY_MAP]["id"])[0]
        streams = [STREAM.unpack_from(raw) for raw in self.libbpf.read_array(self.maps[STREAMS_MAP]["id"])]
        return sum_buckets(hist), sum_summaries(summ), streams

    def reset(self):
        """Zero the histogram, the summaries and the streams (before a generator run: sequences restart)."""
        lib = self.libbpf.load_library()
        update = self.libbpf._signature(
            lib, "bpf_map_update_elem", ctypes.c_int, [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
        )
        ncpu = self.libbpf.num_possible_cpus()
        for name in (HISTOGRAM_MAP, SUMMARY_MAP, STREAMS_MAP):
            info = self.maps[name]
            per_cpu = info["type"] == self.libbpf.BPF_MAP_TYPE_PERCPU_ARRAY
            stride = (info["value_size"] + 7) // 8 * 8
            zero = ctypes.create_string_buffer(stride * ncpu if per_cpu else info["value_size"])
            fd = self.libbpf.map_fd_by_id(info["id"])
            try:
                for key in range(info["max_entries"]):
                    k = ctypes.create_string_buffer(int(key).to_bytes(info["key_size"], "little"), info["key_size"])
                    ret = update(fd, k, zero, 0)
                    if ret < 0:
                        raise self.libbpf.LibbpfError(f"bpf_map_update_elem({name}, key {key})", errno=-ret)
            finally:
                self.libbpf._close(fd)


# --- the report: our table beside the paper's, and the CDF -----------------------------------------------------
REPORT_COLUMNS = (
    "system", "label", "offered_pps", "achieved_pps", "count", "average_us", "min_us", "p50_us", "p90_us", "p99_us",
    "p99_9_us", "p99_99_us", "max_us", "share_below_10us_pct", "lost", "loss_pct", "reordered", "accounted",
)  # fmt: skip
PAPER_SYSTEMS = {"xdp": ("xdp_redirect",), "dpdk": ("dpdk_macswap", "dpdk")}


def _us(ns):
    return None if ns is None else round(ns / 1000.0, 3)


def report_rows(records):
    """One row per (system, offered load, repetition) of the ok records that have a latency section."""
    rows = []
    for rec in records:
        lat = rec.get("latency")
        if rec.get("status") != "ok" or not isinstance(lat, dict):
            continue
        point = rec.get("point", {})
        system = point.get("system")
        label = ((rec.get("provenance") or {}).get("system") or {}).get("label") or system
        share = lat.get("share_under_10us")
        rows.append({
            "system": system,
            "label": label,
            "offered_pps": round(float(point.get("offered_mpps", 0)) * 1e6),
            "achieved_pps": None if lat.get("offered_pps") is None else round(lat["offered_pps"], 1),
            "count": lat.get("count"),
            "average_us": _us(lat.get("average_ns")),
            "min_us": _us(lat.get("min_ns")),
            "p50_us": _us(lat.get("p50_ns")),
            "p90_us": _us(lat.get("p90_ns")),
            "p99_us": _us(lat.get("p99_ns")),
            "p99_9_us": _us(lat.get("p99_9_ns")),
            "p99_99_us": _us(lat.get("p99_99_ns")),
            "max_us": _us(lat.get("max_ns")),
            "share_below_10us_pct": None if share is None else round(100.0 * share, 2),
            "lost": lat.get("lost"),
            "loss_pct": None if lat.get("loss_pct") is None else round(lat["loss_pct"], 4),
            "reordered": lat.get("reordered"),
            "accounted": lat.get("accounted"),
            "encoded": (lat.get("histogram") or {}).get("encoded"),
            "repetition": rec.get("repetition"),
        })
    rows.sort(key=lambda r: (r["offered_pps"], r["system"] != "latency_floor", r["system"] or "", r["repetition"] or 0))
    return rows


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    return str(value)


def report_markdown(rows, reference_rows, title):
    """The table of ours (the floor as its own row, nothing subtracted) and the paper's beneath."""
    cols = ("label", "offered_pps", "achieved_pps", "average_us", "min_us", "p50_us", "p90_us", "p99_us", "p99_9_us",
            "p99_99_us", "max_us", "share_below_10us_pct", "lost", "reordered", "accounted")  # fmt: skip
    out = [f"# {title}", "", "Ours (in-band stamps; the floor row is what the method itself adds: no number is "
           "corrected by it):", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]  # fmt: skip
    out += ["| " + " | ".join(_cell(r[c]) for c in cols) + " |" for r in rows]
    if reference_rows:
        ref_cols = list(reference_rows[0])
        out += ["", "The paper's (T-Rex flow_stats_latency on ConnectX-5; XDP = devmap redirect, DPDK = testpmd "
                "macswap):", "", "| " + " | ".join(ref_cols) + " |", "|" + "---|" * len(ref_cols)]  # fmt: skip
        out += ["| " + " | ".join(str(r[c]) for c in ref_cols) + " |" for r in reference_rows]
    return "\n".join(out) + "\n"


NO_RECORDS_PLOT = "set label 'no latency records' at graph 0.4,0.5\nplot [1:10] 0 notitle"


def cdf_gnuplot(rows, name, title):
    """(script, {data file name: text}) of the latency CDF: log x, one line per system and load."""
    data, plots = {}, []
    for i, r in enumerate(r for r in rows if r.get("encoded")):
        fname = f"{name}.{i}.dat"
        pts = cdf_points(r["encoded"])
        data[fname] = "".join(f"{ns / 1000.0:.4f} {share:.6f}\n" for ns, share in pts)
        plots.append(f"'{fname}' using 1:2 with steps lw 2 title '{r['label']} @ {r['offered_pps']} pps'")
    script = "\n".join([
        "set terminal pngcairo size 1000,620 noenhanced",
        f"set output '{name}.png'",
        f"set title '{title}'",
        "set logscale x",
        "set xlabel 'latency (us, log scale)'",
        "set ylabel 'share of frames at or below'",
        "set yrange [0:1.02]",
        "set key bottom right",
        "set grid",
        ("plot " + ", \\\n     ".join(plots)) if plots else NO_RECORDS_PLOT,
    ]) + "\n"  # fmt: skip
    return script, data


# --- the hardware path: T-Rex latency streams into the same fields ----------------------------------------------
def _us_to_ns(us):
    return None if us is None else us * 1000.0


def from_trex(summary, seconds=None):
    """The record's latency section from a T-Rex latency stream (``_trex.latency_summary`` of one pg_id).

    The same keys as ``statistics``: percentiles from T-Rex's HdrHistogram when the server ran with ``--hdrh``
    (``histogram.kind`` hdrhistogram, values in microseconds: ``unit_ns`` 1000), else the legacy histogram's bucket
    upper edges (``histogram.kind`` trex_buckets: bounds, not values). ``average_ns`` is T-Rex's low-pass filtered
    average (not the mean of all frames); min/max are the measured period's with the HdrHistogram, else T-Rex's total_min
    (warm-up included) and a sampled total_max (``min_max_from``, see _trex.latency_summary).
    """
    pct = summary.get("percentiles_us") or {}
    errors = summary.get("errors") or {}
    sent, received = summary.get("tx_pkts"), summary.get("rx_pkts")
    share = (summary.get("share_below_us") or {}).get("10")
    hdrh = summary.get("hdrh")
    out = {
        "count": int(summary.get("samples") or received or 0),
        "average_ns": _us_to_ns(summary.get("average_us")),
        "average_kind": "trex_low_pass_filtered",
        "min_ns": _us_to_ns(summary.get("min_us")),
        "max_ns": _us_to_ns(summary.get("max_us")),
        "share_under_10us": None if share is None else share / 100.0,
        "lost_in_sequence": int(errors.get("seq_too_high", 0) or 0),
        "reordered": int(errors.get("out_of_order", 0) or 0) + int(errors.get("seq_too_low", 0) or 0),
        "received": received,
        "source": "trex",
        "pg_id": summary.get("pg_id"),
        "percentiles_from": summary.get("percentiles_from"),
        "histogram": {
            "kind": "hdrhistogram" if hdrh else "trex_buckets",
            "unit_ns": 1000,
            "encoded": hdrh,
            "buckets_us": None if hdrh else summary.get("histogram"),
        },
    }
    for p in PERCENTILES:
        key = percentile_key(p)
        value = pct.get(key)
        out[key + "_ns"] = None if value is None else int(value * 1000)
    if sent is not None and received is not None:
        out["sent"] = int(sent)
        out["lost"] = max(int(sent) - int(received), 0)
        out["loss_pct"] = 100.0 * out["lost"] / sent if sent else None
        out["accounted"] = int(received) + out["lost"] == int(sent)
    if seconds:
        out["seconds"] = float(seconds)
        if sent is not None:
            out["offered_pps"] = sent / float(seconds)
        if received is not None:
            out["received_pps"] = received / float(seconds)
    return out
