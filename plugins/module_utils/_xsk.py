# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""xdplab-xsk-bench (bpf/xsk_bench.c): its command line, checks before a run, and its JSON lines.

The program prints a ``start`` record, then per interval an ``interval`` record (frames per queue in that
interval, ``mono`` = end of the interval on CLOCK_MONOTONIC) and an ``xdp_statistics`` record (the sockets'
XDP_STATISTICS counters since bind, same ``mono``), and a ``summary`` on exit. Everything here is pure (no
process, no kernel) except ``check_target``, which reads sysfs.
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement, _xdp_counters
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import online_cpus

DEFAULT_BINARY = "/usr/local/lib/xdplab/bin/xdplab-xsk-bench"
BENCH_MODES = ("rxdrop", "txpush", "l2fwd")
COPY_MODES = ("auto", "copy", "zerocopy")
XDP_MODES = ("native", "skb")
#: the program says drv/skb; the collection says native/skb (as xdp_program)
XDP_MODE_NAMES = {"drv": "native", "skb": "skb"}
FRAME_SIZES = (2048, 4096)
MAX_BATCH = 2048  # TX ring size of the program
MAX_QUEUES = 64  # XSK_MAX_QUEUES in bpf/xsk_bench.h
MIN_PACKET_LEN, MAX_PACKET_LEN = 64, 1518
XDP_PACKET_HEADROOM = 256
MAX_PORT = 65535
FCS_LEN = 4
#: drivers known to lack AF_XDP zero-copy (no XDP_SETUP_XSK_POOL); others are left to the kernel's bind
NO_ZEROCOPY_DRIVERS = ("veth",)
XDP_STAT_KEYS = (
    "rx_dropped",
    "rx_invalid_descs",
    "rx_ring_full",
    "rx_fill_ring_empty_descs",
    "tx_invalid_descs",
    "tx_ring_empty_descs",
)
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
#: an interval counts as inside the window if it starts at most this share of an interval before warm-up ends
#: (the program's ticks are not aligned with the start record to the microsecond)
WINDOW_SLACK = 0.05


class XskBenchError(Exception):
    """Bad input, a target that cannot run the benchmark, or a run that went wrong; the message says what to do."""


# -- input ------------------------------------------------------------------------------------------------------
def sampler(p):
    """The collection's one Sampler for these options (validated; XskBenchError names the bad option).

    xdplab-xsk-bench times its own intervals (its threads count, its main loop prints one record per interval on
    CLOCK_MONOTONIC), so the module does not read counters on the Sampler's schedule: it uses the Sampler's
    validation and length (warm-up + samples x interval) and takes the window from the records (select_window).
    """
    try:
        return _measurement.Sampler.from_params(p)
    except _measurement.SamplingError as exc:
        raise XskBenchError(str(exc)) from None


