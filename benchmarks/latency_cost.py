#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the in-band latency path costs, in ns per packet, and the clock it reads.

A veth pair in two private namespaces (lc-<random>-gen: gen0 -> lc-<random>-sink: sink0). Each round runs two
phases back to back, the generator unpaced (as fast as it can) for SECONDS:

  A  xdplab-trafficgen without stamps  ->  xdp_bare_drop on sink0      (the drop experiments' path)
  B  xdplab-trafficgen --latency-stamp ->  xdp_latency_sink on sink0   (the latency path)

With kernel.bpf_stats_enabled=1 the kernel counts each program's run time and runs; ns/packet of a program is the
delta of run_time_ns / run_cnt between two reads inside the phase (bpftool prog show). The stamp costs
B(xdp_trafficgen) - A(xdp_trafficgen), the histogram B(xdp_latency_sink) - A(xdp_bare_drop); both include the
cost of their bpf_ktime_get_ns(). Medians over ROUNDS rounds; the two phases of a round share the machine's load.
Also prints clock_getres(CLOCK_MONOTONIC), the resolution of the clock both programs read.

    sudo .venv/bin/python benchmarks/latency_cost.py [--rounds 5] [--seconds 3]

``--prog-run`` measures the programs alone instead, without traffic, namespaces or an attached program: BPF_PROG_RUN
(not live) of each program REPEAT times on one 64-byte frame, the kernel's average ns per run (opts.duration):
xdp_trafficgen with stamp_latency 0 and 1, xdp_bare_drop and xdp_latency_sink on a frame stamped just before
(its latency stays in the histogram's range; every run after the first takes the sink's "late" branch).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "bpf", "build")
GEN = os.path.join(BUILD, "xdplab-trafficgen")
GEN_OBJ = os.path.join(BUILD, "xdp_trafficgen.bpf.o")
SINK_OBJ = os.path.join(BUILD, "xdp_latency_sink.bpf.o")
BARE_OBJ = os.path.join(BUILD, "xdp_bare_drop.bpf.o")
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def prog_stats(name):
    """{id: (run_time_ns, run_cnt)} of the loaded programs whose name starts with ``name`` (15 characters kept)."""
    out = {}
    for prog in json.loads(sh("bpftool", "prog", "show", "-j").stdout):
        # bpftool prints the BTF name (full) when it has it, else the kernel's 15 characters
        if prog.get("name") and name.startswith(prog["name"]) and len(prog["name"]) >= min(len(name), 15):
            out[prog["id"]] = (prog.get("run_time_ns", 0), prog.get("run_cnt", 0))
    return out


def ns_per_packet(before, after):
    """ns/packet of the programs present in both reads (the ones running in this phase)."""
    dt = sum(after[i][0] - before[i][0] for i in after if i in before)
    dn = sum(after[i][1] - before[i][1] for i in after if i in before)
    return dt / dn if dn else float("nan"), dn


class Lab:
    def __init__(self):
        tag = secrets.token_hex(3)
        self.gen, self.sink = f"lc-{tag}-gen", f"lc-{tag}-sink"

    def up(self):
        sh("ip", "netns", "add", self.gen)
        sh("ip", "netns", "add", self.sink)
        sh("ip", "-n", self.gen, "link", "add", "gen0", "type", "veth", "peer", "name", "sink0", "netns", self.sink)
        for ns, dev in ((self.gen, "gen0"), (self.sink, "sink0")):
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "-n", ns, "link", "set", dev, "up")

    def down(self):
        for ns in (self.gen, self.sink):
            sh("ip", "netns", "del", ns, check=False)

    def attach(self, obj, sec="xdp"):
        sh("ip", "-n", self.sink, "link", "set", "dev", "sink0", "xdpdrv", "off")
        sh("ip", "-n", self.sink, "link", "set", "dev", "sink0", "xdpdrv", "obj", obj, "sec", sec)

    def phase(self, sink_obj, sink_name, stamp, seconds):
        """(generator ns/pkt, sink ns/pkt, generator Mpps) of one phase."""
        self.attach(sink_obj)
        argv = ["ip", "netns", "exec", self.gen, GEN, "--dev", "gen0", "--src-mac", "02:00:00:00:00:01",
                "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2", "--cpus", "0",
                "--duration", str(seconds), "--obj", GEN_OBJ] + (["--latency-stamp"] if stamp else [])  # fmt: skip
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(seconds * 0.25)
        g0, s0 = prog_stats("xdp_trafficgen"), prog_stats(sink_name)
        time.sleep(seconds * 0.5)
        g1, s1 = prog_stats("xdp_trafficgen"), prog_stats(sink_name)
        out, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"generator failed: {err.strip()}")
        summary = json.loads(out.splitlines()[-1])
        return ns_per_packet(g0, g1)[0], ns_per_packet(s0, s1)[0], summary["pps"] / 1e6


