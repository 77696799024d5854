#!/usr/bin/env python
"""DPDK rxonly drop rate on the virtual lab's veth: net_af_packet vs net_af_xdp, measured by xdplab.testbed.testpmd.

Builds a throwaway pair of namespaces (xd-tp-bench-tg / xd-tp-bench-dut) joined by a veth (2 queues, GRO on the
DUT side), offers 64-byte UDP frames with bpf/build/xdplab-trafficgen (one flow, one sender thread on CPU 0, so
every frame lands on DUT RX queue 0), and runs the module through the ``ansible`` CLI inside the DUT namespace
with one RX queue, main lcore 0 and forwarding lcore 1, alternating the two drivers. The offered load is the
generator's own per-second records cut to the module's window (both on CLOCK_MONOTONIC). Prints one line per run
and a median per driver, with the provenance (kernel, DPDK, CPU). Everything is removed on every exit path.

    .venv/bin/python benchmarks/testpmd_veth_rxonly.py [--runs 3] [--seconds 3] [--simd 64]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))
NS_TG, NS_DUT = "xd-tp-bench-tg", "xd-tp-bench-dut"
IF_TG, IF_DUT = "veth-tg0", "veth-dut0"
GEN = os.path.join(ROOT, "bpf", "build", "xdplab-trafficgen")
GEN_OBJ = os.path.join(ROOT, "bpf", "build", "xdp_trafficgen.bpf.o")
RUN_DIR = "/run/xdplab/testpmd-bench"
DRIVERS = {
    "af_packet": "net_af_packet0,iface=%s" % IF_DUT,
    "af_xdp": "net_af_xdp0,iface=%s,start_queue=0,queue_count=1" % IF_DUT,
}


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def lab_up():
    sh("ip", "netns", "add", NS_TG)
    sh("ip", "netns", "add", NS_DUT)
    sh("ip", "-n", NS_TG, "link", "add", IF_TG, "numtxqueues", "2", "numrxqueues", "2", "type", "veth", "peer", "name",
       IF_DUT, "netns", NS_DUT, "numtxqueues", "2", "numrxqueues", "2")
    sh("ip", "-n", NS_TG, "link", "set", IF_TG, "up")
    sh("ip", "-n", NS_DUT, "link", "set", IF_DUT, "up")
    sh("ip", "netns", "exec", NS_DUT, "ethtool", "-K", IF_DUT, "gro", "on")


def lab_down():
    for ns in (NS_TG, NS_DUT):
        sh("ip", "netns", "del", ns, check=False)


def testpmd(args):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.oneline",
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    out = subprocess.run(["ip", "netns", "exec", NS_DUT, os.path.join(VENV_BIN, "ansible"), "localhost", "-c", "local",
                          "-m", "xdplab.testbed.testpmd", "-a", json.dumps(args)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    line = next((x for x in out.stdout.splitlines() if x.startswith("localhost | ")), None)
    if line is None or "=> " not in line:
        raise SystemExit("testpmd gave no result: %s" % (out.stdout + out.stderr)[-2000:])
    result = json.loads(line.split("=> ", 1)[1])
    if result.get("failed") or (" | SUCCESS" not in line and " | CHANGED" not in line):
        raise SystemExit("testpmd failed: %s" % result.get("msg"))
    return result


def offered(records, window):
    """Frames/s the generator sent inside the window (its per-second records, by their end time)."""
    inside = [r for r in records if r.get("type") == "interval" and window["start"] < r["mono"] <= window["end"] + 0.5]
    seconds = sum(r["interval_s"] for r in inside)
    return sum(r["sent"] for r in inside) / seconds if seconds else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3, help="samples of 1 s per run")
    ap.add_argument("--simd", type=int, default=None, help="max_simd_bitwidth (64 = scalar)")
    args = ap.parse_args()
    sh("make", "-s", "-C", os.path.join(ROOT, "bpf"))
    lab_down()
    rows, version = [], None
    try:
        lab_up()
        for run in range(args.runs):
            for driver, port in DRIVERS.items():
                gen = subprocess.Popen(
                    ["ip", "netns", "exec", NS_TG, GEN, "--dev", IF_TG, "--src-mac", "02:00:00:00:00:01",
                     "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2", "--flows", "1",
                     "--queues", "1", "--cpus", "0", "--duration", "60", "--obj", GEN_OBJ],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                params = {"name": "bench", "run_dir": RUN_DIR, "ports": [port], "no_huge": True, "lcores": [0, 1],
                          "nb_cores": 1, "warmup": 1, "interval": 1, "samples": args.seconds}
                if args.simd:
                    params["max_simd_bitwidth"] = args.simd
                try:
                    res = testpmd(params)
                finally:
                    gen.terminate()
                    out, _err = gen.communicate(timeout=30)
                records = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
                load = offered(records, res["window"])
                version = res.get("version")
                p = res["ports"][0]
                rows.append((driver, res["pps"]))
                print("run %d %-9s rx %10.0f pps  rx_missed %10.0f pps  offered %10s pps  burst mode %s"
                      % (run + 1, driver, res["pps"], p["rx_missed_pps"] or 0, "%.0f" % load if load else "?",
                         p["rx_burst_mode"] or "n/a (%s)" % p["burst_mode_note"]), flush=True)
        testpmd({"name": "bench", "run_dir": RUN_DIR, "state": "absent"})
    finally:
        lab_down()
    print()
    for driver in DRIVERS:
        values = [v for d, v in rows if d == driver]
        print("%-9s median %10.0f pps over %d runs (min %.0f, max %.0f)"
              % (driver, statistics.median(values), len(values), min(values), max(values)))
    with open("/proc/cpuinfo") as f:
        model = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), "?")
    print("kernel %s, %s, %s, %d CPUs, 64-byte frames, 1 flow on RX queue 0, max_simd_bitwidth %s, no_huge"
          % (platform.release(), version, model, os.cpu_count(), args.simd))


if __name__ == "__main__":
    main()
