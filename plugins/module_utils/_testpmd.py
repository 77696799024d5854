# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dpdk-testpmd: command line, interactive session over a pty, and parsers of its output.

The parsers are pure functions tested against output captured from DPDK 22.11 (Debian 12) on the
virtual lab (tests/unit/fixtures/testpmd). ``Session`` drives ``dpdk-testpmd -i`` through a
pseudo-terminal (so its stdio is line buffered and every command ends at the ``testpmd> `` prompt).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import shutil
import signal
import time

# a process is ours when its start time matches the one recorded (pids are recycled)
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement, _xdp_counters
from ansible_collections.xdplab.testbed.plugins.module_utils._process import (
    Process,
    ProcessError,
    failure_message,
    process_result,
    tail,
)

FORWARD_MODES = ("rxonly", "txonly", "io", "mac", "macswap")
RSS_FLAGS = {"udp": "--rss-udp", "ip": "--rss-ip", "none": "--disable-rss"}
SIMD_BITWIDTHS = (64, 128, 256, 512)
PROMPT = b"testpmd> "
PCI_RE = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])$")
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# a virtio-net PCI function (vendor, device in /sys/bus/pci/devices/ADDR): transitional 0x1000, modern 0x1041
VIRTIO_NET_PCI_IDS = {("0x1af4", "0x1000"), ("0x1af4", "0x1041")}
# net_virtio says which RX/TX burst function it took only at INFO (its log types default to NOTICE): set_rxtx_funcs()
# on pmd.net.virtio.init, the refusals of vectorized=1 in virtio_dev_configure() on pmd.net.virtio.driver. At INFO
# these add a handful of lines at probe and port start (queue set-up, the paths), nothing per packet (DPDK 22.11)
VIRTIO_LOG_LEVELS = ("--log-level=pmd.net.virtio.init:info", "--log-level=pmd.net.virtio.driver:info")
# DPDK 22.11 drivers/net/virtio/virtio_ethdev.c, set_rxtx_funcs(): "virtio: using %s Rx path on port %u" with
# vectorized | inorder | mergeable buffer | standard, or "packed ring vectorized|mergeable buffer|standard" (before
# 20.11 the split ring's vector path was called "simple"); each line starts with "set_rxtx_funcs(): "
VIRTIO_RX_PATH_RE = re.compile(r"virtio: using (?P<path>.+?) Rx path on port (?P<port>\d+)")
VIRTIO_TX_PATH_RE = re.compile(r"virtio: using (?P<path>.+?) Tx path on port (?P<port>\d+)")
# virtio_dev_configure() / eth_virtio_dev_init() when vectorized=1 was asked and cannot be had (no port number: they
# come while the port is configured, before its start prints its paths)
VIRTIO_VECTOR_REFUSED_RE = re.compile(
    r"(disabled (?:split|packed) ring vectorized .*\S|building environment do not support packed ring vectorized)\s*$"
)
VIRTIO_VECTOR_RX_PATHS = ("vectorized", "packed ring vectorized", "simple")


class TestpmdError(Exception):
    """testpmd could not be started or driven; the message says what to do."""

    def __init__(self, msg, transcript="", process=None):
        super().__init__(msg)
        self.transcript = transcript
        self.process = process  # {pid, exit_status, signal, signal_name, stderr_tail} of a testpmd that ended


# ---------------------------------------------------------------------------------------------------------------
# ports and command line
# ---------------------------------------------------------------------------------------------------------------


def parse_port(spec, devargs=None):
    """A port spec -> {kind: pci|vdev, spec, address|name, driver, args: {k: v}, iface, eal: [flag, value]}.

    ``0000:03:00.0`` or ``03:00.0`` (optionally followed by ``,devargs``) is a PCI device passed with ``-a``;
    anything starting with ``net_`` is a virtual device passed with ``--vdev``.
    """
    spec = spec.strip()
    head, _sep, tail = spec.partition(",")
    match = PCI_RE.match(head)
    if match:
        address = "%s:%s:%s.%s" % (match["domain"] or "0000", match["bus"], match["dev"], match["fn"])
        address = address.lower()
        extra = [a for a in (tail, devargs or "") if a]
        full = ",".join([address, *extra])
        return {"kind": "pci", "spec": full, "address": address, "driver": None, "args": _kv(",".join(extra)),
                "iface": None, "eal": ["-a", full]}
    if re.match(r"^net_[a-z_]+[0-9]+$", head):
        driver = re.sub(r"[0-9]+$", "", head)
        args = _kv(tail)
        return {"kind": "vdev", "spec": spec, "name": head, "driver": driver, "args": args,
                "iface": args.get("iface"), "eal": ["--vdev", spec]}
    raise ValueError(
        "port %r is neither a PCI address (like 0000:03:00.0) nor a virtual device spec "
        "(like net_af_xdp0,iface=veth-dut0 or net_af_packet0,iface=veth-dut0: driver name plus an index)" % spec
    )


