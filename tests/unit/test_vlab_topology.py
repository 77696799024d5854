"""Unit tests for vlab_topology: its spec (_vlab_spec), NAPI mapping and netlink encoding (_vlab_netlink), the filters."""

import struct

import pytest
from ansible_collections.xdplab.testbed.plugins.filter import netaddr_checks
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus
from ansible_collections.xdplab.testbed.plugins.module_utils import _vlab_netlink as nl
from ansible_collections.xdplab.testbed.plugins.module_utils import _vlab_spec as vt
from ansible_collections.xdplab.testbed.plugins.modules import vlab_topology

ONLINE = [0, 1]


def end(ns, ifname, **kw):
    return {"namespace": ns, "interface": ifname, **kw}


def spec(**link_kw):
    ends = link_kw.pop(
        "ends",
        [
            end("xv-a", "veth-a0", mac="02:00:00:00:00:0A", address="198.18.0.1/30", napi_cpus=[0]),
            end("xv-b", "veth-b0", mac="02:00:00:00:00:0b", address="198.18.0.2/30", gro=True),
        ],
    )
    return {"namespaces": ["xv-a"], "links": [{"name": "ab", "queues": 2, "ends": ends, **link_kw}], "neighbors": []}


def test_normalize_spec_defaults_and_derived_values():
    namespaces, links, neighbors = vt.normalize_spec(spec(), ONLINE)
    assert namespaces == ["xv-a", "xv-b"]  # namespaces of link ends are added
    a, b = links[0]["ends"]
    assert a["mac"] == "02:00:00:00:00:0a" and a["address"] == ("198.18.0.1", 30)
    assert a["queues"] == 2 and a["up"] is True
    # napi_cpus implies threaded NAPI, which on veth needs GRO
    assert a["threaded"] is True and a["gro"] is True
    assert b["threaded"] is None and b["gro"] is True
    # static neighbours both ways, MAC of the peer
    assert [(n["namespace"], n["address"], n["mac"]) for n in neighbors] == [
        ("xv-a", "198.18.0.2", "02:00:00:00:00:0b"),
        ("xv-b", "198.18.0.1", "02:00:00:00:00:0a"),
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mac", "02:00:00:00:00:zz", r"links\[0\]\.ends\[1\]\.mac: malformed MAC address '02:00:00:00:00:zz'"),
        ("mac", "02:00:00:00:00", r"ends\[1\]\.mac: malformed MAC"),
        ("mac", "01:00:5e:00:00:01", r"ends\[1\]\.mac: .* multicast MAC"),
        ("address", "198.18.0.300/30", r"ends\[1\]\.address: malformed IPv4 address '198.18.0.300'"),
        ("address", "198.18.0.2", r"ends\[1\]\.address: .* has no prefix length"),
        ("address", "198.18.0.2/33", r"ends\[1\]\.address: malformed prefix length '33'"),
        ("address", "198.18.0.2/x", r"ends\[1\]\.address: malformed prefix length 'x'"),
        ("address", "198.18.0.0/30", r"network or broadcast address"),
        ("address", "1.2.3/24", r"malformed IPv4 address '1.2.3'"),
        ("napi_cpus", [0, 7], r"ends\[1\]\.napi_cpus\[1\]: CPU 7 is not online on this machine \(online: 0-1\)"),
        ("queues", 0, r"ends\[1\]\.queues: 0 is out of range"),
        ("mtu", 20, r"ends\[1\]\.mtu: 20 is out of range 68\.\.65535"),
        ("interface", "a-very-long-interface-name", r"ends\[1\]\.interface: invalid name"),
        ("namespace", "../x", r"ends\[1\]\.namespace: invalid name"),
    ],
)
def test_malformed_input_names_the_culprit(field, value, message):
    data = spec()
    data["links"][0]["ends"][1][field] = value
    with pytest.raises(vt.VlabError, match=message):
        vt.normalize_spec(data, ONLINE)


def test_threaded_napi_without_gro_is_refused():
    data = spec()
    data["links"][0]["ends"][1].update(gro=False, threaded_napi=True)
    with pytest.raises(vt.VlabError, match=r"needs NAPI instances, which exist only with GRO on"):
        vt.normalize_spec(data, ONLINE)


