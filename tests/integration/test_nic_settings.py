# SPDX-License-Identifier: GPL-3.0-or-later
"""nic_settings on a real veth pair (namespace ``xd-tu-<random>``, ends n0/n1, 4 RX/TX queues each): channels are
really set (veth implements ethtool -L for rx/tx), what veth does not implement fails or is skipped with the
kernel's reason, check mode and verify change nothing, a second run changes nothing, bad values change nothing."""

import json
import os
import secrets
import subprocess
import sys

import pytest

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULE = "ansible_collections.xdplab.testbed.plugins.modules.nic_settings"


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


@pytest.fixture
def veth(tmp_path, netlab):
    # one namespace holding both ends n0/n1 (4 queues each); torn down by the netlab fixture
    lab = netlab("xd-tu", single=True, pairs=[("n0", "n1")], queues=4, macs={"n0": "02:58:44:54:55:01"}, lo=False)
    return {"ns": lab.ns, "tmp": tmp_path}


def run(lab, args):
    path = lab["tmp"] / f"args-{secrets.token_hex(4)}.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(["ip", "netns", "exec", lab["ns"], sys.executable, "-m", MODULE, str(path)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def channels(lab, dev="n0"):
    out = sh("ip", "netns", "exec", lab["ns"], "ethtool", "-l", dev).stdout
    cur = out.split("Current hardware settings:")[1]
    return {k: int(cur.split(f"{k.upper()}:")[1].split()[0]) for k in ("rx", "tx")}


def test_channels_for_real_check_mode_idempotence_and_drift(veth):
    want = {"interface": "n0", "mac": "02:58:44:54:55:01", "channels": {"rx": 2, "tx": 2}}
    res = run(veth, {**want, "_ansible_check_mode": True, "_ansible_diff": True})
    assert res["changed"] is True and res["commands"] == ["ethtool -L n0 rx 2 tx 2"]
    assert res["diff"] == {"before": {"channels": {"rx": 4, "tx": 4}}, "after": {"channels": {"rx": 2, "tx": 2}}}
    assert channels(veth) == {"rx": 4, "tx": 4}

    res = run(veth, want)
    assert res["changed"] is True and res["driver"] == "veth"
    assert channels(veth) == {"rx": 2, "tx": 2}
    res = run(veth, want)
    assert res["changed"] is False and res["drift"] == [] and res["commands"] == []

    sh("ip", "netns", "exec", veth["ns"], "ethtool", "-L", "n0", "tx", "3")
    res = run(veth, {**want, "verify": True})
    assert res["changed"] is False and res["drift"] == [{"interface": "n0", "item": "channels.tx", "expected": 2,
                                                         "actual": 3}]
    assert channels(veth) == {"rx": 2, "tx": 3}
    res = run(veth, want)
    assert res["changed"] is True and channels(veth) == {"rx": 2, "tx": 2}


def test_what_veth_does_not_implement(veth):
    rest = {"rings": {"rx": 256}, "pause": {"autoneg": False, "rx": False, "tx": False},
            "private_flags": {"rx_striding_rq": False}, "ntuple_udp_flows": 2, "irq_cpus": [0, 1]}
    res = run(veth, {"interface": "n0", "channels": {"rx": 2}, **rest})
    assert res["failed"] and "n0: rings is not supported: driver veth: ethtool -g n0: netlink error: Operation not " \
        "supported" in res["msg"]
    assert channels(veth) == {"rx": 4, "tx": 4}  # failed before the channels changed
    res = run(veth, {"interface": "n0", "channels": {"rx": 2}, "unsupported": "skip", **rest})
    assert res["changed"] is True and channels(veth)["rx"] == 2
    reasons = {s["item"]: s["reason"] for s in res["skipped_items"]}
    assert set(reasons) == {"rings", "pause", "private_flags", "ntuple_rules", "irq_affinity"}
    for item in ("rings", "pause", "private_flags", "ntuple_rules"):
        assert "Operation not supported" in reasons[item], reasons
    assert "driver veth has no per-queue IRQs" in reasons["irq_affinity"]


@pytest.mark.parametrize("args, msg", [
    ({"channels": {"rx": 8}}, "n0: channels.rx=8 exceeds the maximum 4 (ethtool -l n0); lower channels.rx"),
    ({"channels": {"combined": 2}}, "channels.combined=2 but the device has no combined channels"),
    ({"mac": "02:58:44:54:55:0"}, "mac '02:58:44:54:55:0' is not a unicast MAC address"),
    ({"mac": "02:58:44:54:55:02"}, "n0 has MAC 02:58:44:54:55:01, not 02:58:44:54:55:02"),
    ({"pci": "0000:3:00.0"}, "pci '0000:3:00.0' is not a PCI address"),
    ({"pci": "0000:03:00.0"}, "n0 is at PCI address (none) (driver veth), not 0000:03:00.0"),
    ({"irq_cpus": [0, 4096]}, "irq_affinity queue 1: CPU(s) [4096] are not online on this host"),
])
def test_bad_input_changes_nothing(veth, args, msg):
    res = run(veth, {"interface": "n0", "channels": {"tx": 1}, "unsupported": "skip", **{"channels": {"tx": 1}, **args}})
    assert res["failed"] and msg in res["msg"], res["msg"]
    assert channels(veth) == {"rx": 4, "tx": 4}