def _kv(text):
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, _sep, value = item.partition("=")
        out[key] = value
    return out


def vdev_with_args(port, extra):
    """Return a copy of a vdev port with args added (keys the user already gave are kept)."""
    args = dict(port["args"])
    added = {k: v for k, v in extra.items() if k not in args}
    if not added:
        return port, {}
    args.update(added)
    spec = ",".join([port["name"]] + ["%s=%s" % (k, v) if v != "" else k for k, v in args.items()])
    return dict(port, spec=spec, args=args, eal=["--vdev", spec]), added


def build_command(p, ports):
    """argv of dpdk-testpmd for the module parameters ``p`` and the parsed ``ports``."""
    eal = ["-v", "-l", ",".join(str(c) for c in p["lcores"]), "--main-lcore", str(p["lcores"][0]),
           "--file-prefix", p["file_prefix"]]
    if p["no_huge"]:
        eal += ["--no-huge"]
    else:
        eal += ["--huge-unlink"]
        if p.get("huge_dir"):
            eal += ["--huge-dir", p["huge_dir"]]
    if p.get("memory_mb"):
        eal += ["-m", str(p["memory_mb"])]
    if p.get("max_simd_bitwidth"):
        eal += ["--force-max-simd-bitwidth=%d" % p["max_simd_bitwidth"]]
    if not any(port["kind"] == "pci" for port in ports):
        eal += ["--no-pci"]
    for port in ports:
        eal += port["eal"]
    if any(port.get("virtio_net") for port in ports):
        # net_virtio's RX path (the driver reports no burst mode): parse_rx_paths reads it from the start-up lines
        eal += list(VIRTIO_LOG_LEVELS)
    eal += list(p.get("extra_eal_args") or [])
    app = [
        "-i",
        "--forward-mode=%s" % p["forward_mode"],
        "--nb-cores=%d" % p["nb_cores"],
        "--rxq=%d" % p["rxq"],
        "--txq=%d" % p["txq"],
    ]
    extra = list(p.get("extra_args") or [])
    if len(ports) == 1 and not any(a.startswith("--port-topology") for a in extra):
        app.append("--port-topology=loop")  # one port forwards to itself (testpmd's default pairs ports)
    for key, flag in (("rxd", "--rxd"), ("txd", "--txd"), ("burst", "--burst"), ("mbufs", "--total-num-mbufs")):
        if p.get(key):
            app.append("%s=%d" % (flag, p[key]))
    if p.get("rss"):
        app.append(RSS_FLAGS[p["rss"]])
    app += extra
    return [p["binary"], *eal, "--", *app]


def pci_is_virtio_net(address, devices="/sys/bus/pci/devices"):
    """Whether the PCI function ``address`` is a virtio-net device (its vendor and device ids in sysfs; a driver
    bound to it or not). False when sysfs cannot tell."""
    ids = []
    for name in ("vendor", "device"):
        try:
            with open(os.path.join(devices, address, name)) as f:
                ids.append(f.read().strip().lower())
        except OSError:
            return False
    return tuple(ids) in VIRTIO_NET_PCI_IDS


