# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab fixture itself (tests/integration/conftest.py): what it builds is what it was asked for, and it goes."""

import json
import subprocess
import time

import pytest

pytestmark = pytest.mark.root


def netns_list():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()


def test_two_namespaces_queues_gro_threaded_napi_and_addresses(netlab):
    lab = netlab("xd-nl", queues=2, gro=["dut0"], threaded=["dut0"], macs={"dut0": "02:00:00:00:99:02"},
                 addresses={"tg0": "10.99.0.1/30"}, no_ipv6=True)  # fmt: skip
    other = netlab("xd-nl")
    assert lab.tg != other.tg and lab.tg.startswith("xd-nl-") and lab.tg.endswith("-tg")
    assert {lab.tg, lab.dut, other.tg, other.dut} <= set(netns_list())
    link = lab.link("dut0")
    assert (link["num_rx_queues"], link["num_tx_queues"], link["address"]) == (2, 2, "02:00:00:00:99:02")
    assert "UP" in link["flags"]
    features = lab.exec(lab.dut, "ethtool", "-k", "dut0").stdout
    assert "generic-receive-offload: on" in features
    assert lab.exec(lab.dut, "cat", "/sys/class/net/dut0/threaded").stdout.strip() == "1"
    addrs = json.loads(subprocess.run(["ip", "-n", lab.tg, "-j", "addr", "show", "dev", "tg0"], capture_output=True,
                                      text=True, check=True).stdout)[0]["addr_info"]  # fmt: skip
    assert [(a["local"], a["prefixlen"]) for a in addrs if a["family"] == "inet"] == [("10.99.0.1", 30)]
    assert lab.exec(lab.dut, "sysctl", "-n", "net.ipv6.conf.all.disable_ipv6").stdout.strip() == "1"
    assert lab.xdp("dut0") is None


def test_teardown_kills_what_runs_inside_and_removes_the_namespaces(netlab):
    lab = netlab("xd-nl", single=True, pairs=[("a0", "a1")], up=["a0"])
    assert "UP" in lab.link("a0")["flags"] and "UP" not in lab.link("a1")["flags"]
    sleeper = subprocess.Popen(["ip", "netns", "exec", lab.ns, "sleep", "300"])
    try:
        deadline = time.monotonic() + 5
        while not lab.pids(lab.ns) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lab.pids(lab.ns)
        lab.down()  # what the fixture does after the test, whatever the test did
        assert sleeper.wait(10) == -9
        assert lab.ns not in netns_list()
        lab.down()  # twice is fine (the fixture calls it again)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