def check_params(p):
    """Checks that need no target: ranges, list lengths, txpush frame fields. Returns the CPU list to use."""
    if not p.get("interface"):
        raise XskBenchError("interface is required with state=measured")
    sampler(p)
    if not 1 <= p["batch_size"] <= MAX_BATCH:
        raise XskBenchError("batch_size must be 1..%d, got %d" % (MAX_BATCH, p["batch_size"]))
    if p["busy_poll_budget"] is not None and not p["busy_poll"]:
        raise XskBenchError("busy_poll_budget needs busy_poll: true")
    if p["busy_poll_timeout"] is not None and not p["busy_poll"]:
        raise XskBenchError("busy_poll_timeout needs busy_poll: true")
    queues = p["queues"]
    if not queues:
        raise XskBenchError("queues must list at least one RX queue id")
    if len(set(queues)) != len(queues):
        raise XskBenchError("queues %s lists a queue twice" % queues)
    if any(q < 0 or q >= MAX_QUEUES for q in queues):
        raise XskBenchError("queue ids must be 0..%d, got %s" % (MAX_QUEUES - 1, queues))
    cpus = p["cpus"] or list(queues)
    if len(cpus) != len(queues):
        raise XskBenchError(
            "cpus %s and queues %s differ in length: give one CPU per queue (the thread of queues[i] runs on cpus[i])"
            % (p["cpus"], queues)
        )
    if len(set(cpus)) != len(cpus):
        raise XskBenchError("cpus %s lists a CPU twice: each queue's thread needs its own CPU" % cpus)
    if p["mode"] == "txpush":
        for key in ("dst_mac", "src_ip", "dst_ip"):
            if not p.get(key):
                raise XskBenchError("mode txpush needs %s (the frame template)" % key)
        if not MIN_PACKET_LEN <= p["packet_len"] <= MAX_PACKET_LEN:
            raise XskBenchError(
                "packet_len=%d is outside %d..%d (frame length with FCS)" % (p["packet_len"], MIN_PACKET_LEN, MAX_PACKET_LEN)
            )
        if not 1 <= p["dst_port"] <= MAX_PORT:
            raise XskBenchError("dst_port=%d is not a UDP port (1..%d)" % (p["dst_port"], MAX_PORT))
        if p["packet_len"] - FCS_LEN > p["frame_size"] - XDP_PACKET_HEADROOM:
            raise XskBenchError("packet_len=%d does not fit a %d-byte frame" % (p["packet_len"], p["frame_size"]))
    else:
        given = [k for k in ("src_mac", "dst_mac", "src_ip", "dst_ip") if p.get(k)]
        if given:
            raise XskBenchError("%s only apply to mode txpush" % ", ".join(given))
    for key in ("src_mac", "dst_mac"):
        if p.get(key) and not MAC_RE.match(p[key]):
            raise XskBenchError("%s=%r is not a MAC address like 02:00:00:00:00:01" % (key, p[key]))
    for key in ("src_ip", "dst_ip"):
        if p.get(key):
            try:
                ipaddress.IPv4Address(p[key])
            except ValueError:
                raise XskBenchError("%s=%r is not an IPv4 address" % (key, p[key])) from None
    return cpus


def rx_queue_count(interface, sysfs="/sys"):
    """real_num_rx_queues of an interface: its /sys/class/net/IF/queues/rx-* entries."""
    path = os.path.join(sysfs, "class", "net", interface, "queues")
    return sum(1 for name in os.listdir(path) if name.startswith("rx-"))


def sysfs_driver(interface, sysfs="/sys"):
    """Driver of a device-backed interface from sysfs, or None (veth and other virtual devices have none)."""
    link = os.path.join(sysfs, "class", "net", interface, "device", "driver")
    return os.path.basename(os.readlink(link)) if os.path.islink(link) else None


def check_target(p, cpus, driver, binary, sysfs="/sys"):
    """Checks against this host (current network namespace): interface, queues, CPUs, zero-copy, binary."""
    interface = p["interface"]
    if not os.path.isdir(os.path.join(sysfs, "class", "net", interface)):
        here = ", ".join(sorted(os.listdir(os.path.join(sysfs, "class", "net"))))
        raise XskBenchError("interface %s does not exist in this network namespace; interfaces here: %s" % (interface, here))
    count = rx_queue_count(interface, sysfs)
    bad = [q for q in p["queues"] if q >= count]
    if bad:
        raise XskBenchError(
            "queue %s does not exist: %s (driver %s) has %d RX queue%s (0..%d)"
            % (", ".join(map(str, bad)), interface, driver or "unknown", count, "" if count == 1 else "s", count - 1)
        )
    online = online_cpus(os.path.join(sysfs, "devices", "system", "cpu", "online"))
    offline = [c for c in cpus if c not in online]
    if offline:
        raise XskBenchError("CPU %s not online (online: %s)" % (", ".join(map(str, offline)), ",".join(map(str, online))))
    if p["copy_mode"] == "zerocopy" and driver in NO_ZEROCOPY_DRIVERS:
        raise XskBenchError(
            "interface %s (driver %s) does not support AF_XDP zero-copy; use copy_mode: copy (or auto)" % (interface, driver)
        )
    if not os.access(binary, os.X_OK):
        raise XskBenchError(
            "%s is missing or not executable: run the role xdplab.testbed.bpf_programs to build and install it" % binary
        )
    return count