def parse_rx_paths(text):
    """net_virtio's own words on its burst functions (testpmd's start-up output with VIRTIO_LOG_LEVELS) ->
    ``{port: {rx_path, rx_vector, rx_path_note, tx_path}}``; ports it did not name are absent.

    ``rx_path`` is DPDK's name of the RX function (``vectorized``: virtio_recv_pkts_vec, the SIMD one;
    ``mergeable buffer``, ``standard``, ``inorder``: scalar), ``rx_vector`` whether it is the vector one,
    ``rx_path_note`` why a vectorized=1 was refused (``disabled split ring vectorized rx for mrg_rxbuf enabled``;
    several joined with "; "), None when nothing was refused. A refusal names no port: it belongs to the next port
    whose paths are printed (DPDK configures a port, then starts it). The last lines of a port count (a restart).
    """
    out = {}
    pending = []
    for line in clean(text).splitlines():
        refused = VIRTIO_VECTOR_REFUSED_RE.search(line)
        if refused:
            pending.append(refused.group(1))
            continue
        tx = VIRTIO_TX_PATH_RE.search(line)
        if tx:
            entry = out.setdefault(int(tx["port"]), {"rx_path": None, "rx_vector": None, "rx_path_note": None})
            entry["tx_path"] = tx["path"]
            continue
        rx = VIRTIO_RX_PATH_RE.search(line)
        if rx:
            entry = out.setdefault(int(rx["port"]), {"tx_path": None})
            entry.update(rx_path=rx["path"], rx_vector=rx["path"] in VIRTIO_VECTOR_RX_PATHS,
                         rx_path_note="; ".join(dict.fromkeys(pending)) or None)
            pending = []
    return out


def af_xdp_queue_limits(channels):
    """(max_queues, combined_queues) as DPDK 22.11's net_af_xdp computes them from ETHTOOL_GCHANNELS.

    ``channels`` is ``ethtool.parse_channels`` output, or None when the device does not support the request;
    a device without combined channels (veth) gives 1 and 1: net_af_xdp can only use queue 0 on it.
    """
    if not channels:
        return 1, 1
    maximum = (channels.get("max") or {}).get("combined") or 0
    current = (channels.get("current") or {}).get("combined") or 0
    if maximum == 0:
        return 1, 1
    return maximum, current


# ---------------------------------------------------------------------------------------------------------------
# parsers of testpmd output
# ---------------------------------------------------------------------------------------------------------------


def clean(text):
    """Bytes or str from the pty -> str with LF line ends, no terminal escapes, no echo residue."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = ANSI_RE.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "")


def parse_version(text):
    """DPDK version from the EAL banner (``EAL: RTE Version: 'DPDK 22.11.11'``, printed with ``-v``)."""
    match = re.search(r"RTE Version: '([^']+)'", text)
    return match.group(1) if match else None


def _int_fields(line):
    return {k: int(v) for k, v in re.findall(r"([A-Za-z][A-Za-z-]*):\s+(\d+)", line)}


def parse_port_stats(text):
    """``show port stats all`` -> {port: {rx_packets, rx_missed, rx_bytes, rx_errors, rx_nombuf, tx_packets,
    tx_errors, tx_bytes}}."""
    out, port = {}, None
    names = {"RX-packets": "rx_packets", "RX-missed": "rx_missed", "RX-bytes": "rx_bytes", "RX-errors": "rx_errors",
             "RX-nombuf": "rx_nombuf", "TX-packets": "tx_packets", "TX-errors": "tx_errors", "TX-bytes": "tx_bytes"}
    for line in text.splitlines():
        match = re.search(r"NIC statistics for port (\d+)", line)
        if match:
            port = int(match.group(1))
            out[port] = {}
            continue
        if port is None or "Throughput" in line:
            if "Throughput" in line:
                port = None
            continue
        for key, value in _int_fields(line).items():
            if key in names:
                out[port][names[key]] = value
    return out


def parse_xstats(text):
    """``show port xstats all`` -> {port: {name: value}}."""
    out, port = {}, None
    for line in text.splitlines():
        match = re.search(r"NIC extended statistics for port (\d+)", line)
        if match:
            port = int(match.group(1))
            out[port] = {}
            continue
        match = re.match(r"^\s*([A-Za-z0-9_\[\]\-.]+):\s+(\d+)\s*$", line)
        if match and port is not None:
            out[port][match.group(1)] = int(match.group(2))
    return out


XSTAT_PORT = {"rx_packets": "rx_good_packets", "tx_packets": "tx_good_packets", "rx_bytes": "rx_good_bytes",
              "tx_bytes": "tx_good_bytes", "rx_missed": "rx_missed_errors", "rx_errors": "rx_errors",
              "tx_errors": "tx_errors", "rx_nombuf": "rx_mbuf_allocation_errors"}


def port_counters(xstats):
    """Generic counters of one port's xstats (ethdev basic stats, present for every driver)."""
    return {key: xstats.get(name) for key, name in XSTAT_PORT.items()}