def prog_run_costs(rounds, repeat):
    """{name: [ns per run, one per round]} of the four programs through BPF_PROG_RUN (see the docstring)."""
    import ctypes
    import struct

    sys.path.insert(0, os.path.join(ROOT, "collections"))
    from ansible_collections.xdplab.testbed.plugins.module_utils import _latency, _libbpf

    lib = _libbpf.load_library()

    def frame(stamped):
        eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
        ip = bytes([0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
        udp = struct.pack("!HHHH", 9, 12, 26, 0)
        payload = (struct.pack(">I", _latency.STAMP_MAGIC) + struct.pack("<IQH", 0, time.monotonic_ns(), 0)
                   if stamped else bytes(_latency.STAMP.size))  # fmt: skip
        return eth + ip + udp + payload

    def run_ns(fd, data):
        buf_in = ctypes.create_string_buffer(data, len(data))
        buf_out = ctypes.create_string_buffer(len(data) + 256)
        opts = _libbpf._BpfTestRunOpts(sz=ctypes.sizeof(_libbpf._BpfTestRunOpts))
        opts.data_in, opts.data_size_in = ctypes.cast(buf_in, ctypes.c_void_p), len(data)
        opts.data_out, opts.data_size_out = ctypes.cast(buf_out, ctypes.c_void_p), len(buf_out)
        opts.repeat = repeat
        ret = lib.bpf_prog_test_run_opts(fd, ctypes.byref(opts))
        if ret < 0:
            raise RuntimeError(f"BPF_PROG_RUN failed: {os.strerror(-ret)}")
        return opts.duration

    objs, fds = [], {}
    for name, path, prog, rodata in (("trafficgen", GEN_OBJ, "xdp_trafficgen", {"stamp_latency": 0, "egress_ifindex": 1}),
                                     ("trafficgen+stamp", GEN_OBJ, "xdp_trafficgen", {"stamp_latency": 1, "egress_ifindex": 1}),
                                     ("bare_drop", BARE_OBJ, "xdp_bare_drop", {}),
                                     ("latency_sink", SINK_OBJ, "xdp_latency_sink", {})):  # fmt: skip
        obj = _libbpf.BpfObject(path)
        obj.only_load(prog)
        if rodata:
            obj.set_rodata(rodata)
        obj.load()
        objs.append(obj)
        fds[name] = obj.program_fd(obj.find_program(prog))
    out = {name: [] for name in fds}
    try:
        for _round in range(rounds):
            for name, fd in fds.items():
                out[name].append(run_ns(fd, frame(name == "latency_sink")))
    finally:
        for obj in objs:
            obj.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--prog-run", action="store_true", help="the programs alone through BPF_PROG_RUN, no traffic")
    ap.add_argument("--repeat", type=int, default=5_000_000)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("latency_cost.py: needs root (namespaces, XDP, bpf_stats)")
    if args.prog_run:
        sh("make", "-s", "-C", os.path.join(ROOT, "bpf"), "all", "build/xdp_latency_sink.bpf.o")
        costs = prog_run_costs(args.rounds, args.repeat)
        med = {k: statistics.median(v) for k, v in costs.items()}
        for k, v in costs.items():
            print(f"{k}: {', '.join(str(x) for x in v)} ns/run (median {med[k]})")
        print(f"clock_getres(CLOCK_MONOTONIC): {time.clock_getres(time.CLOCK_MONOTONIC) * 1e9:.0f} ns")
        print(f"stamping costs the generator program {med['trafficgen+stamp'] - med['trafficgen']:.0f} ns/pkt; "
              f"the histogram path costs the sink {med['latency_sink'] - med['bare_drop']:.0f} ns/pkt over XDP_DROP")
        return
    sh("make", "-s", "-C", os.path.join(ROOT, "bpf"), "all", "build/xdp_latency_sink.bpf.o")
    res_s = time.clock_getres(time.CLOCK_MONOTONIC)
    with open(STATS_SYSCTL) as f:
        stats_before = f.read().strip()
    lab = Lab()
    rows = []
    try:
        lab.up()
        with open(STATS_SYSCTL, "w") as f:
            f.write("1")
        for _round in range(args.rounds):
            a = lab.phase(BARE_OBJ, "xdp_bare_drop", False, args.seconds)
            b = lab.phase(SINK_OBJ, "xdp_latency_sink", True, args.seconds)
            rows.append((a, b))
            print(f"round: A gen {a[0]:.1f} ns sink(bare) {a[1]:.1f} ns {a[2]:.2f} Mpps | "
                  f"B gen+stamp {b[0]:.1f} ns sink(latency) {b[1]:.1f} ns {b[2]:.2f} Mpps", flush=True)
    finally:
        with open(STATS_SYSCTL, "w") as f:
            f.write(stats_before)
        lab.down()

    def med(values):
        return statistics.median(values)

    stamp = med([b[0] - a[0] for a, b in rows])
    hist = med([b[1] - a[1] for a, b in rows])
    print(f"clock_getres(CLOCK_MONOTONIC): {res_s * 1e9:.0f} ns")
    print(f"generator program: {med([a[0] for a, _b in rows]):.1f} ns/pkt plain, {med([b[0] for _a, b in rows]):.1f} "
          f"with the stamp: stamping costs {stamp:.1f} ns/pkt (median of per-round differences)")
    print(f"sink program: xdp_bare_drop {med([a[1] for a, _b in rows]):.1f} ns/pkt, xdp_latency_sink "
          f"{med([b[1] for _a, b in rows]):.1f}: the histogram path costs {hist:.1f} ns/pkt")
    print(f"generator rate: {med([a[2] for a, _b in rows]):.2f} Mpps plain, {med([b[2] for _a, b in rows]):.2f} stamped")


if __name__ == "__main__":
    main()
