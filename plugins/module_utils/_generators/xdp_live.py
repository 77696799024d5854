# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backend `xdp_live`: bpf/xdp_trafficgen (BPF_PROG_RUN with live frames) on a veth.

veth hands a frame sent by ndo_xdp_xmit to the peer's RX queue
`smp_processor_id() % real_num_rx_queues`, so "flow i lands on DUT queue i" is
achieved by one sender thread per DUT queue, each pinned to a CPU c with
c % queues == q. This module picks those CPUs from the generator's CPU list.
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.xdplab.testbed.plugins.module_utils import _addresses as addresses
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import (
    GeneratorError,
    ProcessRun,
    address_lists,
)

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
MIN_PACKET_LEN = 64
MAX_PACKET_LEN = 1518
EGRESS_DELIVERED = re.compile(r"^tx_queue_\d+_xdp_xmit$")
EGRESS_REFUSED = re.compile(r"^tx_queue_\d+_xdp_xmit_errors$")
# backend_options xdp_live takes: latency_stamp (bool) writes the in-band latency stamp into every frame
# (xdplab-trafficgen --latency-stamp; read by bpf/xdp_latency_sink.bpf.c and the module latency_stats)
BACKEND_OPTIONS = ("latency_stamp",)
# the program's option for each address list (traffic_generator's destinations, sources)
LIST_FLAGS = {"destinations": "--dst-list", "sources": "--src-list"}


def pick_sender_cpus(cpus, queues, stream_count):
    """CPU for each sender thread: thread q must run on a CPU c with c % queues == q."""
    active = min(stream_count, queues)
    chosen = []
    for q in range(active):
        candidates = [c for c in cpus if c % queues == q and c not in chosen]
        if not candidates:
            raise GeneratorError(
                "no generator CPU c in %s with c %% %d == %d, so DUT queue %d cannot be reached: veth delivers a "
                "frame to RX queue (sending CPU %% queue count). Add such a CPU to the generator's CPU list "
                "(xdplab_generator_cpus) or use a stream_count of at most %d" % (cpus, queues, q, q, len(chosen))
            )
        chosen.append(candidates[0])
    return chosen