def queue_counters(xstats, direction="rx"):
    """Per-queue packet counters ``rx_q<N>_packets`` -> {N: packets} (only drivers that fill queue stats)."""
    out = {}
    for name, value in xstats.items():
        match = re.match(r"^%s_q(\d+)_packets$" % direction, name)
        if match:
            out[int(match.group(1))] = value
    return out


def parse_streams(text):
    """Output of ``start`` -> (mode, [{lcore, rx_port, rx_queue, tx_port, tx_queue}])."""
    mode = None
    match = re.search(r"^(\S+) packet forwarding - ports=", text, re.M)
    if match:
        mode = match.group(1)
    streams, lcore = [], None
    for line in text.splitlines():
        match = re.match(r"^Logical Core (\d+) \(socket \d+\) forwards packets on \d+ streams", line.strip())
        if match:
            lcore = int(match.group(1))
            continue
        match = re.match(r"^RX P=(\d+)/Q=(\d+) \(socket \d+\) -> TX P=(\d+)/Q=(\d+)", line.strip())
        if match and lcore is not None:
            rp, rq, tp, tq = (int(g) for g in match.groups())
            streams.append({"lcore": lcore, "rx_port": rp, "rx_queue": rq, "tx_port": tp, "tx_queue": tq})
    return mode, streams


def parse_fwd_stats(text):
    """``show fwd stats all`` / ``stop`` -> {streams: [{rx_port, rx_queue, tx_port, tx_queue, rx_packets,
    tx_packets, tx_dropped}], ports: {port: {rx_packets, rx_dropped, rx_total, tx_packets, tx_dropped, tx_total}}}.

    testpmd prints per-stream blocks only when there are more streams than ports; with one stream per port the
    port block is that stream.
    """
    streams, ports = [], {}
    current, kind = None, None
    for line in text.splitlines():
        match = re.search(r"Forward Stats for RX Port=\s*(\d+)/Queue=\s*(\d+) -> TX Port=\s*(\d+)/Queue=\s*(\d+)", line)
        if match:
            rp, rq, tp, tq = (int(g) for g in match.groups())
            current = {"rx_port": rp, "rx_queue": rq, "tx_port": tp, "tx_queue": tq}
            streams.append(current)
            kind = "stream"
            continue
        match = re.search(r"Forward statistics for port (\d+)", line)
        if match:
            current = ports.setdefault(int(match.group(1)), {})
            kind = "port"
            continue
        if "Accumulated forward statistics" in line:
            current, kind = None, None
            continue
        if current is None:
            continue
        fields = _int_fields(line)
        for key, value in fields.items():
            name = key.lower().replace("-", "_")
            if kind == "stream" and name not in ("rx_packets", "tx_packets", "tx_dropped", "rx_bad_ip_csum",
                                                 "rx_bad_l4_csum"):
                continue
            current[name] = value
    return {"streams": streams, "ports": ports}


def parse_port_summary(text):
    """``show port summary all`` -> [{port, mac, name, driver, status, link}]."""
    out = []
    for line in text.splitlines():
        match = re.match(r"^(\d+)\s+([0-9A-Fa-f:]{17})\s+(\S+)\s+(\S+)\s+(\S+)\s*(.*)$", line.strip())
        if match:
            port, mac, name, driver, status, link = match.groups()
            out.append({"port": int(port), "mac": mac, "name": name, "driver": driver, "status": status,
                        "link": link.strip()})
    return out


def parse_port_info(text):
    """``show port info N`` -> {name, driver, devargs, max_rx_queues, max_tx_queues, rx_queues, tx_queues, ...}."""
    keys = {"Device name": "name", "Driver name": "driver", "Devargs": "devargs", "MAC address": "mac",
            "Link status": "link_status", "Link speed": "link_speed", "Current number of RX queues": "rx_queues",
            "Max possible RX queues": "max_rx_queues", "Current number of TX queues": "tx_queues",
            "Max possible TX queues": "max_tx_queues", "Connect to socket": "socket"}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in keys:
            value = value.strip()
            out[keys[key.strip()]] = int(value) if value.isdigit() else value
    return out


