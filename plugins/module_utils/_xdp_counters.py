# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pure computations on XDP counters: no kernel access, so unit tests and fixtures drive them.

A *snapshot* is ``{(queue, cpu): (packets, bytes, errors)}`` of cumulative counters (what the
``rxq_stats`` per-CPU array of bpf/xdp_bench.bpf.c holds; Contract 1). Rates come from two snapshots and
their time.monotonic() timestamps. The same per-CPU / per-RX-queue view can also be built from the
text that the kernel sample ``xdp_rxq_info`` prints (parse_xdp_rxq_info), which is how the XDP paper's
lab notes recorded their runs.
"""

from __future__ import annotations

import re
import struct

RXQ_COUNTERS = struct.Struct("<QQQ")  # struct rxq_counters { __u64 packets; __u64 bytes; __u64 errors; }
MAX_RXQ = 64  # key MAX_RXQ counts every queue index >= MAX_RXQ
DEFAULT_THRESHOLD = 1.25
# A queue or CPU is "active" when it carries at least this share of the busiest one; stray packets
# (ARP, IPv6 ND) on an otherwise idle queue would otherwise drag the mean down and fake an imbalance.
ACTIVE_SHARE = 0.01


def decode_rxq_stats(values):
    """Snapshot from a per-CPU array read: ``values[key][cpu]`` is the raw value bytes.

    Only non-zero entries are kept.
    """
    snap = {}
    for queue, per_cpu in enumerate(values):
        for cpu, raw in enumerate(per_cpu):
            counters = RXQ_COUNTERS.unpack_from(raw.ljust(RXQ_COUNTERS.size, b"\0"))
            if any(counters):
                snap[(queue, cpu)] = counters
    return snap


def _delta(before, after):
    # a counter that went down was reset (program replaced): count from zero
    return after - before if after >= before else after


def snapshot_delta(before, after):
    """{(queue, cpu): (packets, bytes, errors)} increments between two snapshots (zero entries dropped)."""
    out = {}
    for key, now in after.items():
        then = before.get(key, (0, 0, 0))
        d = tuple(_delta(a, b) for a, b in zip(then, now))
        if any(d):
            out[key] = d
    return out


def rates(delta, seconds):
    """{(queue, cpu): (pps, bytes/s, errors/s)} from a delta over ``seconds``."""
    if seconds <= 0:
        raise ValueError(f"sampling interval must be positive, got {seconds}")
    return {key: tuple(v / seconds for v in vals) for key, vals in delta.items()}


def aggregate(rxq_cpu_pps):
    """per_cpu, per_rxq and rxq_cpu lists from ``{(queue, cpu): pps}`` (non-zero entries only)."""
    per_cpu, per_rxq, cpus_of = {}, {}, {}
    for (queue, cpu), pps in rxq_cpu_pps.items():
        if not pps:
            continue
        per_cpu[cpu] = per_cpu.get(cpu, 0) + pps
        per_rxq[queue] = per_rxq.get(queue, 0) + pps
        cpus_of.setdefault(queue, set()).add(cpu)
    return {
        "per_cpu": [{"cpu": c, "pps": per_cpu[c]} for c in sorted(per_cpu)],
        "per_rxq": [{"queue": q, "pps": per_rxq[q], "cpus": sorted(cpus_of[q])} for q in sorted(per_rxq)],
        "rxq_cpu": [
            {"queue": q, "cpu": c, "pps": p} for (q, c), p in sorted(rxq_cpu_pps.items()) if p
        ],
        "total_pps": sum(per_cpu.values()),
    }


def _spread(values):
    """(max/mean, min/mean, index of max, active entries) over the active entries of {id: pps}."""
    if not values:
        return None
    top = max(values.values())
    active = {k: v for k, v in values.items() if top > 0 and v >= top * ACTIVE_SHARE}
    if not active:
        return None
    mean = sum(active.values()) / len(active)
    busiest = max(active, key=lambda k: (active[k], -k))
    return {
        "max_over_mean": top / mean,
        "min_over_mean": min(active.values()) / mean,
        "busiest": busiest,
        "busiest_pps": active[busiest],
        "mean_pps": mean,
        "active": sorted(active),
    }


def _fmt(pps):
    return f"{round(pps):,}"


def imbalance(per_cpu, per_rxq, threshold=DEFAULT_THRESHOLD):
    """Verdict on how evenly packets spread over the active CPUs and RX queues.

    ``per_cpu`` / ``per_rxq`` are the lists aggregate() returns. Flags when the busiest active CPU or
    queue exceeds ``threshold`` times the mean of the active ones: with 7 flows on 6 queues one CPU
    handles two flows, 2x the others (the paper's stream_count=7 run).
    """
    if threshold <= 1:
        raise ValueError(f"imbalance_threshold must be greater than 1, got {threshold}")
    cpus = _spread({e["cpu"]: e["pps"] for e in per_cpu})
    queues = _spread({e["queue"]: e["pps"] for e in per_rxq})
    verdict = {
        "imbalanced": False,
        "threshold": threshold,
        "max_over_mean": None,
        "min_over_mean": None,
        "cpu_max_over_mean": round(cpus["max_over_mean"], 4) if cpus else None,
        "queue_max_over_mean": round(queues["max_over_mean"], 4) if queues else None,
        "busiest_cpu": cpus["busiest"] if cpus else None,
        "busiest_queue": queues["busiest"] if queues else None,
        "active_cpus": cpus["active"] if cpus else [],
        "active_queues": queues["active"] if queues else [],
        "reason": "no traffic",
    }
    if not cpus and not queues:
        return verdict
    # judge on the worse of the two dimensions
    candidates = [("CPU", cpus), ("RX queue", queues)]
    label, worst = max((c for c in candidates if c[1]), key=lambda c: c[1]["max_over_mean"])
    verdict["max_over_mean"] = round(worst["max_over_mean"], 4)
    verdict["min_over_mean"] = round(worst["min_over_mean"], 4)
    n = len(worst["active"])
    if n < 2:
        verdict["reason"] = f"balanced: a single active {label} ({label} {worst['busiest']})"
        return verdict
    what = (
        f"{label} {worst['busiest']} handles {_fmt(worst['busiest_pps'])} pps, "
        f"{worst['max_over_mean']:.2f}x the mean of the {n} active {label}s ({_fmt(worst['mean_pps'])} pps)"
    )
    if worst["max_over_mean"] > threshold:
        verdict["imbalanced"] = True
        verdict["reason"] = f"imbalanced: {what}, above the threshold {threshold}"
    else:
        verdict["reason"] = f"balanced: {what}, within the threshold {threshold}"
    return verdict


def summarize(snapshots, threshold=DEFAULT_THRESHOLD):
    """The xdp_stats result from ``[(monotonic_time, snapshot), ...]`` (at least two)."""
    if len(snapshots) < 2:
        raise ValueError("need at least two snapshots")
    samples = []
    t_first = snapshots[0][0]
    for (t0, s0), (t1, s1) in zip(snapshots, snapshots[1:]):
        d = snapshot_delta(s0, s1)
        packets = sum(v[0] for v in d.values())
        samples.append(
            {
                "t": round(t1 - t_first, 6),
                "seconds": round(t1 - t0, 6),
                "packets": packets,
                "pps": packets / (t1 - t0) if t1 > t0 else 0.0,
            }
        )
    (t_start, s_start), (t_end, s_end) = snapshots[0], snapshots[-1]
    seconds = t_end - t_start
    delta = snapshot_delta(s_start, s_end)
    r = rates(delta, seconds)
    result = aggregate({k: v[0] for k, v in r.items()})
    total = result["total_pps"]
    result.update(
        {
            "seconds": round(seconds, 6),
            "packets": sum(v[0] for v in delta.values()),
            "bytes_per_second": sum(v[1] for v in r.values()),
            "errors_per_second": sum(v[2] for v in r.values()),
            "ns_per_packet": (1e9 / total) if total else None,
            "samples": samples,
        }
    )
    result["imbalance"] = imbalance(result["per_cpu"], result["per_rxq"], threshold)
    return result


def summarize_queues(snapshots, threshold=DEFAULT_THRESHOLD):
    """The xdp_stats result from driver counters: ``[(monotonic_time, {queue: packets}), ...]`` (at least two).

    A driver counts per RX queue only (veth's rx_queue_N_xdp_drops, mlx5's chN_xdp_drop), so per_cpu and rxq_cpu
    are empty and bytes/errors unknown (None); the imbalance verdict is on the queues alone.
    """
    if len(snapshots) < 2:
        raise ValueError("need at least two snapshots")

    def delta(before, after):
        return {q: _delta(before.get(q, 0), n) for q, n in after.items() if _delta(before.get(q, 0), n)}

    samples = []
    t_first = snapshots[0][0]
    for (t0, s0), (t1, s1) in zip(snapshots, snapshots[1:]):
        packets = sum(delta(s0, s1).values())
        samples.append(
            {
                "t": round(t1 - t_first, 6),
                "seconds": round(t1 - t0, 6),
                "packets": packets,
                "pps": packets / (t1 - t0) if t1 > t0 else 0.0,
            }
        )
    seconds = snapshots[-1][0] - snapshots[0][0]
    if seconds <= 0:
        raise ValueError(f"sampling interval must be positive, got {seconds}")
    # per-sample sums, so a counter reset inside the window costs one interval, not the whole window
    per_queue = {}
    for (_t0, s0), (_t1, s1) in zip(snapshots, snapshots[1:]):
        for q, n in delta(s0, s1).items():
            per_queue[q] = per_queue.get(q, 0) + n
    per_rxq = [{"queue": q, "pps": per_queue[q] / seconds, "cpus": []} for q in sorted(per_queue)]
    total = sum(per_queue.values()) / seconds
    result = {
        "per_cpu": [],
        "per_rxq": per_rxq,
        "rxq_cpu": [],
        "total_pps": total,
        "seconds": round(seconds, 6),
        "packets": sum(per_queue.values()),
        "bytes_per_second": None,
        "errors_per_second": None,
        "ns_per_packet": (1e9 / total) if total else None,
        "samples": samples,
    }
    result["imbalance"] = imbalance([], per_rxq, threshold)
    return result


# --- xdp_rxq_info text ------------------------------------------------------------------------
_NUM = r"([\d,]+)"
_HEADER = re.compile(r"Running XDP on dev:(\S+) \(ifindex:(\d+)\) action:(\S+)(?: options:(\S+))?")
_CPU = re.compile(r"XDP-RX CPU\s+(\d+)\s+" + _NUM + r"\s+" + _NUM)
_CPU_TOTAL = re.compile(r"XDP-RX CPU\s+total\s+" + _NUM)
_RXQ = re.compile(r"rx_queue_index\s+(\d+):(\d+)\s+" + _NUM + r"\s+" + _NUM)
_RXQ_SUM = re.compile(r"rx_queue_index\s+(\d+):sum\s+" + _NUM)


def _int(text):
    return int(text.replace(",", ""))


def parse_xdp_rxq_info(text):
    """Parse the output of the kernel sample xdp_rxq_info (one or more "Running XDP on ..." blocks).

    Works on the original multi-line output and on the one-line form that lab notes flatten it to.
    Returns a list of dicts: interface, ifindex, action, options, per_cpu {cpu: pps}, total_pps,
    rxq_cpu {(queue, cpu): pps}, rxq_sum {queue: pps}.
    """
    starts = [m.start() for m in _HEADER.finditer(text)]
    runs = []
    for i, start in enumerate(starts):
        block = text[start : starts[i + 1] if i + 1 < len(starts) else len(text)]
        head = _HEADER.match(block)
        total = _CPU_TOTAL.search(block)
        runs.append(
            {
                "interface": head.group(1),
                "ifindex": int(head.group(2)),
                "action": head.group(3),
                "options": head.group(4),
                "per_cpu": {int(m.group(1)): _int(m.group(2)) for m in _CPU.finditer(block)},
                "total_pps": _int(total.group(1)) if total else None,
                "rxq_cpu": {(int(m.group(1)), int(m.group(2))): _int(m.group(3)) for m in _RXQ.finditer(block)},
                "rxq_sum": {int(m.group(1)): _int(m.group(2)) for m in _RXQ_SUM.finditer(block)},
            }
        )
    return runs


def from_rxq_info(run, threshold=DEFAULT_THRESHOLD):
    """xdp_stats-shaped view (per_cpu, per_rxq, rxq_cpu, total_pps, imbalance) of one parsed run.

    per_cpu comes from the tool's own per-CPU lines (they are sampled separately from the RXQ lines).
    """
    view = aggregate(run["rxq_cpu"])
    if run["per_cpu"]:
        view["per_cpu"] = [{"cpu": c, "pps": p} for c, p in sorted(run["per_cpu"].items()) if p]
        view["total_pps"] = run["total_pps"] if run["total_pps"] is not None else sum(run["per_cpu"].values())
    view["imbalance"] = imbalance(view["per_cpu"], view["per_rxq"], threshold)
    return view
