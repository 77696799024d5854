# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backend `trex`: a T-Rex stateless server on the generator host, driven by xdplab-trex-run.

The runner (installed by the role xdplab.testbed.trex) connects to the server, loads a profile onto
one T-Rex port, sends for the trial's duration and prints JSON lines like xdplab-trafficgen's; this
backend spawns it with ProcessRun, so started/stopped/absent work as for xdp_live, and stopping it
(SIGINT) makes the runner stop the T-Rex traffic and print its summary.

T-Rex owns its ports through DPDK: `interface` names one of them, by PCI address (looked up in
backend_options.ports, the trex_cfg.yaml port order) or by port number. `queues` and `cpus` do not
steer anything here: the DUT's RSS spreads flow i (UDP port port_base + i) over its queues, and T-Rex
places its own worker threads (trex_cfg.yaml platform.dual_if). backend_options (host var
xdplab_generator_options) carries the T-Rex settings, see OPTIONS.
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import (
    GeneratorError,
    ProcessRun,
    refuse_address_lists,
)

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
MIN_PACKET_LEN = 64
MAX_PACKET_LEN = 1518
PROFILES = ("udp_for_benchmarks.py", "udp_multi_ip.py", "udp_latency.py")

# backend_options keys: name -> (type, default, description)
OPTIONS = {
    "trex_dir": (str, "/opt/trex/v3.04", "T-Rex install directory (role xdplab.testbed.trex: trex_dir)"),
    "runner": (str, "/usr/local/lib/xdplab/bin/xdplab-trex-run", "path of the runner script"),
    "lib_dir": (str, "/usr/local/lib/xdplab/trex", "directory of xdplab_trex.py and profiles/"),
    "python": (str, "/usr/bin/python3", "interpreter for the runner"),
    "server": (str, "127.0.0.1", "T-Rex server address"),
    "sync_port": (int, 4501, "T-Rex RPC (sync) port"),
    "async_port": (int, 4500, "T-Rex publisher (async) port"),
    "ports": (list, [], "PCI addresses of the T-Rex ports in trex_cfg.yaml order (maps interface to a port number)"),
    "port": (int, None, "T-Rex port that sends (overrides the lookup of interface)"),
    "rx_ports": (list, [], "T-Rex ports the traffic comes back on (forwarding tests): enables received/not_received"),
    "profile": (str, "udp_for_benchmarks.py", "profile under lib_dir/profiles, or an absolute path"),
    "tunables": (dict, {}, "extra profile tunables (e.g. ip_count for udp_multi_ip.py)"),
    "mult": (str, "100%", "T-Rex multiplier when rate_pps is 0 (100% = line rate)"),
    "warmup_s": (float, 0.0, "seconds sent before the counters are cleared"),
    "latency": (bool, False, "add a latency stream (profile udp_latency.py) and report its percentiles"),
    "latency_pps": (float, 1000.0, "rate of the latency stream"),
    "pg_id": (int, 7, "flow-stats group id of the latency stream"),
    "percentiles": (list, [50, 90, 99, 99.9], "latency percentiles to report"),
    "settle_s": (float, 0.5, "seconds between stopping and reading the final counters"),
    "check_server": (bool, True, "check the server's RPC port answers before starting"),
}


def options(given):
    """backend_options with defaults, type-checked; unknown keys are an error naming the known ones."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise GeneratorError(
            "backend trex does not know backend_options %s; it takes: %s" % (", ".join(unknown), ", ".join(sorted(OPTIONS)))
        )
    out = {}
    for key, (kind, default, _doc) in OPTIONS.items():
        value = given.get(key, default)
        if value is None:
            out[key] = None
            continue
        try:
            if kind is bool and isinstance(value, str):
                value = value.strip().lower() in ("1", "true", "yes", "on")
            elif kind in (list, dict) and not isinstance(value, kind):
                raise TypeError
            else:
                value = kind(value)
        except (TypeError, ValueError):
            raise GeneratorError("backend_options.%s=%r is not a %s" % (key, value, kind.__name__)) from None
        out[key] = value
    return out


def port_for(interface, opts):
    """The T-Rex port number that sends: backend_options.port, else interface's place in ports, else a number."""
    if opts["port"] is not None:
        return opts["port"]
    if interface in opts["ports"]:
        return opts["ports"].index(interface)
    if interface is not None and str(interface).isdigit():
        return int(interface)
    if trex.valid_pci(str(interface)):
        raise GeneratorError(
            "interface %s is a PCI address but not one of backend_options.ports %s: list the T-Rex ports in "
            "trex_cfg.yaml order (xdplab_generator_options.ports) or set backend_options.port" % (interface, opts["ports"])
        )
    raise GeneratorError(
        "interface %r names no T-Rex port: give its PCI address (one of backend_options.ports) or the port number" % (interface,)
    )