def parse_queue_info(text):
    """``show rxq info P Q`` / ``show txq info P Q`` -> {burst_mode, supported, error, descriptors}.

    ``burst_mode`` is what the driver reports through rte_eth_rx/tx_burst_mode_get (e.g. ``Vector AVX2``,
    ``Scalar``), None when the driver does not report it or the queue info is not supported.
    """
    out = {"supported": True, "burst_mode": None, "error": None, "descriptors": None}
    match = re.search(r"Failed to retrieve information for port: \d+, [RT]X queue: \d+\s*\nerror desc: (.*)", text)
    if match:
        out.update(supported=False, error=match.group(1).strip())
        return out
    match = re.search(r"^Burst mode: (.+)$", text, re.M)
    if match:
        out["burst_mode"] = match.group(1).strip()
    match = re.search(r"^Number of [RT]XDs: (\d+)", text, re.M)
    if match:
        out["descriptors"] = int(match.group(1))
    return out


def split_transcript(text):
    """A session transcript (``<name>.log``) -> (banner, [(command, output)]), split at the prompts."""
    chunks = clean(text).split(PROMPT.decode())
    pairs = []
    for chunk in chunks[1:]:
        command, _sep, output = chunk.partition("\n")
        pairs.append((command.strip(), output))
    return chunks[0], pairs


# ---------------------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------------------


def eal_log_lines(text, limit=40):
    """The startup lines worth showing: EAL, driver and testpmd messages (not the prompt, not blank lines)."""
    lines = [ln.rstrip() for ln in clean(text).splitlines()]
    lines = [ln for ln in lines if ln.strip() and not ln.startswith("testpmd> ")]
    return lines[-limit:]


def explain_failure(text, ports=None, lcores=None, online=None):
    """Map testpmd/EAL output of a failed start to one clear sentence (None when nothing is recognised)."""
    text = clean(text)
    ports = ports or []
    cause = re.search(r"Cause: (.*)", text)
    cause = cause.group(1).strip() if cause else None
    if re.search(r"Cannot get hugepage information|No available hugepages|hugepage info|"
                 r"Cannot init EAL: Permission denied", text):
        return ("EAL found no usable hugepages (%s): reserve 2 MiB hugepages and mount hugetlbfs (role "
                "xdplab.testbed.dpdk), or set no_huge: true (with memory_mb) for a test without hugepages"
                % (cause or "Cannot get hugepage information"))
    match = re.search(r"invalid core list, please check specified cores are part of (\S+)", text)
    if match or re.search(r"lcore \d+ unavailable", text):
        gone = re.findall(r"lcore (\d+) unavailable", text)
        return "EAL refused lcores %s: lcores %s are not available (usable CPUs: %s); pick lcores among the online CPUs" % (
            ",".join(map(str, lcores or [])),
            ",".join(gone) or "?",
            match.group(1) if match else ",".join(map(str, online or [])),
        )
    match = re.search(r"nb-cores should be > 0 and <= (\d+)", text)
    if match:
        return (
            "nb_cores is more than the %s forwarding lcores testpmd has: give lcores one main lcore plus "
            "nb_cores forwarding lcores" % match.group(1)
        )
    if "No probed ethernet devices" in text or "failed to initialize" in text:
        details = [ln.strip() for ln in text.splitlines()
                   if re.search(r"failed|error|No such|cannot|not found|larger than", ln, re.I)
                   and "No probed ethernet devices" not in ln]
        hint = ""
        if any(p["kind"] == "pci" for p in ports):
            hint = ("; a PCI device must be bound to a DPDK-capable driver (dpdk-devbind.py -b vfio-pci ADDR), "
                    "except mlx5 which stays on mlx5_core")
        return "testpmd probed no port for %s%s%s" % (
            ", ".join(p["spec"] for p in ports) or "the given ports",
            (": " + "; ".join(details[:4])) if details else "",
            hint,
        )
    match = re.search(r"input ([rt]xq) \((\d+)\) can't be greater than max_([rt]x)_queues \((\d+)\) of port (\d+)", text)
    if match:
        which, asked, _d, maximum, port = match.groups()
        dev = ports[int(port)]["spec"] if int(port) < len(ports) else "port %s" % port
        return "%s=%s is more than the %s queues port %s (%s) has: lower %s to at most %s" % (
            which,
            asked,
            maximum,
            port,
            dev,
            which,
            maximum,
        )
    if re.search(r"Creation of mbuf pool .* failed|Cannot allocate memory", text):
        return "testpmd could not allocate its mbuf pool (%s): raise memory_mb, reserve more hugepages, or lower mbufs" % (
            cause or "Cannot allocate memory"
        )
    match = re.search(r"Invalid (\S+) packet forwarding mode", text)
    if match:
        return "testpmd does not know forward mode %s; use one of %s" % (match.group(1), ", ".join(FORWARD_MODES))
    if cause:
        return "testpmd exited: %s" % cause
    return None