def test_duplicate_end_and_wrong_end_count():
    data = spec()
    data["links"][0]["ends"][1].update(namespace="xv-a", interface="veth-a0")
    with pytest.raises(vt.VlabError, match=r"already used by links\[0\]\.ends\[0\]"):
        vt.normalize_spec(data, ONLINE)
    data = spec(ends=[end("xv-a", "x0")])
    with pytest.raises(vt.VlabError, match=r"exactly two ends, got 1"):
        vt.normalize_spec(data, ONLINE)


def test_neighbor_validation():
    data = spec()
    data["neighbors"] = [{"namespace": "xv-a", "interface": "veth-a0", "address": "198.18.0.9", "mac": "zz"}]
    with pytest.raises(vt.VlabError, match=r"neighbors\[0\]\.mac: malformed MAC"):
        vt.normalize_spec(data, ONLINE)


def test_parse_cpu_list_and_round_robin():
    assert _cpus.parse_cpu_list("0-3,5,7-8\n") == [0, 1, 2, 3, 5, 7, 8]
    assert _cpus.parse_cpu_list("0") == [0]
    assert [vt.napi_cpu_for_queue(q, [2, 3]) for q in range(5)] == [2, 3, 2, 3, 2]


def test_map_queues_uses_reported_napi_ids():
    got = nl.map_queues_to_napi([(1, 11), (0, 10)], {10: 100, 11: 101})
    assert got == [{"queue": 0, "napi_id": 10, "pid": 100}, {"queue": 1, "napi_id": 11, "pid": 101}]


def test_map_queues_veth_without_queue_napi_ids_sorts_napi_ids():
    # veth does not report a queue's NAPI id: the q-th smallest NAPI id is RX queue q
    got = nl.map_queues_to_napi([(0, None), (1, None)], {283: 7, 282: 8})
    assert got == [{"queue": 0, "napi_id": 282, "pid": 8}, {"queue": 1, "napi_id": 283, "pid": 7}]


def test_map_queues_without_napi_gives_no_pid():
    got = nl.map_queues_to_napi([(0, None), (1, None)], {})
    assert all(q["pid"] is None and q["napi_id"] is None for q in got)


def test_netlink_attribute_roundtrip_and_padding():
    data = nl.nl_attr(2, b"abc") + nl.nl_attr(4, struct.pack("=I", 42))
    assert len(nl.nl_attr(2, b"abc")) == 8  # 4 header + 3 payload + 1 pad
    attrs = nl.nl_parse_attrs(data)
    assert attrs[2] == b"abc" and nl.nl_u32(attrs, 4) == 42 and nl.nl_u32(attrs, 9) is None


def test_filters():
    assert netaddr_checks.valid_mac("02:58:44:50:00:01")
    assert not netaddr_checks.valid_mac("01:00:5e:00:00:01")
    assert not netaddr_checks.valid_mac("02:58:44:50:00")
    assert not netaddr_checks.valid_mac(None)
    assert netaddr_checks.valid_ipv4("198.18.0.1")
    assert not netaddr_checks.valid_ipv4("198.18.0.256")
    assert not netaddr_checks.valid_ipv4("1.2.3")
    assert netaddr_checks.valid_ipv4_interface("198.18.0.1/30")
    assert not netaddr_checks.valid_ipv4_interface("198.18.0.1")
    assert not netaddr_checks.valid_ipv4_interface("198.18.0.1/40")
    assert netaddr_checks.cpu_list("0-2,4\n") == [0, 1, 2, 4]
    names = {"cpu_list", "field_errors", "valid_mac", "valid_ipv4", "valid_ipv4_interface"}
    assert set(netaddr_checks.FilterModule().filters()) == names


def test_the_module_uses_the_split_spec_and_netlink_code():
    # one copy of each: the module converges, _vlab_spec validates, _vlab_netlink talks to the kernel
    assert vlab_topology.normalize_spec is vt.normalize_spec
    assert vlab_topology.napi_threads is nl.napi_threads
    assert vlab_topology.online_cpus is _cpus.online_cpus
    assert not hasattr(vlab_topology, "parse_cpu_list")


def test_xdp_feature_bits_decode():
    # veth with GRO on its peer, as the kernel reported it here (Linux 6.18): basic | redirect | rx-sg = 35
    assert nl.xdp_feature_names(35) == ["basic", "redirect", "rx-sg"]
    assert nl.xdp_feature_names(0) == []
    assert nl.nl_u64(nl.nl_parse_attrs(nl.nl_attr(3, struct.pack("=Q", 1 << 40))), 3) == 1 << 40
