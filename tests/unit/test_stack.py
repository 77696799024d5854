"""The stack's own counters (plugins/module_utils/_stack.py), on fixtures of real output: /proc/net/snmp, netstat and
softnet_stat of this Debian 12 machine under kernel 6.18 (tests/unit/fixtures/stack/), the softnet pair taken 5 s
apart while the virtual lab's Linux router forwarded on CPU 1."""

import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _stack

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "stack")


def text(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def test_snmp_and_netstat_give_nstats_names():
    snmp = _stack.parse_snmp(text("snmp_debian12_6.18.txt"))
    assert snmp["IpForwarding"] in (1, 2) and snmp["IpDefaultTTL"] == 64
    assert "UdpNoPorts" in snmp and "IcmpInMsgs" in snmp and "UdpLiteInDatagrams" in snmp
    netstat = _stack.parse_snmp(text("netstat_debian12_6.18.txt"))
    assert "TcpExtIPReversePathFilter" in netstat and "IpExtInNoECTPkts" in netstat


def test_softnet_per_cpu_with_the_cpu_column():
    before = _stack.parse_softnet(text("softnet_stat_6.18_before.txt"))
    after = _stack.parse_softnet(text("softnet_stat_6.18_after.txt"))
    assert sorted(after) == [0, 1]
    moved = _stack.delta({"softnet": before}, {"softnet": after}, cpus=[1])
    # CPU 1 (the DUT's) processed 1,310,048 packets in those 5 s, none dropped, never squeezed
    assert moved["softnet"] == {"1": {"processed": 0x145037 - 0x52D7}}


def test_delta_keeps_what_moved_and_names_the_drops():
    before = {"snmp": {"IpInReceives": 10, "IpOutNoRoutes": 1, "UdpNoPorts": 5}, "softnet": {}}
    after = {"snmp": {"IpInReceives": 110, "IpOutNoRoutes": 4, "UdpNoPorts": 5}, "softnet": {}}
    assert _stack.delta(before, after) == {
        "snmp": {"IpInReceives": 100, "IpOutNoRoutes": 3}, "softnet": {}, "drops": {"IpOutNoRoutes": 3}}  # fmt: skip


def test_read_here():
    now = _stack.read()
    assert now["snmp"]["IpDefaultTTL"] > 0 and now["softnet"]


@pytest.mark.parametrize(
    "body, words",
    [
        ("Ip: A B\n", "odd number of lines"),
        ("Ip: A B\nUdp: 1 2\n", "header 'Ip' is followed by 'Udp'"),
        ("Ip: A B\nIp: 1\n", "Ip: 2 names and 1 values"),
        ("Ip: A\nIp: x\n", "IpA: 'x' is not a number"),
    ],
)
def test_text_that_is_not_the_kernels(body, words):
    with pytest.raises(_stack.StackError, match=words):
        _stack.parse_snmp(body)