# ---------------------------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------------------------


def _rate(a, b, seconds):
    if a is None or b is None or seconds <= 0:
        return None
    return (b - a) / seconds


def summarize(snaps, streams, fwd_first=None, fwd_last=None, summary=None):
    """Rates over the window from xstats snapshots.

    ``snaps``: [(monotonic t, {port: xstats})] (first = window start, last = window end); ``streams`` from
    ``parse_streams``; ``fwd_first``/``fwd_last``: ``parse_fwd_stats`` at the window's start and end (used for
    per-queue rates when the driver has no per-queue xstats); ``summary``: ``parse_port_summary``.
    """
    t0, first = snaps[0]
    t1, last = snaps[-1]
    seconds = t1 - t0
    names = {s["port"]: s for s in (summary or [])}
    ports = []
    for port in sorted(last):
        a, b = port_counters(first.get(port, {})), port_counters(last[port])
        entry = {"port": port, "name": names.get(port, {}).get("name"), "driver": names.get(port, {}).get("driver"),
                 "rx_pps": _rate(a["rx_packets"], b["rx_packets"], seconds),
                 "tx_pps": _rate(a["tx_packets"], b["tx_packets"], seconds)}
        for key in ("rx_packets", "tx_packets", "rx_missed", "rx_nombuf", "rx_errors", "tx_errors"):
            entry[key] = None if a[key] is None or b[key] is None else b[key] - a[key]
        entry["rx_missed_pps"] = _rate(a["rx_missed"], b["rx_missed"], seconds)
        ports.append(entry)
    samples = []
    for (ta, xa), (tb, xb) in zip(snaps, snaps[1:]):
        rx = sum((port_counters(xb[p])["rx_packets"] or 0) - (port_counters(xa.get(p, {}))["rx_packets"] or 0) for p in xb)
        tx = sum((port_counters(xb[p])["tx_packets"] or 0) - (port_counters(xa.get(p, {}))["tx_packets"] or 0) for p in xb)
        samples.append({"t": round(tb - t0, 6), "seconds": round(tb - ta, 6), "rx_pps": _rate(0, rx, tb - ta),
                        "tx_pps": _rate(0, tx, tb - ta)})
    lcore_of = {(s["rx_port"], s["rx_queue"]): s["lcore"] for s in streams}
    per_rxq, source = [], None
    for port in sorted(last):
        qa, qb = queue_counters(first.get(port, {})), queue_counters(last[port])
        if qb:
            source = "xstats"
            for q in sorted(qb):
                per_rxq.append({"port": port, "queue": q, "packets": qb[q] - qa.get(q, 0),
                                "pps": _rate(qa.get(q, 0), qb[q], seconds), "lcore": lcore_of.get((port, q))})
    if not per_rxq and fwd_first is not None and fwd_last is not None:
        source = "fwd_stats"
        per_rxq = _fwd_rxq(fwd_first, fwd_last, seconds, lcore_of)
    per_lcore = {}
    for q in per_rxq:
        if q["lcore"] is not None and q["pps"] is not None:
            per_lcore.setdefault(q["lcore"], {"lcore": q["lcore"], "pps": 0.0, "queues": []})
            per_lcore[q["lcore"]]["pps"] += q["pps"]
            per_lcore[q["lcore"]]["queues"].append([q["port"], q["queue"]])
    rx_total = sum(p["rx_pps"] or 0 for p in ports)
    tx_total = sum(p["tx_pps"] or 0 for p in ports)
    return {
        "pps": rx_total,
        "tx_pps": tx_total,
        "seconds": seconds,
        "window": {"start": t0, "end": t1},
        "samples": samples,
        "ports": ports,
        "per_rxq": per_rxq,
        "per_rxq_source": source,
        "per_lcore": [per_lcore[k] for k in sorted(per_lcore)],
    }


