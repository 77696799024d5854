# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backend `iperf3`: TCP streams from Debian's iperf3 client to a server on the DUT (module iperf3_server).

The TCP experiment (playbooks/vars/xdp_pass_tcp.yml) offers traffic with it. A TCP sender is closed-loop, so
"offered" is what left the generator's port: its packet counter (/sys/class/net/IF/statistics) over the run.
The client runs for the measurement (``time`` = warm-up + window, ``omit`` = warm-up) and ends by itself, so
its JSON has the receiver's sums; the summary carries them in ``tcp`` (contract 4: the record's tcp section).

backend_options: server (the DUT's address; default dst_ip), port, streams, window (iperf3 -w: 4M, 256K, or
"default"), time, omit (seconds), cpus (the client's CPUs; default the generator's cpus), binary.
"""

from __future__ import annotations

import os
import shutil

from ansible_collections.xdplab.testbed.plugins.module_utils import _iperf3 as iperf3
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import (
    GeneratorError,
    ProcessRun,
    refuse_address_lists,
)

OPTION_KEYS = ("server", "port", "streams", "window", "time", "omit", "cpus", "binary")
FCS_BYTES = 4


def link_counters(interface):
    """tx_packets and tx_bytes of an interface of this namespace, None where unreadable."""
    out = {}
    for key in ("tx_packets", "tx_bytes"):
        try:
            with open("/sys/class/net/%s/statistics/%s" % (interface, key)) as f:
                out[key] = int(f.read())
        except (OSError, ValueError):
            return None
    return out


class Iperf3Generator:
    name = "iperf3"

    def __init__(self, params, run_command):
        self.p = params
        self.o = dict(params.get("backend_options") or {})
        self.run_command = run_command
        self.run = ProcessRun(params["run_dir"], params["name"])
        self.run.backend = self.name

    def validate(self):
        refuse_address_lists(self.p, self.name, "iperf3 runs TCP streams between two fixed addresses")
        unknown = sorted(set(self.o) - set(OPTION_KEYS))
        if unknown:
            raise GeneratorError(
                "backend iperf3 does not know backend_options %s (known: %s)" % (", ".join(unknown), ", ".join(OPTION_KEYS))
            )
        try:
            iperf3.window_bytes(self.o.get("window"))
        except iperf3.Iperf3Error as exc:
            raise GeneratorError(str(exc)) from None
        if not self.server():
            raise GeneratorError("backend iperf3 needs the server's address (backend_options.server or dst_ip)")
        if not os.path.isdir("/sys/class/net/%s" % self.p["interface"]):
            raise GeneratorError("interface %s does not exist here" % self.p["interface"])
        binary = self.o.get("binary") or "iperf3"
        if not (os.access(binary, os.X_OK) or shutil.which(binary)):
            raise GeneratorError("%s is not installed on the generator host: apt-get install iperf3" % binary)
        for key in ("streams", "time"):
            if key in self.o and int(self.o[key]) < 1:
                raise GeneratorError("backend_options.%s must be at least 1, got %s" % (key, self.o[key]))

    def server(self):
        return self.o.get("server") or self.p.get("dst_ip")

    def streams(self):
        return int(self.o.get("streams") or self.p.get("stream_count") or 1)

    def command(self):
        return iperf3.client_command(
            self.server(),
            port=self.o.get("port") or iperf3.DEFAULT_PORT,
            streams=self.streams(),
            seconds=self.o.get("time") or self.p["duration"],
            omit=self.o.get("omit") or 0,
            window=self.o.get("window"),
            cpus=self.o.get("cpus") if self.o.get("cpus") is not None else self.p.get("cpus"),
            binary=self.o.get("binary") or "iperf3",
        )

    def identity(self):
        return {"command": self.command(), "interface": self.p["interface"]}

    def start(self):
        params = {"identity": self.identity(), "link_before": link_counters(self.p["interface"])}
        return self.run.spawn(self.command(), params, settle=0.3)

    def summary(self, state, partial=False):
        try:
            with open(self.run.out_path) as f:
                doc = iperf3.parse_client_json(f.read())
        except (OSError, iperf3.Iperf3Error) as exc:
            raise GeneratorError(
                "the iperf3 client left no JSON result in %s (%s; stderr: %s)"
                % (self.run.out_path, exc, self.run.read_err().strip() or "empty")
            ) from None
        tcp = iperf3.tcp_result(doc)
        params = (state or {}).get("params", {})
        interface = params.get("identity", {}).get("interface") or self.p.get("interface")
        before, after = params.get("link_before"), link_counters(interface) if interface else None
        sent = after["tx_packets"] - before["tx_packets"] if before and after else 0
        nbytes = after["tx_bytes"] - before["tx_bytes"] if before and after else 0
        elapsed = tcp["seconds"] + (tcp["omit_s"] or 0)
        if tcp["error"] and tcp["goodput_source"] != "sender_intervals" and not tcp["seconds"]:
            raise GeneratorError("iperf3 failed: %s" % tcp["error"])
        return {
            "backend": self.name,
            "sent": sent,
            "elapsed_s": elapsed,
            "offered_pps": sent / elapsed if elapsed else 0.0,
            "rate_pps": 0,
            # the mean frame on the wire (with FCS) of what the generator's port sent: data segments and ACKs
            "packet_len": round(nbytes / sent) + FCS_BYTES if sent else None,
            "stream_count": tcp["streams"] or self.streams(),
            "queues": self.p.get("queues"),
            "threads": [],
            "intervals": [],
            "complete": True,
            "egress": {"delivered": None, "refused": None},
            "version": tcp["version"],
            "command": (state or {}).get("command", []),
            "tcp": tcp,
        }
