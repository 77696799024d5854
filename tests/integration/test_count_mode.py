# SPDX-License-Identifier: GPL-3.0-or-later
"""count_mode of xdp_bench against the real kernel: the knob really removes the map access, and veth's own
per-queue XDP counters count what the generator sent.

The programs are attached with xdplab.testbed.xdp_program as Ansible runs it (own process in the DUT namespace,
arguments from a JSON file), the .rodata knob set by name; the loaded program is read back with
``bpftool prog dump xlated``. Traffic comes from xdplab-trafficgen (one sender per DUT queue) on a 2-queue veth.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _driver_counters as dc
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _xdp_counters as xc

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
BUILD = os.path.join(ROOT, "bpf", "build")
OBJECT = os.path.join(BUILD, "xdp_bench.bpf.o")
GENERATOR = os.path.join(BUILD, "xdplab-trafficgen")
MODULES = "ansible_collections.xdplab.testbed.plugins.modules"
TG_MAC, DUT_MAC = "02:58:44:50:0d:01", "02:58:44:50:0d:02"
COUNT_PROGRAM, COUNT_DRIVER = 0, 1
# in an xlated dump map[id:N] alone is a map pointer (lookup/update); map[id:N][0]+off a .rodata value address
MAP_POINTER = re.compile(r"map\[id:(\d+)\](?!\[)")
XLATED_INSN = re.compile(r"^\s*\d+: \(", re.M)


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@pytest.fixture(scope="module")
def built():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    proc = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "bpf")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture
def lab(netlab, built):
    # tg0 <-> dut0, 2 queues, no IPv6 (no stray router solicitations in the counters); torn down by netlab
    return netlab("xd-cm", queues=2, macs={"tg0": TG_MAC, "dut0": DUT_MAC}, no_ipv6=True)


def attach(lab, tmp_path, program, count_mode):
    variables = {"count_mode": count_mode}
    if program == "xdp_bench_redirect":
        variables["redirect_ifindex"] = "lo"
    args = {"interface": "dut0", "object": OBJECT, "program": program, "variables": variables,
            "state_dir": str(tmp_path / "state")}  # fmt: skip
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(["ip", "netns", "exec", lab.dut, sys.executable, "-m", f"{MODULES}.xdp_program", str(path)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    res = json.loads(proc.stdout)
    assert not res.get("failed"), res
    return res


def map_names(ids):
    return {int(i): libbpf.map_info(int(i))["name"] for i in ids}


@pytest.mark.parametrize("program", ["xdp_bench_drop", "xdp_bench_pass", "xdp_bench_tx", "xdp_bench_redirect"])
def test_driver_count_mode_leaves_no_map_access(lab, tmp_path, program):
    res = attach(lab, tmp_path, program, COUNT_PROGRAM)
    assert res["variables"]["count_mode"] == COUNT_PROGRAM  # read back from the attached program's .rodata
    counting = sh("bpftool", "prog", "dump", "xlated", "id", str(res["id"])).stdout
    assert set(map_names(MAP_POINTER.findall(counting)).values()) == {"rxq_stats"}, counting

    res = attach(lab, tmp_path, program, COUNT_DRIVER)
    assert res["changed"] is True and res["variables"]["count_mode"] == COUNT_DRIVER
    assert lab.xdp("dut0")["prog"]["id"] == res["id"]
    driver = sh("bpftool", "prog", "dump", "xlated", "id", str(res["id"])).stdout
    # the verifier removed the rxq_stats lookup and the counter writes: no map pointer, no store through one
    assert MAP_POINTER.findall(driver) == [], driver
    assert "rxq_stats" not in driver
    # what is left: the two .rodata loads (count_mode, touch_mode), the action and, for redirect, the helper call
    assert len(XLATED_INSN.findall(driver)) <= 9 + (3 if program == "xdp_bench_redirect" else 0), driver
    assert len(XLATED_INSN.findall(driver)) < len(XLATED_INSN.findall(counting)) / 3


def generator(lab):
    proc = sh("ip", "netns", "exec", lab.tg, GENERATOR, "--dev", "tg0", "--src-mac", TG_MAC, "--dst-mac", DUT_MAC,
              "--src-ip", "198.18.0.1", "--dst-ip", "198.18.0.2", "--flows", "2", "--queues", "2",
              "--cpus", "0,1", "--duration", "1")  # fmt: skip
    summary = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")][-1]
    assert summary["type"] == "summary" and summary["sent"] > 0, summary
    return {t["queue"]: t["sent"] for t in summary["threads"]}


def run_traffic(lab):
    """(per-queue frames sent, delivered into the DUT's rings, refused (ring full), XDP drops the DUT's veth counted)."""

    def stats():
        return (ethtool.parse_stats(lab.exec(lab.tg, "ethtool", "-S", "tg0").stdout),
                ethtool.parse_stats(lab.exec(lab.dut, "ethtool", "-S", "dut0").stdout))  # fmt: skip

    (tg0, dut0) = stats()
    sent = generator(lab)
    (tg1, dut1) = stats()
    delivered = {q: tg1[f"tx_queue_{q}_xdp_xmit"] - tg0[f"tx_queue_{q}_xdp_xmit"] for q in sent}
    refused = {q: tg1[f"tx_queue_{q}_xdp_xmit_errors"] - tg0[f"tx_queue_{q}_xdp_xmit_errors"] for q in sent}
    before, after = dc.per_queue_xdp_packets(dut0, "veth", "drop"), dc.per_queue_xdp_packets(dut1, "veth", "drop")
    return sent, delivered, refused, {q: after[q] - before[q] for q in after}


def test_veth_counters_count_what_the_generator_sent(lab, tmp_path):
    attach(lab, tmp_path, "xdp_bench_drop", COUNT_DRIVER)
    sent, delivered, refused, counted = run_traffic(lab)
    assert set(sent) == {0, 1} and all(sent.values())
    # every frame sent either entered the DUT queue's ring or was refused there; every one that entered, XDP dropped
    assert {q: delivered[q] + refused[q] for q in sent} == sent
    assert counted == delivered
    assert sum(counted.values()) > 0.5 * sum(sent.values()), (counted, sent)


def test_program_and_driver_count_the_same(lab, tmp_path):
    res = attach(lab, tmp_path, "xdp_bench_drop", COUNT_PROGRAM)
    rxq = libbpf.find_prog_map(res["id"], name="rxq_stats")
    before = xc.decode_rxq_stats(libbpf.read_percpu_array(rxq["id"]))
    _sent, delivered, _refused, counted = run_traffic(lab)
    after = xc.decode_rxq_stats(libbpf.read_percpu_array(rxq["id"]))
    program = {q: 0 for q in counted}
    for (queue, _cpu), (packets, _bytes, _errors) in after.items():
        program[queue] = program.get(queue, 0) + packets - before.get((queue, _cpu), (0, 0, 0))[0]
    assert program == counted == delivered