def measurement_of(summary, snaps, forward_mode):
    """The one ``measurement`` shape (_measurement) from ``summarize``'s result and its xstats snapshots.

    pps is the RX rate of all ports (the top-level ``pps``); per_cpu are the forwarding lcores (EAL ``-l``: an
    lcore id is its CPU); the imbalance verdict covers the lcores, and the RX queues when there is one port
    (queue ids of several ports would collide).
    """
    def rx_total(xstats):
        return sum(port_counters(x)["rx_packets"] or 0 for x in xstats.values())

    samples = _measurement.samples_from_counts(snaps, rx_total)
    per_cpu = [{"cpu": e["lcore"], "pps": e["pps"]} for e in summary["per_lcore"]]
    per_rxq = [dict(q) for q in summary["per_rxq"] if q["pps"] is not None]
    single_port = len({q["port"] for q in per_rxq}) <= 1
    imbalance = (_xdp_counters.imbalance(per_cpu, per_rxq if single_port else [])
                 if (per_cpu or per_rxq) and summary["pps"] else None)
    source = {"kind": "testpmd", "at": _measurement.AT_DUT, "forward_mode": forward_mode,
              "counter": XSTAT_PORT["rx_packets"], "per_rxq_source": summary["per_rxq_source"],
              "ports": [e["name"] for e in summary["ports"]]}
    return _measurement.measurement(
        summary["pps"], _measurement.window_of(snaps[0][0], snaps[-1][0]), source,
        packets=sum(e["rx_packets"] or 0 for e in summary["ports"]), per_cpu=per_cpu, per_rxq=per_rxq,
        samples=samples, imbalance=imbalance,
        details={"tx_pps": summary["tx_pps"], "rx_missed_pps": sum(e["rx_missed_pps"] or 0 for e in summary["ports"])})


def _fwd_rxq(first, last, seconds, lcore_of):
    def table(fwd):
        if fwd["streams"]:
            return {(s["rx_port"], s["rx_queue"]): s.get("rx_packets", 0) for s in fwd["streams"]}
        # one stream per port: the port block is that stream (queue 0)
        return {(p, 0): v.get("rx_packets", 0) for p, v in fwd["ports"].items()}

    a, b = table(first), table(last)
    return [{"port": port, "queue": queue, "packets": b[(port, queue)] - a.get((port, queue), 0),
             "pps": _rate(a.get((port, queue), 0), b[(port, queue)], seconds), "lcore": lcore_of.get((port, queue))}
            for port, queue in sorted(b)]


# ---------------------------------------------------------------------------------------------------------------
# process and session
# ---------------------------------------------------------------------------------------------------------------


class RunFiles(Process):
    """testpmd's run files (_process.Process): ``<run_dir>/<name>.json`` (pid, start time, command, file prefix),
    ``<name>.log`` (the transcript of its pty: its stdout and stderr) and ``<name>.exit.json`` (how it ended)."""

    kind = "testpmd"

    def __init__(self, run_dir, name):
        super().__init__(run_dir, name, state_suffix=".json", out_suffix=None, err_suffix=".log")
        self.log_path = self.err_path

    def load(self):
        try:
            return self.load_state()
        except ProcessError:
            return {"corrupt": True}

    def save(self, state):
        self.save_state(state)

    def alive(self, state):
        return bool(state and state.get("pid")) and self.running(state)

    def stop_recorded(self, term_timeout=3.0):
        """SIGTERM, then SIGKILL, to the recorded testpmd (and its process group) if it still is ours."""
        return self.stop(timeout=term_timeout, sig=signal.SIGTERM, group=True)


def remove_runtime_dir(file_prefix, base="/var/run/dpdk"):
    """Remove EAL's runtime directory of a file prefix once its process is gone."""
    path = os.path.join(base, file_prefix)
    if file_prefix and os.path.isdir(path) and os.path.realpath(path).startswith(os.path.realpath(base) + os.sep):
        shutil.rmtree(path, ignore_errors=True)
        return path
    return None


