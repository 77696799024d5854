# SPDX-License-Identifier: GPL-3.0-or-later
"""xdplab-trafficgen against the real kernel: the --rate cap holds the offered load (CPU-usage experiment).

Two namespaces ``tr-<random>-{gen,dut}`` joined by a veth pair; GRO on the DUT side so veth's NAPI takes
the redirected frames. The cap is checked against the generator's own count and against the DUT's veth
receive counter, with a loose tolerance: it tests pacing, not this shared machine's speed.
"""

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "bpf", "build", "xdplab-trafficgen")
OBJECT = os.path.join(ROOT, "bpf", "build", "xdp_trafficgen.bpf.o")


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@pytest.fixture
def veth_pair(netlab, bpf_build):
    bpf_build("xdplab-trafficgen")
    # gen0 <-> dut0, GRO on the DUT end; torn down by the netlab fixture
    lab = netlab("tr", sides=("gen", "dut"), pairs=[("gen0", "dut0")], gro=["dut0"], lo=False)
    return lab.gen, lab.dut


def run_gen(ns, *extra):
    proc = sh("ip", "netns", "exec", ns, BINARY, "--dev", "gen0", "--src-mac", "02:00:00:00:00:01",
              "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2",
              "--cpus", "0", "--duration", "2", "--obj", OBJECT, *extra)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    return records[-1]


def rx_packets(ns):
    return int(sh("ip", "netns", "exec", ns, "cat", "/sys/class/net/dut0/statistics/rx_packets").stdout)


def test_rate_cap_holds_the_offered_load(veth_pair):
    gen, dut = veth_pair
    before = rx_packets(dut)
    summary = run_gen(gen, "--rate", "200000")
    received = rx_packets(dut) - before
    assert summary["type"] == "summary" and summary["rate_pps"] == 200000
    assert 0.85 * 200000 <= summary["pps"] <= 1.05 * 200000, summary
    # what the DUT's veth received is what was sent (nothing refused at this load)
    assert received >= 0.95 * summary["sent"], (received, summary["sent"])


def test_bad_rate_is_refused(veth_pair):
    gen, _dut = veth_pair
    proc = sh("ip", "netns", "exec", gen, BINARY, "--dev", "gen0", "--src-mac", "02:00:00:00:00:01",
              "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2",
              "--rate", "-5", check=False)
    assert proc.returncode != 0
    assert "--rate: '-5' is not a rate" in proc.stderr