def command(p, cpus, duration, binary):
    """argv of one run of xdplab-xsk-bench."""
    argv = [
        binary,
        "--dev", p["interface"],
        "--mode", p["mode"],
        "--queues", ",".join(map(str, p["queues"])),
        "--cpus", ",".join(map(str, cpus)),
        "--batch", str(p["batch_size"]),
        "--frame-size", str(p["frame_size"]),
        "--interval", "%g" % p["interval"],
        "--duration", "%g" % duration,
    ]  # fmt: skip
    argv += {"copy": ["--copy"], "zerocopy": ["--zero-copy"]}.get(p["copy_mode"], [])
    argv.append("--skb-mode" if p["xdp_mode"] == "skb" else "--drv-mode")
    if not p["need_wakeup"]:
        argv.append("--no-need-wakeup")
    if p["unaligned"]:
        argv.append("--unaligned")
    if p["poll"]:
        argv.append("--poll")
    if p["busy_poll"]:
        argv.append("--busy-poll")
        if p["busy_poll_budget"] is not None:
            argv += ["--busy-poll-budget", str(p["busy_poll_budget"])]
        if p["busy_poll_timeout"] is not None:
            argv += ["--busy-poll-timeout", str(p["busy_poll_timeout"])]
    if p["mode"] == "txpush":
        if p.get("src_mac"):
            argv += ["--src-mac", p["src_mac"]]
        argv += ["--dst-mac", p["dst_mac"], "--src-ip", p["src_ip"], "--dst-ip", p["dst_ip"]]
        argv += ["--pkt-len", str(p["packet_len"]), "--dst-port", str(p["dst_port"])]
    return argv


def run_duration(p):
    """Seconds the program is told to run: warm-up, the window, and two intervals to spare (stopped earlier)."""
    return sampler(p).seconds + 2 * p["interval"] + 1


# -- output -----------------------------------------------------------------------------------------------------


def of_type(records, kind):
    return [r for r in records if r.get("type") == kind]


def select_window(records, warmup, samples):
    """The first ``samples`` interval records that start after ``warmup`` seconds from the start record.

    Returns them, or fewer if the run has not got that far yet.
    """
    starts = of_type(records, "start")
    if not starts:
        return []
    begin = starts[0]["mono"] + warmup
    chosen = []
    for rec in of_type(records, "interval"):
        interval_start = rec["mono"] - rec["interval_s"]
        if interval_start + WINDOW_SLACK * rec["interval_s"] >= begin:
            chosen.append(rec)
            if len(chosen) == samples:
                break
    return chosen


def _stats_at(records, mono):
    """Per-queue XDP statistics of the xdp_statistics record printed at ``mono`` ({} for none: counters at 0)."""
    for rec in of_type(records, "xdp_statistics"):
        if abs(rec["mono"] - mono) < 1e-6:
            return {q["queue"]: q["stats"] or {} for q in rec["queues"]}
    return {}


