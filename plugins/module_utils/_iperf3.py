# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3 (Debian's, 3.x) for the TCP experiment: window sizes, the client's and server's command lines, and
what the client's ``--json`` document says about a run (goodput, retransmits, socket buffer).

The client runs as the generator backend ``iperf3`` (_generators/iperf3.py), the server as the module
``iperf3_server`` on the DUT. Both are pinned with ``taskset`` to CPUs the inventory names.
"""

from __future__ import annotations

import json
import re

# what iperf3's -w takes: a number with an optional K, M, G (x 1024) suffix, as iperf3's unit_atof
WINDOW_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kKmMgG]?)$")
WINDOW_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
# "the kernel's autotuning": no -w
DEFAULT_WINDOW = "default"
DEFAULT_PORT = 5201


class Iperf3Error(ValueError):
    """Bad input or output of iperf3; the message says what to change."""


def window_bytes(window):
    """Bytes of an iperf3 window ('4M' -> 4194304); None for 'default' (no -w). Iperf3Error if it is no size."""
    if window is None or str(window) in ("", DEFAULT_WINDOW):
        return None
    m = WINDOW_RE.match(str(window).strip())
    if not m:
        raise Iperf3Error(
            "window %r is not a size: give bytes with an optional K, M or G suffix (e.g. 256K, 4M), or %r for "
            "the kernel's autotuning" % (window, DEFAULT_WINDOW)
        )
    value = float(m.group(1)) * WINDOW_UNITS[m.group(2).lower()]
    if value < 1:
        raise Iperf3Error("window %r is not a positive size" % (window,))
    return int(value)


def taskset(cpus, argv):
    """argv pinned to cpus with taskset (no CPUs: unpinned)."""
    if not cpus:
        return list(argv)
    return ["taskset", "-c", ",".join(str(int(c)) for c in cpus)] + list(argv)


def client_command(server, port=DEFAULT_PORT, streams=1, seconds=10, omit=0, window=None, cpus=(), binary="iperf3"):
    window_bytes(window)  # refuse a window that is not a size before anything runs
    argv = [
        binary,
        "--client",
        str(server),
        "--port",
        str(int(port)),
        "--parallel",
        str(int(streams)),
        "--time",
        str(int(seconds)),
        "--omit",
        str(int(omit)),
        "--json",
    ]
    if window not in (None, "", DEFAULT_WINDOW):
        argv += ["--window", str(window)]
    return taskset(cpus, argv)


def server_command(bind=None, port=DEFAULT_PORT, cpus=(), binary="iperf3"):
    argv = [binary, "--server", "--port", str(int(port))]
    if bind:
        argv += ["--bind", str(bind)]
    return taskset(cpus, argv)


def parse_client_json(text):
    """The client's --json document (one JSON object over many lines); Iperf3Error if there is none."""
    text = (text or "").strip()
    if not text:
        raise Iperf3Error("iperf3 printed nothing on stdout (no --json document)")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise Iperf3Error("iperf3's stdout is not a JSON document (%s): %s" % (exc, text[:200])) from None
    if not isinstance(doc, dict) or "start" not in doc:
        raise Iperf3Error("iperf3's JSON has no 'start' section: %s" % text[:200])
    return doc


def tcp_result(doc):
    """What the TCP record keeps of one client run: goodput, retransmits, socket buffer, CPU as iperf3 saw it.

    Goodput is the receiver's (end.sum_received, the omitted warm-up left out) when the run ended by itself;
    a run stopped early (SIGINT: iperf3 then has no receiver sums) falls back to the sender's bytes over the
    intervals that were not omitted, and says so in goodput_source.
    """
    start = doc.get("start") or {}
    end = doc.get("end") or {}
    sent = end.get("sum_sent") or {}
    received = end.get("sum_received") or {}
    intervals = [i.get("sum") or {} for i in doc.get("intervals") or []]
    counted = [i for i in intervals if not i.get("omitted")]
    if received.get("bytes") and received.get("seconds"):
        goodput_bps = received["bytes"] * 8.0 / received["seconds"]
        source, seconds = "receiver", received["seconds"]
    else:
        nbytes = sum(i.get("bytes", 0) for i in counted)
        seconds = sum(i.get("seconds", 0.0) for i in counted)
        goodput_bps = nbytes * 8.0 / seconds if seconds else 0.0
        source = "sender_intervals"
    retransmits = sent.get("retransmits")
    if retransmits is None:
        retransmits = sum(i.get("retransmits", 0) for i in counted)
    test = start.get("test_start") or {}
    streams = test.get("num_streams") or len(end.get("streams") or []) or None
    cpu = end.get("cpu_utilization_percent") or {}
    return {
        "goodput_gbit": goodput_bps / 1e9,
        "goodput_source": source,
        "seconds": seconds,
        "sent_bytes": sent.get("bytes"),
        "received_bytes": received.get("bytes"),
        "retransmits": int(retransmits or 0),
        "retransmits_per_s": (retransmits or 0) / seconds if seconds else None,
        "streams": streams,
        "omit_s": test.get("omit"),
        "sock_bufsize": start.get("sock_bufsize"),
        "sndbuf_actual": start.get("sndbuf_actual"),
        "rcvbuf_actual": start.get("rcvbuf_actual"),
        "congestion": end.get("sender_tcp_congestion"),
        "iperf3_cpu_percent": {"sender": cpu.get("host_total"), "receiver": cpu.get("remote_total")},
        "intervals": [
            {
                "start": i.get("start"),
                "end": i.get("end"),
                "gbit": (i.get("bits_per_second") or 0) / 1e9,
                "retransmits": i.get("retransmits"),
                "omitted": bool(i.get("omitted")),
            }
            for i in intervals
        ],
        "error": doc.get("error"),
        "version": (start.get("version") or "").strip(),
        "system_info": start.get("system_info"),
    }
