# SPDX-License-Identifier: GPL-3.0-or-later
"""ethtool_stats against real veth counters with real traffic.

Namespaces ``xd-tu-<random>-g`` (generator) and ``xd-tu-<random>-d`` (receiver) joined by two veth pairs
(g0 <-> d0, g1 <-> d1, one queue each, GRO on the receiving ends so they have NAPI). bpf/build/xdplab-trafficgen
sends at a capped rate on each pair (100 kpps on g0, 40 kpps on g1); on veth such frames arrive through
ndo_xdp_xmit and are counted in the receiver's ``rx_queue_0_xdp_packets``. The module runs as Ansible runs it
(own process, arguments from a JSON file) inside the receiver's namespace, with both devices at once; over a
window that contains the generators' whole runs, rate x elapsed must give back exactly what each generator sent.
"""

import json
import os
import re
import secrets
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
GEN = os.path.join(ROOT, "bpf", "build", "xdplab-trafficgen")
GEN_OBJ = os.path.join(ROOT, "bpf", "build", "xdp_trafficgen.bpf.o")
MODULE = "ansible_collections.xdplab.testbed.plugins.modules.ethtool_stats"
LINE = re.compile(r"^Ethtool\((d[01]) {6}\) stat: +(\d+) \( +([\d,]+)\) <= (\S+) /sec$")


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@pytest.fixture
def pairs(tmp_path, netlab, bpf_build):
    bpf_build("xdplab-trafficgen")
    # two pairs g0/d0 and g1/d1, GRO on the d ends; the namespaces go with the netlab fixture
    lab = netlab("xd-es", sides=("g", "d"), pairs=[("g0", "d0"), ("g1", "d1")], gro=["d0", "d1"], lo=False,
                 addresses={"g0": "10.78.0.1/30", "d0": "10.78.0.2/30", "g1": "10.78.1.1/30", "d1": "10.78.1.2/30"})
    procs = []
    try:
        yield {"g": lab.g, "d": lab.d, "tmp": tmp_path, "procs": procs}
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)


def mac(ns, dev):
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", dev).stdout)[0]["address"]


