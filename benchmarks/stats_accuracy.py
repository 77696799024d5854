#!/usr/bin/env python
"""Accuracy of xdplab.testbed.xdp_stats against the veth driver's own counters.

Builds a throwaway pair of namespaces (xbench-acc-tg / xbench-acc-dut) joined by a veth,
attaches xdp_bench_drop with xdplab.testbed.xdp_program, offers traffic with
xdplab.testbed.traffic_generator, and runs xdplab.testbed.xdp_stats, which samples the
program's rxq_stats map and `ethtool -S` over the same window. Compares the program's total
pps with the sum of the driver's rx_queue_N_xdp_packets rates. Prints one line per run and
exits 3 (BOUND_EXCEEDED, benchmarks/run_all.py) when they differ by more than 1%; any other non-zero exit
means it could not measure. Everything is removed on every exit path.

    .venv/bin/python benchmarks/stats_accuracy.py [--runs 3] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))
NS_TG, NS_DUT = "xbench-acc-tg", "xbench-acc-dut"
IF_TG, IF_DUT = "vacc-tg", "vacc-dut"
MAC_TG, MAC_DUT = "02:58:44:50:0a:01", "02:58:44:50:0a:02"
TOLERANCE = 0.01
BOUND_EXCEEDED = 3  # the exit status of a run that measured and missed the bound (benchmarks/run_all.py)
XDP_PACKETS = re.compile(r"^rx_queue_\d+_xdp_packets$")


def sh(*argv):
    subprocess.run(argv, check=True)


def ansible(inventory, host, module, args):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.oneline",
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))  # fmt: skip
    out = subprocess.run(
        [os.path.join(VENV_BIN, "ansible"), "-i", inventory, host, "-m", module, "-a", json.dumps(args)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    line = next((x for x in out.stdout.splitlines() if x.startswith(host + " | ")), None)
    if line is None or "=> " not in line:
        raise SystemExit("%s on %s gave no result: %s" % (module, host, (out.stdout + out.stderr)[-2000:]))
    result = json.loads(line.split("=> ", 1)[1])
    if result.get("failed") or result.get("unreachable") or (" | SUCCESS" not in line and " | CHANGED" not in line):
        raise SystemExit("%s on %s failed: %s" % (module, host, result.get("msg")))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3, help="samples of 1 s per run")
    args = ap.parse_args()
    sh("make", "-s", "-C", os.path.join(ROOT, "bpf"))
    build = os.path.join(ROOT, "bpf", "build")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as inventory:
        json.dump({"all": {"hosts": {"tg": {"ansible_host": NS_TG}, "dut": {"ansible_host": NS_DUT}},
                           "vars": {"ansible_connection": "xdplab.testbed.netns",
                                    "ansible_python_interpreter": sys.executable}}}, inventory)  # fmt: skip
    worst = 0.0
    try:
        sh("ip", "netns", "add", NS_TG)
        sh("ip", "netns", "add", NS_DUT)
        sh("ip", "link", "add", IF_TG, "netns", NS_TG, "address", MAC_TG, "type", "veth",
           "peer", IF_DUT, "netns", NS_DUT, "address", MAC_DUT)  # fmt: skip
        sh("ip", "-n", NS_TG, "link", "set", IF_TG, "up")
        sh("ip", "-n", NS_DUT, "link", "set", IF_DUT, "up")
        ansible(inventory.name, "dut", "xdplab.testbed.xdp_program",
                {"interface": IF_DUT, "object": os.path.join(build, "xdp_bench.bpf.o"), "program": "xdp_bench_drop"})
        for run in range(1, args.runs + 1):
            ansible(inventory.name, "tg", "xdplab.testbed.traffic_generator",
                    {"state": "started", "name": "accuracy", "run_dir": "/run/xdplab/bench", "interface": IF_TG,
                     "src_mac": MAC_TG, "dst_mac": MAC_DUT, "src_ip": "198.18.0.1", "dst_ip": "198.18.0.2",
                     "cpus": [0], "duration": args.seconds + 10,
                     "binary": os.path.join(build, "xdplab-trafficgen")})  # fmt: skip
            stats = ansible(inventory.name, "dut", "xdplab.testbed.xdp_stats",
                            {"interface": IF_DUT, "warmup": 1, "interval": 1, "samples": args.seconds, "ethtool": True})
            ansible(inventory.name, "tg", "xdplab.testbed.traffic_generator",
                    {"state": "stopped", "name": "accuracy", "run_dir": "/run/xdplab/bench"})
            driver = sum(v for k, v in stats["ethtool"].items() if XDP_PACKETS.match(k))
            program = stats["total_pps"]
            diff = abs(program - driver) / driver if driver else 1.0
            worst = max(worst, diff)
            print("run %d: xdp_stats %.0f pps, veth rx_queue_*_xdp_packets %.0f pps, difference %.3f%%"
                  % (run, program, driver, 100 * diff))  # fmt: skip
    finally:
        subprocess.run([os.path.join(VENV_BIN, "ansible"), "-i", inventory.name, "tg", "-m",
                        "xdplab.testbed.traffic_generator", "-a", "state=stopped name=accuracy run_dir=/run/xdplab/bench"],
                       cwd=ROOT, capture_output=True, check=False)  # fmt: skip
        subprocess.run(["ip", "netns", "del", NS_TG], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", NS_DUT], check=False, capture_output=True)
        subprocess.run(["rm", "-rf", "/run/xdplab/bench"], check=False)
        os.unlink(inventory.name)
    verdict = "PASS" if worst <= TOLERANCE else "FAIL"
    print("worst difference %.3f%% (bound %.0f%%): %s" % (100 * worst, 100 * TOLERANCE, verdict))
    return 0 if verdict == "PASS" else BOUND_EXCEEDED


if __name__ == "__main__":
    sys.exit(main())
