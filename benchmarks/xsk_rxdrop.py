#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""xsk_rxdrop.py: AF_XDP rxdrop (copy mode, XDP in drv vs skb mode) against XDP_DROP on the virtual lab.

Builds namespaces xd-xs-bm-<random>-{tg,dut} joined by a 2-queue veth pair (GRO on), offers 64-byte UDP from
xdplab-trafficgen as fast as it can, and measures the DUT side:

  xsk-drv        xdplab-xsk-bench --mode rxdrop --copy --drv-mode   (rate: the sockets' RX count)
  xsk-drv-poll   the same with --poll (threads sleep in poll() instead of spinning)
  xsk-skb        xdplab-xsk-bench --mode rxdrop --copy --skb-mode
  xsk-skb-poll   the same with --poll
  xdp-drop       xdp_bare_drop.bpf.o attached natively               (rate: veth's rx_queue_N_xdp_drops)

in two layouts: "1q" (1 flow to queue 0, generator on CPU 0, the AF_XDP thread on CPU 1) and "2q" (2 flows, queue q
from generator CPU q, AF_XDP thread of queue q on CPU q: everything shares the machine's 2 CPUs). On veth, XDP runs
in the NAPI of the sending CPU, so the generator and the DUT's XDP share a CPU in every layout.
Each figure is the mean over --samples seconds after --warmup seconds, from the programs' own counters on
CLOCK_MONOTONIC; the offered rate is the generator's over the same window (its interval records). Prints provenance,
then one table row per run.

On veth the generator and the DUT are coupled: XDP runs in the NAPI of the sender's CPU and the frames come from the
generator's page pool, so what the DUT does with a frame changes how fast the generator can send (measured here:
about 1 Mpps offered under XDP_DROP, 3-5 Mpps under an AF_XDP redirect). Compare "pps" with "offered_pps" of the same
row; "rx_ring_full/s" is what the sockets lost because the application did not keep up.

    benchmarks/xsk_rxdrop.py [--rounds 1] [--warmup 1] [--samples 3] [--layouts 1q,2q]

Needs root, and builds bpf/ into a temporary directory.
"""

import argparse
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
from ansible_collections.xdplab.testbed.plugins.module_utils import _process
from ansible_collections.xdplab.testbed.plugins.module_utils import _xsk as xsk

TG_MAC, DUT_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
TG_IP, DUT_IP = "10.203.0.1", "10.203.0.2"
LAYOUTS = {
    # name: (flows = DUT queues used, generator CPUs, AF_XDP queues, AF_XDP CPUs)
    "1q": (1, [0], [0], [1]),
    "2q": (2, [0, 1], [0, 1], [0, 1]),
}
SYSTEMS = ("xsk-drv", "xsk-drv-poll", "xsk-skb", "xsk-skb-poll", "xdp-drop")


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def version_of(argv):
    try:
        return sh(*argv).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


class Bench:
    def __init__(self, build, warmup, samples):
        tag = secrets.token_hex(3)
        self.tg, self.dut = f"xd-xs-bm-{tag}-tg", f"xd-xs-bm-{tag}-dut"
        self.build, self.warmup, self.samples = build, warmup, samples
        self.created = []

    def up(self):
        for ns in (self.tg, self.dut):
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
        sh("ip", "-n", self.tg, "link", "add", "tg0", "numtxqueues", "2", "numrxqueues", "2", "type", "veth",
           "peer", "name", "dut0", "netns", self.dut, "numtxqueues", "2", "numrxqueues", "2")  # fmt: skip
        sh("ip", "-n", self.tg, "link", "set", "tg0", "address", TG_MAC, "up")
        sh("ip", "-n", self.dut, "link", "set", "dut0", "address", DUT_MAC, "up")
        for ns, dev in ((self.dut, "dut0"), (self.tg, "tg0")):
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "gro", "on")

    def down(self):
        for ns in self.created:
            sh("ip", "netns", "del", ns, check=False)

    def generator(self, flows, cpus, seconds):
        argv = ["ip", "netns", "exec", self.tg, os.path.join(self.build, "xdplab-trafficgen"), "--dev", "tg0",
                "--src-mac", TG_MAC, "--dst-mac", DUT_MAC, "--src-ip", TG_IP, "--dst-ip", DUT_IP, "--flows", str(flows),
                "--queues", str(flows), "--cpus", ",".join(map(str, cpus)), "--duration", str(seconds),
                "--obj", os.path.join(self.build, "xdp_trafficgen.bpf.o")]  # fmt: skip
        return argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def offered(proc, start, end):
        """The generator's rate over the intervals whose middle lies in [start, end] (CLOCK_MONOTONIC)."""
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError("xdplab-trafficgen failed: %s" % err.strip())
        inside = [r for r in _process.json_records(out)
                  if r["type"] == "interval" and start <= r["mono"] - r["interval_s"] / 2 <= end]  # fmt: skip
        return sum(r["sent"] for r in inside) / sum(r["interval_s"] for r in inside) if inside else float("nan")

    def run_xsk(self, layout, xdp_mode, poll):
        flows, gen_cpus, queues, cpus = LAYOUTS[layout]
        seconds = self.warmup + self.samples + 1
        gen_argv, gen = self.generator(flows, gen_cpus, seconds + 2)
        time.sleep(0.5)
        argv = ["ip", "netns", "exec", self.dut, os.path.join(self.build, "xdplab-xsk-bench"), "--dev", "dut0",
                "--mode", "rxdrop", "--copy", "--skb-mode" if xdp_mode == "skb" else "--drv-mode",
                "--queues", ",".join(map(str, queues)), "--cpus", ",".join(map(str, cpus)),
                "--duration", str(seconds)] + (["--poll"] if poll else [])  # fmt: skip
        proc = sh(*argv, check=False)
        if proc.returncode != 0:
            gen.kill()
            raise RuntimeError("xdplab-xsk-bench failed: %s" % proc.stderr.strip())
        res = xsk.summarize(_process.json_records(proc.stdout), "rxdrop", self.warmup, self.samples)
        offered = self.offered(gen, res["window"]["start"], res["window"]["end"])
        ring_full = sum(e["rx_ring_full"] for e in res["xdp_stats"]) / res["seconds"]
        return {
            "pps": res["pps"], "per_queue": [round(q["pps"]) for q in res["per_rxq"]], "offered_pps": offered,
            "rx_ring_full_pps": ring_full, "command": argv[4:], "generator": gen_argv[4:],
            "bind_mode": res["bind_mode"], "xdp_mode": res["xdp_mode"],
        }  # fmt: skip

    def drops(self):
        out = sh("ip", "netns", "exec", self.dut, "ethtool", "-S", "dut0").stdout
        counts = {}
        for line in out.splitlines():
            key, _sep, value = line.strip().partition(":")
            if key.startswith("rx_queue_") and key.endswith("_xdp_drops"):
                counts[int(key.split("_")[2])] = int(value)
        return time.monotonic(), counts

    def run_xdp_drop(self, layout):
        flows, gen_cpus, queues, _cpus = LAYOUTS[layout]
        obj = os.path.join(self.build, "xdp_bare_drop.bpf.o")
        sh("ip", "-n", self.dut, "link", "set", "dev", "dut0", "xdpdrv", "obj", obj, "sec", "xdp")
        try:
            gen_argv, gen = self.generator(flows, gen_cpus, self.warmup + self.samples + 2)
            time.sleep(0.5 + self.warmup)
            t0, before = self.drops()
            time.sleep(self.samples)
            t1, after = self.drops()
            offered = self.offered(gen, t0, t1)
        finally:
            sh("ip", "-n", self.dut, "link", "set", "dev", "dut0", "xdpdrv", "off")
        per_queue = [(after[q] - before[q]) / (t1 - t0) for q in queues]
        command = ["ip", "link", "set", "dev", "dut0", "xdpdrv", "obj", "xdp_bare_drop.bpf.o", "sec", "xdp"]
        return {
            "pps": sum((after[q] - before[q]) for q in after) / (t1 - t0), "per_queue": [round(p) for p in per_queue],
            "offered_pps": offered, "rx_ring_full_pps": None, "command": command,
            "generator": gen_argv[4:], "bind_mode": "-", "xdp_mode": "native",
        }  # fmt: skip

    def run(self, system, layout):
        if system == "xdp-drop":
            return self.run_xdp_drop(layout)
        return self.run_xsk(layout, "skb" if system.startswith("xsk-skb") else "native", system.endswith("-poll"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--layouts", default="1q,2q")
    args = ap.parse_args()
    layouts = args.layouts.split(",")
    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown:
        ap.error("unknown layout %s (known: %s)" % (", ".join(unknown), ", ".join(LAYOUTS)))
    if os.geteuid() != 0:
        print("xsk_rxdrop.py: needs root (namespaces, XDP, AF_XDP)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="xd-xs-bm-") as build:
        targets = [os.path.join(build, t) for t in ("xdplab-xsk-bench", "xdplab-trafficgen", "xdp_trafficgen.bpf.o",
                                                    "xdp_bare_drop.bpf.o")]  # fmt: skip
        sh("make", "-s", "-C", os.path.join(ROOT, "bpf"), "BUILD=%s" % build, *targets)
        print("# kernel %s (%s), %d CPUs, %s" % (platform.release(), platform.version(), os.cpu_count(),
                                                 version_of(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"])))  # fmt: skip
        print("# libbpf %s, libxdp %s, clang: %s, commit %s" % (
            version_of(["dpkg-query", "-W", "-f", "${Version}", "libbpf1"]),
            version_of(["dpkg-query", "-W", "-f", "${Version}", "libxdp1"]), version_of(["clang", "--version"]),
            version_of(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])))  # fmt: skip
        print("# 64-byte UDP from xdplab-trafficgen; warm-up %gs, window %d x 1 s; copy mode (veth has no zero-copy)"
              % (args.warmup, args.samples))  # fmt: skip
        print("%-6s %-12s %-5s %12s %12s %14s %s" % ("layout", "system", "round", "pps", "offered_pps", "rx_ring_full/s",
                                                     "per_queue_pps"))  # fmt: skip
        bench = Bench(build, args.warmup, args.samples)
        try:
            bench.up()
            for layout in layouts:
                for rnd in range(1, args.rounds + 1):
                    for system in SYSTEMS:
                        r = bench.run(system, layout)
                        full = "-" if r["rx_ring_full_pps"] is None else "%.0f" % r["rx_ring_full_pps"]
                        print("%-6s %-12s %-5d %12.0f %12.0f %14s %s" % (layout, system, rnd, r["pps"], r["offered_pps"],
                                                                         full, r["per_queue"]))  # fmt: skip
                        print("#   %s | generator: %s" % (" ".join(r["command"]), " ".join(r["generator"])))
                        sys.stdout.flush()
        finally:
            bench.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