class Session:
    """dpdk-testpmd in interactive mode on a pseudo-terminal, started through the one process helper.

    Its supervisor records how it ended, so a testpmd killed mid-measurement is reported with its
    signal; ``run_files`` (a RunFiles) keeps the state file a later ``state=absent`` finds.
    """

    def __init__(self, argv, log_path=None, env=None, run_files=None, extra_state=None):
        import pty
        import tempfile

        self.argv = argv
        self._tmp = None
        if run_files is None:
            self._tmp = tempfile.mkdtemp(prefix="xdplab-testpmd-")
            run_files = RunFiles(self._tmp, "session")
        self.run_files = run_files
        self.master, slave = pty.openpty()
        self._buf = b""
        self.transcript = bytearray()
        self.log = open(log_path, "wb") if log_path else None  # noqa: SIM115 (closed in close())
        try:
            self.state = run_files.start(argv, {}, settle=0, stdin=slave, stdout=slave, stderr=slave, env=env,
                                         extra=extra_state, check=False)  # fmt: skip
        except ProcessError as exc:
            os.close(self.master)
            if self.log:
                self.log.close()
            raise TestpmdError(str(exc)) from None
        finally:
            os.close(slave)
        self.start_time = self.state["start_time"]
        self.exit = None

    @property
    def pid(self):
        return self.state["pid"]

    def running(self):
        return self.run_files.running(self.state)

    def exit_info(self, wait=5.0):
        """How testpmd ended (None while it runs); its stderr tail is the end of the cleaned transcript."""
        self.run_files.wait(wait, self.state)
        info = self.run_files.exit(self.state)
        if info is not None:
            info["stderr_tail"] = tail(self.text())
        return info

    def died(self, when):
        """The TestpmdError of a testpmd that ended by itself: its status or signal, and its output's last lines."""
        info = self.exit_info()
        what = "testpmd (%s, pid %d)" % (os.path.basename(self.argv[0]), self.pid)
        if info is None:
            return TestpmdError("%s closed its terminal %s but still runs" % (what, when), self.text())
        return TestpmdError(failure_message(what, info, when), self.text(), process=process_result(info))

    def _read(self, timeout):
        ready, _w, _x = select.select([self.master], [], [], timeout)
        if not ready:
            return b""
        try:
            data = os.read(self.master, 65536)
        except OSError as exc:
            if exc.errno == errno.EIO:  # the process closed the terminal
                return None
            raise
        if not data:
            return None
        self.transcript += data
        if self.log:
            self.log.write(data)
            self.log.flush()
        return data

    def until_prompt(self, timeout):
        """Output up to the next prompt; raises TestpmdError if the process ends or the time runs out."""
        deadline = time.monotonic() + timeout
        while PROMPT not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestpmdError("testpmd gave no prompt within %.0f s" % timeout, self.text())
            data = self._read(min(left, 0.5))
            if data is None:
                raise self.died("during the session")
            self._buf += data
        out, _sep, self._buf = self._buf.partition(PROMPT)
        return out

    def command(self, line, timeout=15.0):
        """Send one command; return (its output without the echo, monotonic time sent, monotonic time done)."""
        self._buf = b""
        sent = time.monotonic()
        os.write(self.master, line.encode() + b"\n")
        out = clean(self.until_prompt(timeout))
        done = time.monotonic()
        first, _sep, rest = out.partition("\n")
        if first.strip() == line.strip():
            out = rest
        return out, sent, done

    def text(self):
        return clean(bytes(self.transcript))

    def close(self, quit_timeout=5.0):
        """quit, then SIGTERM, then SIGKILL; always closes the terminal. Returns the exit status (-N: signal N)."""
        try:
            if self.running():
                with contextlib.suppress(OSError):
                    os.write(self.master, b"stop\nquit\n")
                deadline = time.monotonic() + quit_timeout
                while self.running() and time.monotonic() < deadline:
                    if self._read(0.2) is None:
                        break
                self.run_files.wait(max(0.0, deadline - time.monotonic()), self.state)
            if self.running():
                self.run_files.stop(timeout=3.0, sig=signal.SIGTERM, group=True)
            # drain what it printed on the way out
            while self._read(0) not in (None, b""):
                pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self.master)
            if self.log:
                self.log.close()
        self.exit = self.exit_info()
        if self._tmp:
            self.run_files.remove()
        if self.exit is None or (self.exit.get("exit_status") is None and self.exit.get("signal") is None):
            return None
        return self.exit["exit_status"] if self.exit.get("signal") is None else -self.exit["signal"]