class TrexGenerator:
    name = "trex"

    def __init__(self, params, run_command):
        self.p = params
        self.run_command = run_command
        self.opts = options(params.get("backend_options"))
        self.run = ProcessRun(params["run_dir"], params["name"])
        self.run.backend = self.name

    # -- validation -------------------------------------------------------------------------
    def validate(self):
        p, o = self.p, self.opts
        # a T-Rex profile takes no file of addresses; mapping a list onto its field engine is not written yet
        refuse_address_lists(
            p,
            self.name,
            "on T-Rex, vary the destination with the profile udp_multi_ip.py (backend_options.profile, tunables.ip_count) "
            "or send from xdp_live",
        )
        for key in ("src_ip", "dst_ip"):
            if p.get(key):
                try:
                    ipaddress.IPv4Address(p[key])
                except ValueError:
                    raise GeneratorError("%s=%r is not an IPv4 address" % (key, p[key])) from None
        for key in ("src_mac", "dst_mac"):
            if p.get(key) and not MAC_RE.match(p[key]):
                raise GeneratorError("%s=%r is not a MAC address like 02:00:00:00:00:01" % (key, p[key]))
        if not MIN_PACKET_LEN <= p["packet_len"] <= MAX_PACKET_LEN:
            raise GeneratorError(
                "packet_len=%d is outside %d..%d (frame length with FCS)" % (p["packet_len"], MIN_PACKET_LEN, MAX_PACKET_LEN)
            )
        for pci in o["ports"]:
            if pci != "dummy" and not trex.valid_pci(str(pci)):
                raise GeneratorError("backend_options.ports: %r is not a PCI address like 0000:03:00.0" % (pci,))
        self.port = port_for(p.get("interface"), o)
        try:
            self.mult = self.multiplier()
            trex.histogram_percentiles({}, o["percentiles"])
        except trex.TrexError as exc:
            raise GeneratorError(str(exc)) from None
        profile = self.profile_path()
        for path, what in ((o["runner"], "the runner xdplab-trex-run"), (profile, "the profile")):
            if not os.path.isfile(path):
                raise GeneratorError("%s (%s) is not installed: run the role xdplab.testbed.trex on this host" % (path, what))
        try:
            trex.check_install(o["trex_dir"], os.path.exists)
            if o["check_server"]:
                trex.check_server(o["server"], o["sync_port"])
        except trex.TrexError as exc:
            raise GeneratorError(str(exc)) from None

    def multiplier(self):
        # with latency on too: T-Rex does not scale a latency stream by the multiplier (a fixed-rate stream), so
        # udp_latency.py's load streams take any multiplier and a pps one is the total with the latency stream's rate
        rate = self.p.get("rate_pps") or 0
        if self.latency_only():
            # the latency stream is the whole load: no load streams, and the raw multiplier (a pps one would leave
            # T-Rex nothing to scale)
            return "1"
        return trex.mult_for(rate, self.opts["mult"])

    def latency_only(self):
        """With latency on and latency_pps >= rate_pps > 0, every frame is a latency frame (load_pps 0)."""
        rate = self.p.get("rate_pps") or 0
        return bool(self.opts["latency"] and rate > 0 and self.opts["latency_pps"] >= rate)

    def profile_path(self):
        o = self.opts
        profile = "udp_latency.py" if o["latency"] else o["profile"]
        return profile if os.path.isabs(profile) else os.path.join(o["lib_dir"], "profiles", profile)

    def tunables(self):
        p, o = self.p, self.opts
        t = {"packet_len": p["packet_len"], "stream_count": p["stream_count"], "port_base": p["port_base"]}
        for key in ("src_ip", "dst_ip", "dst_mac", "src_mac"):
            if p.get(key):
                t[key] = p[key]
        if o["latency"]:
            t.update(pg_id=o["pg_id"], latency_pps=o["latency_pps"])
            if self.latency_only():
                t.update(latency_pps=p["rate_pps"], load_pps=0)
        t.update(o["tunables"])
        return t

    def command(self):
        o = self.opts
        cmd = [
            o["python"], o["runner"], "run",
            "--trex-dir", o["trex_dir"], "--lib-dir", o["lib_dir"],
            "--server", o["server"], "--sync-port", str(o["sync_port"]), "--async-port", str(o["async_port"]),
            "--port", str(self.port),
            "--profile", self.profile_path(),
            "--mult", self.mult,
            "--duration", str(self.p["duration"]),
            "--warmup", "%g" % o["warmup_s"],
            "--settle", "%g" % o["settle_s"],
        ]  # fmt: skip
        for rx in o["rx_ports"]:
            cmd += ["--rx-port", str(int(rx))]
        for key, value in sorted(self.tunables().items()):
            cmd += ["--tunable", "%s=%s" % (key, value)]
        if o["latency"]:
            cmd += ["--latency-pgid", str(o["pg_id"])]
            for pct in o["percentiles"]:
                cmd += ["--percentile", "%g" % float(pct)]
        return cmd

    # -- lifecycle ---------------------------------------------------------------------------
    def identity(self):
        keys = ("interface", "src_mac", "dst_mac", "src_ip", "dst_ip", "packet_len", "stream_count",
                "port_base", "queues", "duration", "rate_pps")  # fmt: skip
        ident = {k: self.p.get(k) for k in keys}
        ident["backend_options"] = self.opts
        return ident

    def start(self):
        params = {"identity": self.identity(), "rate_pps": self.p.get("rate_pps") or 0, "queues": self.p["queues"],
                  "packet_len": self.p["packet_len"], "stream_count": self.p["stream_count"]}  # fmt: skip
        # the runner connects, resets the ports and loads the profile before it sends: give it time to fail early
        return self.run.spawn(self.command(), params, settle=2.0)

    def summary(self, state, partial=False):  # partial: T-Rex's runner prints no partial counts
        records = self.run.json_lines()
        final = next((r for r in reversed(records) if r.get("type") == "summary"), None)
        if final is None:
            error = next((r.get("message") for r in reversed(records) if r.get("type") == "error"), None)
            raise GeneratorError(
                "xdplab-trex-run left no summary in %s: %s"
                % (self.run.out_path, error or self.run.read_err().strip() or "no error message")
            )
        params = (state or {}).get("params", {})
        intervals = [r for r in records if r.get("type") == "interval"]
        return trex.generator_summary(final, intervals, (state or {}).get("command", []), params)