def summarize(records, bench, warmup, samples):
    """What the module returns, from the records of one run."""
    window = select_window(records, warmup, samples)
    if len(window) < samples:
        raise XskBenchError("the run printed %d of the %d intervals needed after a %gs warm-up" % (len(window), samples, warmup))
    start = of_type(records, "start")[0]
    intervals = of_type(records, "interval")
    seconds = sum(r["interval_s"] for r in window)
    rx = sum(r["rx"] for r in window)
    tx = sum(r["tx"] for r in window)
    primary = "tx" if bench == "txpush" else "rx"

    per_queue = {}
    for rec in window:
        for q in rec["queues"]:
            acc = per_queue.setdefault(q["queue"], {"queue": q["queue"], "cpu": q["cpu"], "rx": 0, "tx": 0})
            acc["rx"] += q["rx"]
            acc["tx"] += q["tx"]
    per_rxq = []
    per_cpu = {}
    for queue in sorted(per_queue):
        acc = per_queue[queue]
        entry = {
            "queue": queue,
            "cpu": acc["cpu"],
            "pps": acc[primary] / seconds,
            "rx_pps": acc["rx"] / seconds,
            "tx_pps": acc["tx"] / seconds,
        }
        per_rxq.append(entry)
        per_cpu[acc["cpu"]] = per_cpu.get(acc["cpu"], 0.0) + entry["pps"]

    # XDP statistics over the window: counters at its end minus at its start (the record of the interval before)
    first = intervals.index(window[0])
    before = _stats_at(records, intervals[first - 1]["mono"]) if first > 0 else {}
    after = _stats_at(records, window[-1]["mono"])
    xdp_stats = []
    for queue in sorted(after):
        b = before.get(queue, {})
        xdp_stats.append(dict({"queue": queue}, **{k: after[queue].get(k, 0) - b.get(k, 0) for k in XDP_STAT_KEYS}))

    summaries = of_type(records, "summary")
    summary = summaries[-1] if summaries else None
    # measurement: the window from the records' own mono stamps (start of the first interval to the end of the
    # last), each sample as long as the gap between its mono and the previous one, so the samples tile the window
    t_start, t_end = window[0]["mono"] - window[0]["interval_s"], window[-1]["mono"]
    ends = [t_start] + [r["mono"] for r in window]
    m_samples = [{"t": round(b - t_start, 6), "seconds": round(b - a, 6), "packets": r[primary],
                  "pps": r[primary] / (b - a) if b > a else 0.0} for a, b, r in zip(ends, ends[1:], window)]
    m_seconds = t_end - t_start
    m_per_rxq = [dict(q, pps=q["pps"] * seconds / m_seconds) for q in per_rxq]
    m_per_cpu = [{"cpu": cpu, "pps": per_cpu[cpu] * seconds / m_seconds} for cpu in sorted(per_cpu)]
    packets = tx if primary == "tx" else rx
    source = {"kind": "xsk_bench", "at": _measurement.AT_DUT, "bench": bench, "counter": primary,
              "bind_mode": start["mode"], "xdp_mode": XDP_MODE_NAMES.get(start["xdp_mode"], start["xdp_mode"]),
              "driver": start["driver"], "interface": start.get("dev")}
    measured = _measurement.measurement(
        packets / m_seconds, _measurement.window_of(t_start, t_end), source, packets=packets, per_cpu=m_per_cpu,
        per_rxq=m_per_rxq, samples=m_samples,
        imbalance=_xdp_counters.imbalance(m_per_cpu, m_per_rxq) if packets else None,
        details={"rx_pps": rx / m_seconds, "tx_pps": tx / m_seconds, "xdp_stats": xdp_stats})
    return {
        "measurement": measured,
        "pps": (tx if primary == "tx" else rx) / seconds,
        "rx_pps": rx / seconds,
        "tx_pps": tx / seconds,
        "packets": tx if primary == "tx" else rx,
        "seconds": seconds,
        "window": {"start": window[0]["mono"] - window[0]["interval_s"], "end": window[-1]["mono"]},
        "samples": [
            {"mono": r["mono"], "interval_s": r["interval_s"], "rx_pps": r["rx_pps"], "tx_pps": r["tx_pps"]} for r in window
        ],
        "per_rxq": per_rxq,
        "per_cpu": [{"cpu": cpu, "pps": per_cpu[cpu]} for cpu in sorted(per_cpu)],
        "xdp_stats": xdp_stats,
        "bind_mode": start["mode"],
        "zerocopy": [{"queue": q["queue"], "zerocopy": q["zerocopy"]} for q in start["queues"]],
        "xdp_mode": XDP_MODE_NAMES.get(start["xdp_mode"], start["xdp_mode"]),
        "driver": start["driver"],
        "program_id": start["prog_id"],
        "version": start["version"],
        "summary": summary,
    }