def start_generator(lab, i, rate, seconds):
    argv = ["ip", "netns", "exec", lab["g"], GEN, "--dev", f"g{i}", "--src-mac", mac(lab["g"], f"g{i}"),
            "--dst-mac", mac(lab["d"], f"d{i}"), "--src-ip", f"10.78.{i}.1", "--dst-ip", f"10.78.{i}.2",
            "--pkt-len", "64", "--flows", "1", "--port-base", "12", "--queues", "1", "--cpus", "0",
            "--duration", str(seconds), "--rate", str(rate), "--obj", GEN_OBJ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lab["procs"].append(proc)
    return proc


def module_args_file(lab, args):
    path = lab["tmp"] / f"args-{secrets.token_hex(4)}.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return ["ip", "netns", "exec", lab["d"], sys.executable, "-m", MODULE, str(path)]


def module(lab, args):
    proc = subprocess.run(module_args_file(lab, args), capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def test_rates_of_two_devices_under_real_traffic(pairs):
    # The module's window (6 samples of 1 s) contains both generators' whole runs (2 s each, started 1 s after the
    # module), so each device's counter delta must be exactly what its generator sent, and rate x seconds gives it
    # back; the per-sample rates add up to the same count.
    mod = subprocess.Popen(module_args_file(pairs, {"devices": ["d0", "d1"], "interval": 1.0, "samples": 6,
                                                    "format_lines": True, "_ansible_check_mode": True}),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=COLLECTIONS))
    pairs["procs"].append(mod)
    time.sleep(1.0)
    gens = [start_generator(pairs, 0, 100_000, 2), start_generator(pairs, 1, 40_000, 2)]
    summaries = []
    for g in gens:
        out, _err = g.communicate(timeout=30)
        lines = [json.loads(x) for x in out.strip().splitlines()]
        assert lines[-1]["type"] == "summary", out
        summaries.append(lines)
    out, err = mod.communicate(timeout=30)
    assert out.strip(), err
    res = json.loads(out)
    assert not res.get("failed"), res
    assert res["changed"] is False
    start, end = res["window"]["start"], res["window"]["end"]
    for i, rate in ((0, 100_000), (1, 40_000)):
        rates, seconds = res["rates"][f"d{i}"], res["seconds"][f"d{i}"]
        sent = summaries[i][-1]["sent"]
        intervals = [x for x in summaries[i] if x["type"] == "interval"]
        # the generator ran inside the window (its records are on the same monotonic clock)
        assert start < intervals[0]["mono"] - intervals[0]["interval_s"] and intervals[-1]["mono"] < end
        assert rates["rx_queue_0_xdp_packets"] * seconds == pytest.approx(sent, rel=1e-9)
        assert sum(s["rates"][f"d{i}"].get("rx_queue_0_xdp_packets", 0) * s["seconds"][f"d{i}"]
                   for s in res["samples"]) == pytest.approx(sent, rel=1e-9)
        # traffic flowed (the 2 CPUs are shared: the generator may stay below its cap)
        assert 0.3 * rate * 2 < sent <= 1.05 * rate * 2.2
        # a 64-byte frame is 60 bytes without FCS on veth
        assert rates["rx_queue_0_xdp_bytes"] == pytest.approx(60 * rates["rx_queue_0_xdp_packets"], rel=1e-9)
        assert set(rates) == {"rx_queue_0_xdp_packets", "rx_queue_0_xdp_bytes"}  # only what changed
        assert seconds == pytest.approx(6.0, abs=0.5) and len(res["samples"]) == 6
    # the measurement: veth's per-queue rx_queue_N_xdp_packets of both devices, what the generators sent
    m = res["measurement"]
    assert m["source"] == {"kind": "ethtool", "at": "dut", "counter": "rx_queue_{queue}_xdp_packets",
                           "devices": ["d0", "d1"]}
    assert m["packets"] == sum(s[-1]["sent"] for s in summaries) and len(m["samples"]) == 6
    assert sum(x["packets"] for x in m["samples"]) == m["packets"]
    assert [(q["device"], q["queue"]) for q in m["per_rxq"]] == [("d0", 0), ("d1", 0)]
    assert res["header"] == "Show adapter d0 d1 statistics (ONLY that changed!)"
    parsed = [LINE.match(line) for line in res["lines"]]
    assert all(parsed), res["lines"]
    assert [(m.group(1), m.group(4)) for m in parsed] == [
        ("d0", "rx_queue_0_xdp_bytes"), ("d0", "rx_queue_0_xdp_packets"),
        ("d1", "rx_queue_0_xdp_bytes"), ("d1", "rx_queue_0_xdp_packets")]
    for m in parsed:
        assert int(m.group(3).replace(",", "")) == int(m.group(2))
        assert int(m.group(2)) == round(res["rates"][m.group(1)][m.group(4)])


def test_idle_devices_and_a_missing_one(pairs):
    res = module(pairs, {"devices": ["d0"], "interval": 0.3, "format_lines": True})
    assert res["rates"] == {"d0": {}} and res["lines"] == []
    res = module(pairs, {"devices": ["d0"], "interval": 0.3, "changed_only": False, "include": ["^rx_queue_0_"]})
    assert set(res["rates"]["d0"]) == {"rx_queue_0_xdp_packets", "rx_queue_0_xdp_bytes", "rx_queue_0_drops",
                                       "rx_queue_0_xdp_redirect", "rx_queue_0_xdp_drops", "rx_queue_0_xdp_tx",
                                       "rx_queue_0_xdp_tx_errors"}
    res = module(pairs, {"devices": ["d0", "g0"], "interval": 0.3})
    assert res["failed"] and "cannot read the counters of g0" in res["msg"]