def write_list(path, addrs):
    """An address list for the program (one address a line), written whole or not at all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(addresses.list_text(addrs))
    os.replace(tmp, path)


class XdpLiveGenerator:
    name = "xdp_live"
    default_binary = "/usr/local/lib/xdplab/bin/xdplab-trafficgen"

    def __init__(self, params, run_command):
        self.p = params
        self.run_command = run_command  # AnsibleModule.run_command
        self.run = ProcessRun(params["run_dir"], params["name"])
        self.run.backend = self.name
        self.lists = {}

    # -- validation -------------------------------------------------------------------------
    def validate(self):
        p = self.p
        unknown = sorted(set(p.get("backend_options") or {}) - set(BACKEND_OPTIONS))
        if unknown:
            raise GeneratorError(
                "backend xdp_live takes only the backend_options %s (got %s)" % (", ".join(BACKEND_OPTIONS), ", ".join(unknown))
            )
        stamp = (p.get("backend_options") or {}).get("latency_stamp", False)
        if not isinstance(stamp, bool):
            raise GeneratorError("backend_options.latency_stamp must be true or false, got %r" % (stamp,))
        for key in ("interface", "src_mac", "dst_mac", "src_ip", "dst_ip"):
            if not p.get(key):
                raise GeneratorError("backend xdp_live needs %s" % key)
        for key in ("src_mac", "dst_mac"):
            if not MAC_RE.match(p[key]):
                raise GeneratorError("%s=%r is not a MAC address like 02:00:00:00:00:01" % (key, p[key]))
        for key in ("src_ip", "dst_ip"):
            try:
                ipaddress.IPv4Address(p[key])
            except ValueError:
                raise GeneratorError("%s=%r is not an IPv4 address" % (key, p[key])) from None
        if not MIN_PACKET_LEN <= p["packet_len"] <= MAX_PACKET_LEN:
            raise GeneratorError(
                "packet_len=%d is outside %d..%d (frame length with FCS)" % (p["packet_len"], MIN_PACKET_LEN, MAX_PACKET_LEN)
            )
        if not os.path.isdir("/sys/class/net/%s" % p["interface"]):
            raise GeneratorError(
                "interface %s does not exist here; this host has: %s"
                % (p["interface"], ", ".join(sorted(os.listdir("/sys/class/net"))))
            )
        if not os.access(self.binary(), os.X_OK):
            raise GeneratorError(
                "%s is not installed; build and install bpf/ with the role xdplab.testbed.bpf_programs" % self.binary()
            )
        if not p.get("cpus"):
            raise GeneratorError("backend xdp_live needs the generator's CPU list (cpus)")
        self.sender_cpus = pick_sender_cpus(p["cpus"], p["queues"], p["stream_count"])
        self.lists = address_lists(p)

    def binary(self):
        return self.p.get("binary") or self.default_binary

    def command(self):
        p = self.p
        cmd = [
            self.binary(),
            "--dev", p["interface"],
            "--src-mac", p["src_mac"], "--dst-mac", p["dst_mac"],
            "--src-ip", p["src_ip"], "--dst-ip", p["dst_ip"],
            "--pkt-len", str(p["packet_len"]),
            "--flows", str(p["stream_count"]),
            "--port-base", str(p["port_base"]),
            "--queues", str(p["queues"]),
            "--cpus", ",".join(str(c) for c in self.sender_cpus),
            "--duration", str(p["duration"]),
            "--batch", str(p["batch"]),
        ]
        if p.get("rate_pps"):
            cmd += ["--rate", "%.0f" % p["rate_pps"]]
        if self.latency_stamp():
            cmd.append("--latency-stamp")
        for option in sorted(self.lists):
            cmd += [LIST_FLAGS[option], self.run.list_path(option)]
        return cmd

    def latency_stamp(self):
        return bool((self.p.get("backend_options") or {}).get("latency_stamp", False))

    # -- egress counters ---------------------------------------------------------------------
    def egress_counters(self, interface):
        try:
            stats = ethtool.stats(self.run_command, interface)
        except ethtool.EthtoolError:
            return None  # a driver without statistics: egress stays unknown
        return {
            "delivered": sum(v for k, v in stats.items() if EGRESS_DELIVERED.match(k)),
            "refused": sum(v for k, v in stats.items() if EGRESS_REFUSED.match(k)),
        }

    # -- lifecycle ---------------------------------------------------------------------------
    def identity(self):
        """The parameters that make two runs the same run (for idempotency)."""
        keys = ("interface", "src_mac", "dst_mac", "src_ip", "dst_ip", "packet_len", "stream_count",
                "port_base", "queues", "cpus", "duration", "batch", "rate_pps")
        ident = dict({k: self.p.get(k) for k in keys}, latency_stamp=self.latency_stamp())
        for option, (_addrs, described) in self.lists.items():
            ident[option] = described["sha256"]
        return ident

    def start(self):
        params = {"identity": self.identity(), "egress_before": self.egress_counters(self.p["interface"])}
        for option, (addrs, described) in self.lists.items():
            write_list(self.run.list_path(option), addrs)
            params[option] = described
        state = self.run.spawn(self.command(), params, start_record=True)
        return state

    def summary(self, state, partial=False):
        """The run's summary from its last JSON line; with partial=True, a run cut short (killed) gets one
        from its interval records instead, marked complete=false."""
        records = self.run.json_lines()
        final = next((r for r in reversed(records) if r.get("type") == "summary"), None)
        intervals = [r for r in records if r.get("type") == "interval"]
        if final is None and partial and intervals:
            seconds = sum(r.get("interval_s", 0) for r in intervals)
            sent = sum(r.get("sent", 0) for r in intervals)
            final = {"sent": sent, "elapsed_s": seconds, "pps": sent / seconds if seconds else 0.0, "complete": False}
        if final is None:
            raise GeneratorError(
                "the generator left no summary in %s (stderr: %s)"
                % (self.run.out_path, self.run.read_err().strip() or "empty")
            )
        params = (state or {}).get("params", {})
        before = params.get("egress_before")
        interface = params.get("identity", {}).get("interface") or self.p.get("interface")
        after = self.egress_counters(interface) if interface else None
        egress = {"delivered": None, "refused": None}
        if before and after:
            egress = {k: after[k] - before[k] for k in egress}
        return {
            "backend": self.name,
            "sent": final["sent"],
            "elapsed_s": final["elapsed_s"],
            "offered_pps": final["pps"],
            "rate_pps": final.get("rate_pps", 0),
            "packet_len": final.get("pkt_len", self.p["packet_len"]),
            "stream_count": final.get("flows", self.p["stream_count"]),
            "queues": final.get("queues", self.p["queues"]),
            "threads": final.get("threads", []),
            "intervals": intervals,
            "complete": final.get("complete", True),
            "egress": egress,
            "latency_stamp": bool(final.get("latency_stamp", False)),
            # how --rate was held (xdplab-trafficgen 0.2.0: program, calls, call_length, none) and the seconds of
            # schedule dropped because a sender lagged (its CPU was taken); None from older builds
            "pacing": final.get("pacing"),
            "schedule_dropped_s": final.get("schedule_dropped_s"),
            "version": final.get("version", ""),
            "command": (state or {}).get("command", []),
            # the address lists (issue 27), only when the run had them: how they were made, sha256, first entries
            **{option: params[option] for option in LIST_FLAGS if params.get(option)},
        }
