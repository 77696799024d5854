#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What bpf/xdp_lb's counters cost per packet: the program as shipped against the same source built with
-DXDPLAB_LB_NO_COUNTERS (no lb_stats or vip_stats update), both on the balanced path of a flow already in the LRU table.

No traffic: each object is attached to a veth of a throwaway namespace xbench-lbc-<random> (`ip link set DEV xdpdrv obj
OBJ`), its maps filled by module xdplab.testbed.xdp_lb_config (1 VIP, 100 reals, 65,537-slot ring),
and the kernel runs it on one 64-byte UDP frame to the VIP (BPF_PROG_RUN, one run per call, --calls calls; the
kernel's own ``duration`` of each run, averaged, includes its clock reads, the same for both variants; the run:
parse, VIP lookup, LRU lookup, reals lookup, adjust_head, the outer header and its checksum, and with counters
three per-CPU array updates). The two variants alternate for --rounds rounds; the
cost is the median over rounds of (counters - none). The namespace goes on every exit path.
Needs root and clang/bpftool (as bpf/Makefile):

    .venv/bin/python benchmarks/lb_counter_cost.py [--rounds 15] [--calls 200000]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf

MODULE = "ansible_collections.xdplab.testbed.plugins.modules.xdp_lb_config"
VIP, PORT = "198.18.0.2", 12


def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True)


def build(out_dir, name, extra):
    arch = sh("gcc", "-dumpmachine").stdout.strip()
    unlinked = os.path.join(out_dir, name + ".unlinked.o")
    obj = os.path.join(out_dir, name + ".bpf.o")
    sh("clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf", f"-I/usr/include/{arch}", "-I", os.path.join(ROOT, "bpf"),
       *extra, "-c", os.path.join(ROOT, "bpf", "xdp_lb.bpf.c"), "-o", unlinked)  # fmt: skip
    sh("bpftool", "gen", "object", obj, unlinked)
    return obj


def frame():
    import ipaddress
    import struct

    udp = struct.pack("!HHHH", 9, PORT, 26, 0) + bytes(18)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     ipaddress.IPv4Address("172.16.0.1").packed, ipaddress.IPv4Address(VIP).packed)  # fmt: skip
    return bytes(6) + bytes.fromhex("025844501b01") + b"\x08\x00" + ip + udp


def run_ns(prog_id, data, calls):
    """BPF_PROG_RUN ``calls`` times, one run each: the mean of the kernel's ``duration`` (ns). One run per call: with a
    repeat count the kernel runs the program again on the frame the previous run left (here the encapsulated one,
    which xdp_lb passes on untouched), not on the frame given."""
    lib = _libbpf.load_library()
    fd = _libbpf.prog_fd_by_id(prog_id)
    try:
        buf_in = ctypes.create_string_buffer(data, len(data))
        buf_out = ctypes.create_string_buffer(len(data) + 256)
        opts = _libbpf._BpfTestRunOpts(sz=ctypes.sizeof(_libbpf._BpfTestRunOpts))
        opts.data_in = ctypes.cast(buf_in, ctypes.c_void_p)
        opts.data_size_in = len(data)
        opts.data_out = ctypes.cast(buf_out, ctypes.c_void_p)
        opts.repeat = 1
        total = 0
        for _call in range(calls):
            opts.data_size_out = len(buf_out)
            ret = lib.bpf_prog_test_run_opts(fd, ctypes.byref(opts))
            if ret != 0 or opts.retval != 3:
                raise SystemExit(f"BPF_PROG_RUN of program {prog_id}: ret {ret}, XDP action {opts.retval} (want XDP_TX 3)")
            total += opts.duration
        return total / calls
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--json", help="also write the result to this file")
    args = ap.parse_args()
    ns = f"xbench-lbc-{secrets.token_hex(3)}"
    with tempfile.TemporaryDirectory() as tmp:
        objs = {"counters": build(tmp, "with", []), "none": build(tmp, "without", ["-DXDPLAB_LB_NO_COUNTERS"])}
        sh("ip", "netns", "add", ns)
        try:
            progs = {}
            for i, (name, obj) in enumerate(objs.items()):
                sh("ip", "-n", ns, "link", "add", f"lb{i}", "type", "veth", "peer", "name", f"lbp{i}")
                for dev in (f"lb{i}", f"lbp{i}"):
                    sh("ip", "-n", ns, "link", "set", dev, "up")
                sh("ip", "-n", ns, "link", "set", "dev", f"lb{i}", "xdpdrv", "obj", obj, "sec", "xdp")
                argsf = os.path.join(tmp, "args.json")
                with open(argsf, "w") as fh:
                    json.dump({"ANSIBLE_MODULE_ARGS": {"interface": f"lb{i}", "vip_ip": VIP, "port_base": PORT, "vips": 1,
                                                       "reals_per_vip": 100}}, fh)  # fmt: skip
                env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "collections"))
                res = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", MODULE, argsf], capture_output=True,
                                     text=True, check=False, env=env)  # fmt: skip
                out = json.loads(res.stdout)
                if out.get("failed"):
                    raise SystemExit(f"xdp_lb_config on {name}: {out.get('msg')}")
                progs[name] = out["prog_id"]
                print(f"{name}: program {out['prog_id']} on lb{i}", flush=True)
            data = frame()
            for prog in progs.values():
                run_ns(prog, data, 10)  # the flow into each LRU table
            rows = []
            for r in range(args.rounds):
                order = list(progs) if r % 2 == 0 else list(reversed(progs))
                got = {name: run_ns(progs[name], data, args.calls) for name in order}
                rows.append(got)
                print(f"round {r + 1}: counters {got['counters']:.1f} ns, none {got['none']:.1f} ns", flush=True)
            with_c = statistics.median(r["counters"] for r in rows)
            without = statistics.median(r["none"] for r in rows)
            diffs = sorted(r["counters"] - r["none"] for r in rows)
            cost = statistics.median(diffs)
            result = {
                "rounds": args.rounds,
                "calls": args.calls,
                "counters_ns": round(with_c, 1),
                "none_ns": round(without, 1),
                "counters_cost_ns": round(cost, 1),
                "cost_min_max_ns": [round(diffs[0], 1), round(diffs[-1], 1)],
                "kernel": os.uname().release,
            }
            print(json.dumps(result))
            if args.json:
                with open(args.json, "w", encoding="utf-8") as fh:
                    json.dump(result, fh, indent=1)
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    main()
