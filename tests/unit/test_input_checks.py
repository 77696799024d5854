"""field_errors (plugins/filter/netaddr_checks.py): each input error names the one field and value that is wrong."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.netaddr_checks import cpu_list, field_errors


def one(kind, value, host="dut", **kw):
    return field_errors([{"field": "f", "value": value, "kind": kind, **kw}], host)


def test_mac_ip_and_interface_addresses():
    assert one("mac", "02:58:44:50:00:02") == []
    assert one("mac", "02:58:44:50:00") == [
        "dut: f: '02:58:44:50:00' is not a MAC address (six hex octets like 02:58:44:50:00:01)"
    ]
    assert one("mac", "03:58:44:50:00:02") == [
        "dut: f: 03:58:44:50:00:02 is a multicast MAC address; an interface needs a unicast one (first octet even, "
        "e.g. 02:58:44:50:00:01)"
    ]
    assert one("mac", None)[0].startswith("dut: f: None is not a MAC address")
    assert one("ipv4", "198.18.0.2") == []
    assert one("ipv4", "198.18.0.256") == [
        "dut: f: '198.18.0.256' is not an IPv4 address (four decimal octets like 198.18.0.1, without a prefix length)"
    ]
    assert one("ipv4", "198.18.0.2/30") != []
    assert one("ipv4_interface", "198.18.0.2/30") == []
    assert one("ipv4_interface", "198.18.0.2/33") == [
        "dut: f: '198.18.0.2/33' is not an IPv4 ADDRESS/PREFIX (like 198.18.0.1/30, prefix 1 to 32)"
    ]


def test_cpu_lists_name_the_bad_item():
    assert one("cpu", [1, "2"], list=True) == []
    assert one("cpu", ["one", 1], list=True) == ["dut: f: 'one' is not a CPU number"]
    assert one("cpu", [1, 1], list=True) == ["dut: f: CPU 1 is listed twice"]
    assert one("cpu", [], list=True) == ["dut: f: is empty; list at least one value"]
    assert one("cpu", "1", list=True) == ["dut: f: must be a list, got '1'"]
    assert one("cpu", [True], list=True) == ["dut: f: True is not a CPU number"]


def test_whole_numbers_numbers_and_choices_with_hints():
    kw = {"list": True, "min": 1, "hint": "cores = stream_count, one flow per DUT core"}
    assert one("whole", [1, 3], **kw) == []
    assert one("whole", [0, "two"], host=None, **kw) == [
        "f: 0 is below 1; cores = stream_count, one flow per DUT core",
        "f: 'two' is not a whole number; cores = stream_count, one flow per DUT core",
    ]
    assert one("whole", 1519, max=1518) == ["dut: f: 1519 is above 1518"]
    assert one("number", ["0.25", 3, "x", -1], list=True, min=0) == ["dut: f: 'x' is not a number", "dut: f: -1.0 is below 0"]
    assert one("choice", ["no_touch", "lick"], list=True, choices=["no_touch", "read"]) == [
        "dut: f: 'lick' is not one of no_touch, read"
    ]


def test_every_check_reported_in_order_and_malformed_checks_refused():
    checks = [
        {"field": "xdplab_dut_mac", "value": "zz", "kind": "mac"},
        {"field": "xdplab_dut_ip", "value": "1.2.3", "kind": "ipv4"},
        {"field": "xdplab_dut_cpus", "value": [1, "x"], "kind": "cpu", "list": True},
    ]
    assert [e.split(":")[1].strip() for e in field_errors(checks, "dut")] == [
        "xdplab_dut_mac",
        "xdplab_dut_ip",
        "xdplab_dut_cpus",
    ]
    with pytest.raises(AnsibleFilterError, match="each check needs field and kind"):
        field_errors([{"value": 1}])
    with pytest.raises(AnsibleFilterError, match="unknown check kind"):
        field_errors([{"field": "f", "kind": "colour", "value": 1}])


def test_cpu_list_uses_the_one_helper():
    assert cpu_list("0-2,4\n") == [0, 1, 2, 4]
    with pytest.raises(AnsibleFilterError, match="is not a CPU list"):
        cpu_list("0-x")
