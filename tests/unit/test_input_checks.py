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


# -- the whole experiment: experiment_input_errors (plugins/module_utils/_experiment_input.py input_errors) -------
IMPLS = ["xdp", "dpdk", "af_xdp", "linux", "forward", "tcp", "latency_floor"]
SYSTEMS = {"xdp": {"impl": "xdp"}, "af_xdp_zerocopy": {"impl": "af_xdp", "copy_mode": "zerocopy"}, "odd": {"impl": "vpp"}}


def _dut(**kw):
    dut = {"inventory_hostname": "dut", "xdplab_dut_cpus": [1], "xdplab_dut_mac": "02:58:44:50:00:02",
           "xdplab_dut_ip": "198.18.0.2", "xdplab_dut_interface": "veth-dut0", "xdplab_dut_egress_interface": "veth-dut1",
           "xdplab_dut_egress_mac": "02:58:44:50:00:04", "xdplab_dut_egress_ip": "198.18.0.6",
           "xdplab_housekeeping_cpus": [0], "xdplab_generator_host": "tg"}  # fmt: skip
    dut.update(kw)
    return dut


def _gen(**kw):
    gen = {"xdplab_generator_cpus": [0], "xdplab_generator_mac": "02:58:44:50:00:01", "xdplab_generator_ip": "198.18.0.1",
           "xdplab_generator_interface": "veth-tg0", "xdplab_generator_rx_interface": "veth-tg1",
           "xdplab_generator_rx_mac": "02:58:44:50:00:03", "xdplab_generator_rx_ip": "198.18.0.5",
           "xdplab_generator_backend": "xdp_live"}  # fmt: skip
    gen.update(kw)
    return gen


def errors(options=None, matrix=None, dut=None, gen="default", online="0-1", results=None, tmp=None, vlab=("dut", "tg"), **kw):
    from ansible_collections.xdplab.testbed.plugins.filter.experiment_input import experiment_input_errors

    opts = {"experiment_name": "x", "experiment_repetitions": 3, "experiment_systems": SYSTEMS,
            "experiment_results_dir": str(tmp or "/tmp") if results is None else results,
            "experiment_warmup": 2, "experiment_interval": 1,
            "experiment_samples": 5, "experiment_generator_slack": 10, "experiment_window_lead": 10,
            "experiment_kept_up_share": 0.99, "experiment_latency_max_pps": 1000000}  # fmt: skip
    opts.update(options or {})
    return experiment_input_errors(
        opts, matrix or {"system": ["xdp"], "cores": [1], "packet_len": [64]}, dut or _dut(),
        _gen() if gen == "default" else gen, IMPLS, backends=["xdp_live", "trex"], touch_modes=["no_touch", "read"],
        tcp_programs=["none"], afxdp_binds=["skb", "drv_copy", "drv_zerocopy"], generators=["tg"], vlab=list(vlab),
        online_cpus=online, **kw,
    )  # fmt: skip


def test_the_virtual_labs_own_input_is_right(tmp_path):
    assert errors(tmp=tmp_path) == []


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("experiment_warmup", -1, "experiment_warmup: -1.0 is below 0; seconds the generator runs before the first sample"),
        ("experiment_interval", 0, "experiment_interval: 0.0 must be above 0; seconds between two samples"),
        ("experiment_samples", 0, "experiment_samples: 0 is below 1; samples per window"),
        ("experiment_samples", "many", "experiment_samples: 'many' is not a whole number"),
        ("experiment_generator_slack", -3, "experiment_generator_slack: -3.0 is below 0"),
        ("experiment_window_lead", 0, "experiment_window_lead: 0.0 must be above 0"),
        ("experiment_kept_up_share", 0, "experiment_kept_up_share: 0.0 must be above 0; the share of the offered load"),
        ("experiment_kept_up_share", 1.5, "experiment_kept_up_share: 1.5 is above 1"),
        ("experiment_latency_max_pps", 0, "experiment_latency_max_pps: 0 is below 1"),
        ("experiment_repetitions", 0, "experiment_repetitions: 0 is below 1"),
    ],
)
def test_every_numeric_option_has_its_range(option, value, message, tmp_path):
    out = errors({option: value}, tmp=tmp_path)
    assert len(out) == 1 and out[0].startswith(message), out


def test_offered_loads_within_zero_and_the_line_rate(tmp_path):
    matrix = {"system": ["xdp"], "cores": [1], "packet_len": [64], "offered_mpps": [-1, 10, 20]}
    assert errors(matrix=matrix, tmp=tmp_path) == [
        "offered_mpps: -1.0 is below 0; offered loads in Mpps, 0 = as fast as the generator can"
    ]
    out = errors({"experiment_link_speed_gbit": 10}, matrix=dict(matrix, offered_mpps=[10, 20]), tmp=tmp_path)
    assert out == [
        "offered_mpps: 20 is above the line rate of a 10 Gbit/s link (experiment_link_speed_gbit) at 64-byte frames, "
        "14.881 Mpps; give loads at or below it, or 0 for as fast as the generator can"
    ]


def test_results_dir_must_be_a_directory_or_creatable(tmp_path, monkeypatch):
    assert errors(results=str(tmp_path / "new" / "deeper")) == []
    assert not (tmp_path / "new").exists()  # nothing is created
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert errors(results=str(afile)) == [
        "experiment_results_dir: %s is not a directory and cannot be created: %s is a file; give a directory for the "
        "records (or set XDPLAB_RESULTS_DIR)" % (afile, afile)
    ]
    # a file on the way to it
    assert "%s is a file" % afile in errors(results=str(afile / "results"))[0]
    assert errors(results="")[0].startswith('experiment_results_dir: "" is not a path')
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert "%s is a directory this user" % tmp_path in errors(results=str(tmp_path / "new"))[0]
    (tmp_path / "x" / "dut").mkdir(parents=True)
    assert errors(results=str(tmp_path)) == []  # an existing directory is used as it is


@pytest.mark.parametrize(
    ("dut", "gen", "message"),
    [
        ({}, {"xdplab_generator_ip": "198.18.0.2"}, "tg: xdplab_generator_ip: 198.18.0.2 is also dut's xdplab_dut_ip; every end"),
        ({}, {"xdplab_generator_rx_ip": "198.18.0.6"},
         "tg: xdplab_generator_rx_ip: 198.18.0.6 is also dut's xdplab_dut_egress_ip"),
        ({}, {"xdplab_generator_mac": "02:58:44:50:00:02"},
         "tg: xdplab_generator_mac: 02:58:44:50:00:02 is also dut's xdplab_dut_mac; every end of the links"),
        ({"xdplab_dut_egress_mac": "02-58-44-50-00-02"}, {},
         "dut: xdplab_dut_egress_mac: 02-58-44-50-00-02 is also dut's xdplab_dut_mac"),
        ({"xdplab_dut_egress_interface": "veth-dut0"}, {},
         "dut: xdplab_dut_egress_interface: veth-dut0 is also dut's xdplab_dut_interface; the two ports the DUT"),
        ({}, {"xdplab_generator_rx_interface": "veth-tg0"}, "tg: xdplab_generator_rx_interface: veth-tg0 is also tg's"),
        ({"xdplab_dut_egress_ip": "198.18.0.300"}, {}, "dut: xdplab_dut_egress_ip: '198.18.0.300' is not an IPv4 address"),
        ({}, {"xdplab_generator_rx_mac": "01:00:5e:00:00:01"}, "tg: xdplab_generator_rx_mac: 01:00:5e:00:00:01 is a multicast"),
    ],
)  # fmt: skip
def test_addresses_macs_and_ports_distinct_across_the_link(dut, gen, message, tmp_path):
    out = errors(dut=_dut(**dut), gen=_gen(**gen), tmp=tmp_path)
    assert len(out) == 1 and out[0].startswith(message), out


def test_cpu_roles_disjoint_by_the_layouts_rules(tmp_path):
    why = "the DUT, the generator's senders and housekeeping need CPUs of their own (they may share only on a 2-CPU host)"
    assert errors(dut=_dut(xdplab_housekeeping_cpus=[1]), tmp=tmp_path) == [
        "dut: xdplab_housekeeping_cpus: [1] overlaps dut's xdplab_dut_cpus [1] (CPU 1): %s; give xdplab_housekeeping_cpus "
        "CPUs outside xdplab_dut_cpus" % why
    ]
    assert errors(gen=_gen(xdplab_generator_cpus=[1, 2]), dut=_dut(xdplab_dut_cpus=[1, 2]), online="0-3", tmp=tmp_path) == [
        "tg: xdplab_generator_cpus: [1, 2] overlaps dut's xdplab_dut_cpus [1, 2] on the same machine (CPU 1-2): %s; give "
        "xdplab_generator_cpus CPUs outside xdplab_dut_cpus" % why
    ]
    # generator and housekeeping share CPU 0 on 2 CPUs (the vlab's layout there), not on 4
    assert errors(online="0-1", tmp=tmp_path) == []
    assert errors(online=[0, 1, 2, 3], tmp=tmp_path)[0].startswith(
        "dut: xdplab_housekeeping_cpus: [0] overlaps tg's xdplab_generator_cpus [0] on the same machine (CPU 0)"
    )
    # experiment_shared_cpus (molecule default: 2-core trials on 2 CPUs): the roles may share
    shared = {"experiment_shared_cpus": True}
    assert errors(options=shared, gen=_gen(xdplab_generator_cpus=[0, 1]), dut=_dut(xdplab_dut_cpus=[0, 1]), tmp=tmp_path) == []
    # on two machines the generator's CPUs are its own machine's
    from ansible_collections.xdplab.testbed.plugins.module_utils._experiment_input import input_errors

    out = input_errors({"experiment_systems": SYSTEMS}, {"system": ["xdp"], "cores": [1], "packet_len": [64]},
                       _dut(xdplab_dut_cpus=[0], xdplab_housekeeping_cpus=[]),
                       _gen(), ["xdp"], backends=["xdp_live"], touch_modes=["no_touch"], tcp_programs=["none"],
                       afxdp_binds=["drv_copy"], generators=["tg"], vlab=[], online_cpus=None)  # fmt: skip
    assert out == []


def test_the_matrix_and_the_generator_as_before(tmp_path):
    assert errors(matrix={"system": ["odd", "af_xdp_zerocopy"], "cores": [2], "packet_len": [64]}, tmp=tmp_path) == [
        "dut: cores: the matrix runs up to 2 cores, but xdplab_dut_cpus lists 1 CPU(s) ([1]); lower the cores axis or "
        "give the DUT more CPUs",
        'experiment_systems: odd: impl "vpp" has no trial implementation (impls: %s)' % ", ".join(IMPLS),
        "dut: system: af_xdp_zerocopy: veth (the virtual lab's DUT port) has no AF_XDP zero-copy; use af_xdp_copy "
        "(AF_XDP copy mode)",
    ]
    assert errors(matrix={"cores": [1]}, tmp=tmp_path) == [
        "experiment_matrix: must map each axis (system, cores, packet_len, ...) to a non-empty list, or be a list of "
        'such mappings with a system axis; got {"cores": [1]}'
    ]
    assert errors(matrix={"system": "xdp"}, tmp=tmp_path)[0].endswith(
        'axis system is not a non-empty list; got {"system": "xdp"}'
    )
    assert errors(gen=None, tmp=tmp_path) == [
        'dut: xdplab_generator_host: "tg" is not a host of the group generators (generators: tg)'
    ]
    assert errors(gen=_gen(xdplab_generator_backend="pktgen"), tmp=tmp_path) == [
        "tg: xdplab_generator_backend: 'pktgen' is not a backend of xdplab.testbed.traffic_generator (known: xdp_live, trex)"
    ]


def test_the_filter_refuses_what_is_not_a_mapping():
    from ansible_collections.xdplab.testbed.plugins.filter.experiment_input import experiment_input_errors

    with pytest.raises(AnsibleFilterError, match="dut must be a mapping"):
        experiment_input_errors({}, {}, None, None, [])


# -- the DUTs of one generator host: their addresses and MACs, and the generator's port of each --------------------
class _HostVars(dict):
    """Ansible's hostvars as the filter reads it: hostvars[host].get(field)."""


def _two_duts(dut2=None, tg=None):
    """inventories/vlab_two_duts: dut1 and dut2 share tg, each on its own port of it (xdplab_dut_generator)."""
    dut1 = _dut(inventory_hostname="dut1", xdplab_dut_interface="veth-dut1", xdplab_dut_ip="198.18.1.2",
                xdplab_dut_mac="02:58:44:50:01:02", xdplab_dut_egress_interface=None, xdplab_dut_egress_mac=None,
                xdplab_dut_egress_ip=None,
                xdplab_dut_generator={"interface": "veth-tg1", "mac": "02:58:44:50:01:01", "ip": "198.18.1.1"})
    other = dict(dut1, inventory_hostname="dut2", xdplab_dut_interface="veth-dut2", xdplab_dut_ip="198.18.2.2",
                 xdplab_dut_mac="02:58:44:50:02:02",
                 xdplab_dut_generator={"interface": "veth-tg2", "mac": "02:58:44:50:02:01", "ip": "198.18.2.1"})
    other.update(dut2 or {})
    gen = _gen(xdplab_generator_interface="veth-tg1", xdplab_generator_mac="02:58:44:50:01:01",
               xdplab_generator_ip="198.18.1.1", xdplab_generator_rx_interface=None, xdplab_generator_rx_mac=None,
               xdplab_generator_rx_ip=None)
    gen.update(tg or {})
    hostvars = _HostVars(dut1=dut1, dut2=other, tg=gen)
    return dut1, gen, hostvars


def two_dut_errors(tmp, dut2=None, tg=None, me="dut1"):
    _dut1, gen, hostvars = _two_duts(dut2, tg)
    return errors(dut=hostvars[me], gen=gen, tmp=tmp, hostvars=hostvars, hosts=["tg", "dut1", "dut2"],
                  duts=["dut1", "dut2"], vlab=["tg", "dut1", "dut2"])  # fmt: skip


def test_the_two_duts_of_one_generator_are_right(tmp_path):
    assert two_dut_errors(tmp_path) == []
    assert two_dut_errors(tmp_path, me="dut2") == []


@pytest.mark.parametrize(
    ("dut2", "tg", "message"),
    [
        ({"xdplab_dut_ip": "198.18.1.2"}, {},
         "dut2: xdplab_dut_ip: 198.18.1.2 is also dut1's xdplab_dut_ip; every end of the links the DUT and its generator "
         "share (and of the other DUTs of that generator host) needs an IPv4 address of its own"),
        ({"xdplab_dut_mac": "02:58:44:50:01:02"}, {},
         "dut2: xdplab_dut_mac: 02:58:44:50:01:02 is also dut1's xdplab_dut_mac; every end of the links"),
        ({"xdplab_dut_generator": {"interface": "veth-tg2", "mac": "02:58:44:50:02:01", "ip": "198.18.1.1"}}, {},
         "dut2: xdplab_dut_generator.ip: 198.18.1.1 is also dut1's xdplab_dut_generator.ip"),
        ({"xdplab_dut_generator": {"interface": "veth-tg2", "mac": "02:58:44:50:01:01", "ip": "198.18.2.1"}}, {},
         "dut2: xdplab_dut_generator.mac: 02:58:44:50:01:01 is also dut1's xdplab_dut_generator.mac; every end of the "
         "links the DUT and its generator share (and of the other DUTs of that generator host) needs a MAC address"),
        # dut2's address is its generator's port for dut1 (the DUTs' own ends are named first)
        ({"xdplab_dut_ip": "198.18.1.1"}, {}, "dut1: xdplab_dut_generator.ip: 198.18.1.1 is also dut2's xdplab_dut_ip"),
    ],
)  # fmt: skip
def test_addresses_distinct_across_the_duts_of_one_generator(dut2, tg, message, tmp_path):
    for me in ("dut1", "dut2"):  # each DUT refuses its own pair (one message, the same on both)
        out = two_dut_errors(tmp_path, dut2, tg, me=me)
        assert len(out) == 1 and out[0].startswith(message), (me, out)


def test_the_generators_receive_port_against_every_dut(tmp_path):
    # dut2's own pair: dut2 refuses it, dut1 has no end in it
    tg = {"xdplab_generator_rx_interface": "veth-tg9", "xdplab_generator_rx_ip": "198.18.2.2"}
    assert two_dut_errors(tmp_path, tg=tg, me="dut2") == [
        "tg: xdplab_generator_rx_ip: 198.18.2.2 is also dut2's xdplab_dut_ip; every end of the links the DUT and its "
        "generator share (and of the other DUTs of that generator host) needs an IPv4 address of its own; give this end "
        "another one"
    ]
    assert two_dut_errors(tmp_path, tg=tg, me="dut1") == []


def test_duts_of_another_generator_and_one_shared_port_are_not_compared(tmp_path):
    # dut2 fed by another generator: its addresses are on other links
    assert two_dut_errors(tmp_path, {"xdplab_dut_ip": "198.18.1.2", "xdplab_generator_host": "tg2"}) == []
    # a host outside the group duts is no DUT of tg
    dut1, gen, hostvars = _two_duts({"xdplab_dut_ip": "198.18.1.2"})
    assert errors(dut=dut1, gen=gen, tmp=tmp_path, hostvars=hostvars, hosts=["tg", "dut1", "dut2"], duts=["dut1"]) == []
    # dut2 on the generator host's own port (no xdplab_dut_generator)
    tg = {"xdplab_generator_interface": "veth-tg2", "xdplab_generator_mac": "02:58:44:50:02:01",
          "xdplab_generator_ip": "198.18.2.1"}  # fmt: skip
    assert two_dut_errors(tmp_path, {"xdplab_dut_generator": None}, tg) == []
    # ... and its addresses on dut1's port too: an error of dut1's
    out = two_dut_errors(tmp_path, {"xdplab_dut_generator": None}, dict(tg, xdplab_generator_ip="198.18.1.1"))
    assert out[0].startswith("tg: xdplab_generator_ip: 198.18.1.1 is also dut1's xdplab_dut_generator.ip"), out
    # dut2 on a port of its own with the generator host's addresses (T-Rex: the port's own): that host's one value
    assert two_dut_errors(tmp_path, {"xdplab_dut_generator": {"interface": "veth-tg2"}},
                          {"xdplab_generator_interface": "veth-tg0", "xdplab_generator_mac": "02:58:44:50:00:01",
                           "xdplab_generator_ip": "198.18.0.1"}) == []  # fmt: skip
    # without hostvars (a caller that gives no other host) nothing else is read
    assert errors(dut=_two_duts()[0], gen=_two_duts()[1], tmp=tmp_path, hosts=["dut2"]) == []


def test_the_dut_generator_port_is_checked_as_the_generators(tmp_path):
    out = errors(dut=_dut(xdplab_dut_generator={"interface": "veth-tg1", "mac": "zz", "ip": "198.18.0.300"}), tmp=tmp_path)
    assert out[:2] == [
        "dut: xdplab_dut_generator.mac: 'zz' is not a MAC address (six hex octets like 02:58:44:50:00:01)",
        "dut: xdplab_dut_generator.ip: '198.18.0.300' is not an IPv4 address (four decimal octets like 198.18.0.1, "
        "without a prefix length)",
    ]
    # its port is the one the generator sends on: not the generator's receive port where frames come back (the
    # forwarding experiment); a drop experiment never receives there
    assert errors(dut=_dut(xdplab_dut_generator={"interface": "veth-tg1"}), tmp=tmp_path) == []
    out = forward_errors(tmp_path, dut={"xdplab_dut_generator": {"interface": "veth-tg1"}})
    assert (
        "tg: xdplab_generator_rx_interface: veth-tg1 is also dut's xdplab_dut_generator.interface; the two ports the "
        "generator sends on and receives on are two interfaces; name another port"
    ) in out, out
    # its MAC against the DUT's
    out = errors(dut=_dut(xdplab_dut_generator={"mac": "02:58:44:50:00:02"}), tmp=tmp_path)
    assert out == [
        "dut: xdplab_dut_generator.mac: 02:58:44:50:00:02 is also dut's xdplab_dut_mac; every end of the links the DUT "
        "and its generator share (and of the other DUTs of that generator host) needs a MAC address of its own; give "
        "this end another one"
    ]


def test_the_dut_generator_cpus_are_the_generator_role_for_this_dut(tmp_path):
    # this DUT's own CPUs of the generator (xdplab_dut_generator.cpus) over the generator host's: disjoint from the DUT's
    out = errors(dut=_dut(xdplab_dut_generator={"cpus": [1]}), tmp=tmp_path)
    assert out == [
        "dut: xdplab_dut_generator.cpus: [1] overlaps dut's xdplab_dut_cpus [1] (CPU 1): the DUT, the generator's "
        "senders and housekeeping need CPUs of their own (they may share only on a 2-CPU host); give "
        "xdplab_dut_generator.cpus CPUs outside xdplab_dut_cpus"
    ]
    assert errors(dut=_dut(xdplab_dut_generator={"cpus": [0]}), tmp=tmp_path) == []
    assert errors(dut=_dut(xdplab_dut_generator={"cpus": ["x"]}), tmp=tmp_path) == [
        "dut: xdplab_dut_generator.cpus: 'x' is not a CPU number"
    ]


# -- the forwarding experiment (playbooks/paper_forward.yml): module_utils/_experiment_input.py forward_errors ---------
FORWARD_SYSTEMS = {
    "xdp_tx": {"impl": "forward", "forward": "xdp_tx", "return_port": "ingress"},
    "xdp_redirect": {"impl": "forward", "forward": "xdp_redirect", "return_port": "egress"},
    "xdp_redirect_cpu": {"impl": "forward", "forward": "xdp_redirect_cpu", "return_port": "egress"},
    "linux_forward": {"impl": "forward", "forward": "linux", "return_port": "egress"},
    "dpdk_mac": {"impl": "dpdk", "forward": "dpdk", "forward_mode": "mac", "return_port": "egress"},
    "dpdk_macswap": {"impl": "dpdk", "forward": "dpdk", "forward_mode": "macswap", "return_port": "ingress"},
}
MLX5 = [{"name": "veth-dut0", "driver": "mlx5_core"}]


def forward_errors(tmp, systems=("xdp_tx", "xdp_redirect"), ring_sizes=(), queues=(), dut=None, gen=None, **kw):
    forward = {"systems": list(systems), "ring_sizes": list(ring_sizes), "queues": list(queues), "vlab_queues": 1}
    return errors({"experiment_systems": FORWARD_SYSTEMS}, {"system": ["xdp_tx"], "cores": [1], "packet_len": [64]},
                  dut=_dut(**(dut or {})), gen=_gen(**(gen or {})), tmp=tmp, forwarding=forward, **kw)  # fmt: skip


def test_the_forwarding_experiments_own_input_is_right(tmp_path):
    assert forward_errors(tmp_path, systems=list(FORWARD_SYSTEMS), dut={"xdplab_dut_cpumap_cpu": 0}) == []
    # another experiment (forward none) reads none of it
    assert errors(dut=_dut(xdplab_dut_egress_interface=""), tmp=tmp_path, forwarding=None) == []


def test_a_second_port_where_a_system_sends_out_of_one(tmp_path):
    out = forward_errors(tmp_path, systems=["xdp_tx", "dpdk_mac", "linux_forward"], dut={"xdplab_dut_egress_interface": ""})
    assert out == [
        "dut: xdplab_dut_egress_interface: the systems dpdk_mac, linux_forward send out of a second port, but "
        "xdplab_dut_egress_interface is '' and the ingress port (xdplab_dut_interface) is veth-dut0: name another port "
        "of this DUT as xdplab_dut_egress_interface and its peer on the generator tg as xdplab_generator_rx_interface "
        "(inventory host_vars)"
    ]
    # the ingress port again: the ports check and this one
    out = forward_errors(tmp_path, dut={"xdplab_dut_egress_interface": "veth-dut0"})
    assert [e.split(":")[:2] for e in out] == [["dut", " xdplab_dut_egress_interface"]] * 2
    assert "the systems xdp_redirect send out of a second port, but xdplab_dut_egress_interface is 'veth-dut0'" in out[1]
    # the generator's receive port, where the frames come back
    out = forward_errors(tmp_path, gen={"xdplab_generator_rx_interface": None})
    assert out == [
        "tg: xdplab_generator_rx_interface: the systems xdp_redirect send out of a second port (xdplab_dut_egress_interface "
        "veth-dut1 of dut) and the frames come back on the generator's receive port, but xdplab_generator_rx_interface "
        "is '': name the peer of veth-dut1 on the generator tg as xdplab_generator_rx_interface (inventory host_vars)"
    ]
    # only the systems that return on the ingress port: no second port needed
    assert forward_errors(tmp_path, systems=["xdp_tx", "dpdk_macswap"], dut={"xdplab_dut_egress_interface": ""}) == []


def test_the_egress_port_is_the_duts_own_on_one_machine(tmp_path):
    hostvars = _HostVars(tg=_gen(), dut=_dut())
    kw = {"hostvars": hostvars, "hosts": ["dut", "tg"], "duts": ["dut"]}
    out = forward_errors(tmp_path, dut={"xdplab_dut_egress_interface": "veth-tg1", "xdplab_dut_egress_ip": None}, **kw)
    assert out == [
        "dut: xdplab_dut_egress_interface veth-tg1 is a port of tg (its xdplab_generator_interface or "
        "xdplab_generator_rx_interface), not of this DUT: XDP_REDIRECT (a devmap) and a route can only send out of an "
        "interface of the host they run on. Name one of dut's ports."
    ]
    assert "is a port of tg" in forward_errors(tmp_path, dut={"xdplab_dut_egress_interface": "veth-tg0"}, **kw)[0]
    # another DUT's port of the generator (its xdplab_dut_generator.interface)
    hostvars["dut2"] = _dut(inventory_hostname="dut2", xdplab_dut_generator={"interface": "veth-tg7"},
                            xdplab_dut_ip="198.18.7.2", xdplab_dut_mac="02:58:44:50:07:02", xdplab_dut_egress_ip=None,
                            xdplab_dut_egress_mac=None)
    out = forward_errors(tmp_path, dut={"xdplab_dut_egress_interface": "veth-tg7"}, hostvars=hostvars,
                         hosts=["dut", "dut2", "tg"], duts=["dut", "dut2"], vlab=["dut", "dut2", "tg"])  # fmt: skip
    assert "dut: xdplab_dut_egress_interface veth-tg7 is a port of tg (dut2's xdplab_dut_generator.interface)" in out[0]
    # two machines (hardware, VMs) may both have a port of that name
    assert forward_errors(tmp_path, dut={"xdplab_dut_egress_interface": "veth-tg1"}, vlab=[], **kw) == []


@pytest.mark.parametrize(
    ("ports", "sizes", "message"),
    [
        (None, [256, 512], "dut: paper_forward_ring_sizes: ring sizes [256, 512] for veth-dut0 (driver veth): the veth "
         "driver has no RX/TX rings to size (ethtool -G: Operation not supported); leave paper_forward_ring_sizes empty"),
        (MLX5, [256, 16384], "dut: paper_forward_ring_sizes: ring sizes [256, 16384] for veth-dut0 (driver mlx5_core): "
         "the driver takes 64 to 8192 descriptors per ring"),
        (MLX5, [32], "dut: paper_forward_ring_sizes: ring sizes [32] for veth-dut0 (driver mlx5_core): the driver takes "
         "64 to 8192"),
        (MLX5, ["many"], "dut: paper_forward_ring_sizes: ring sizes [\"many\"] for veth-dut0 (driver mlx5_core)"),
        ([{"name": "veth-dut0", "driver": "ice"}], [70000],
         "dut: paper_forward_ring_sizes: ring sizes [70000] for veth-dut0 (driver ice): the driver takes 1 to 65535"),
    ],
)  # fmt: skip
def test_ring_sizes_the_driver_takes(ports, sizes, message, tmp_path):
    out = forward_errors(tmp_path, ring_sizes=sizes, dut={"xdplab_dut_ports": ports} if ports else None)
    assert len(out) == 1 and out[0].startswith(message), out


def test_ring_sizes_within_the_drivers_limits_and_none(tmp_path):
    assert forward_errors(tmp_path, ring_sizes=[64, 8192], dut={"xdplab_dut_ports": MLX5}) == []
    assert forward_errors(tmp_path, ring_sizes=[4096], dut={"xdplab_dut_ports": [{"name": "veth-dut0", "driver": "ice"}]}) == []
    assert forward_errors(tmp_path, ring_sizes=[]) == []


def test_testpmd_mac_needs_the_egress_pci_port(tmp_path):
    out = forward_errors(tmp_path, systems=["dpdk_mac"], dut={"xdplab_dpdk_port": "0000:03:00.0"})
    assert out == [
        "dut: xdplab_dpdk_egress_port: the systems dpdk_mac run testpmd `mac` from the ingress port (xdplab_dpdk_port "
        "0000:03:00.0) to the egress port, but xdplab_dpdk_egress_port is '': give the PCI address of veth-dut1's port "
        "(lspci -D, or dpdk-devbind.py --status) in the inventory (host_vars)"
    ]
    same = {"xdplab_dpdk_port": "0000:03:00.0", "xdplab_dpdk_egress_port": "0000:03:00.0"}
    assert "xdplab_dpdk_egress_port is '0000:03:00.0' (the ingress port's)" in forward_errors(
        tmp_path, systems=["dpdk_mac"], dut=same
    )[0]
    assert forward_errors(tmp_path, systems=["dpdk_mac"], dut=dict(same, xdplab_dpdk_egress_port="0000:03:00.1")) == []
    # a vdev (the virtual lab: no PCI port) and macswap (one port) need none
    assert forward_errors(tmp_path, systems=["dpdk_mac"], dut={"xdplab_dpdk_port": ""}) == []
    assert forward_errors(tmp_path, systems=["dpdk_macswap"], dut={"xdplab_dpdk_port": "0000:03:00.0"}) == []


@pytest.mark.parametrize(
    ("dut", "value"),
    [
        ({"xdplab_dut_cpumap_cpu": 1}, "1"),
        ({"xdplab_dut_cpumap_cpu": "first"}, "first"),
        ({"xdplab_housekeeping_cpus": [1], "xdplab_dut_cpus": [1]}, "1"),
        ({"xdplab_housekeeping_cpus": []}, ""),
    ],
    ids=["a-receive-cpu", "not-a-cpu", "housekeeping-is-a-receive-cpu", "no-default"],
)
def test_the_cpumap_cpu_is_another_cpu_of_the_dut(dut, value, tmp_path):
    out = [e for e in forward_errors(tmp_path, systems=["xdp_redirect_cpu"], dut=dut)
           if "xdplab_dut_cpumap_cpu" in e]  # fmt: skip
    assert out == [
        "dut: xdplab_dut_cpumap_cpu: xdp_redirect_cpu receives on the DUT's CPUs [1] and forwards from the cpumap's CPU, "
        "xdplab_dut_cpumap_cpu (default: the first of xdplab_housekeeping_cpus), which is '%s': name one CPU of dut "
        "outside xdplab_dut_cpus as xdplab_dut_cpumap_cpu in the inventory (host_vars)" % value
    ]


def test_the_cpumap_cpu_by_the_registrys_forwarding_mode(tmp_path):
    # the default, the first housekeeping CPU (0), is right
    assert forward_errors(tmp_path, systems=["xdp_redirect_cpu"]) == []
    # a system of another name with the cpumap's forwarding mode is checked too; one without it is not
    FORWARD_SYSTEMS["my_cpumap"] = {"impl": "forward", "forward": "xdp_redirect_cpu", "return_port": "egress"}
    try:
        assert len(forward_errors(tmp_path, systems=["my_cpumap"], dut={"xdplab_dut_cpumap_cpu": 1})) == 1
    finally:
        del FORWARD_SYSTEMS["my_cpumap"]
    assert forward_errors(tmp_path, systems=["xdp_redirect"], dut={"xdplab_dut_cpumap_cpu": 1}) == []


def test_the_queue_count_axis_is_refused_with_the_reason(tmp_path):
    out = forward_errors(tmp_path, queues=[1, 4])
    assert len(out) == 1
    assert out[0].startswith(
        "dut: paper_forward_queues [1, 4] is not an axis of this experiment. seeds/004's 1 ring and 24 rings are mlx5 "
        "channels, one per core"
    )
    assert "On the virtual lab veth-dut0 is a veth created with 1 queue(s)" in out[0]
    assert out[0].endswith("leave paper_forward_queues empty and vary paper_forward_cores (e.g. [1, 24]).")
    out = forward_errors(tmp_path, queues=[24], dut={"xdplab_dut_ports": MLX5})
    assert "On mlx5_core several TX rings per core need the XDP program to pick the ring (not built)." in out[0]


# -- the latency experiment (playbooks/paper_latency.yml): module_utils/_experiment_input.py latency_errors ----------
def latency_errors(tmp, loads, max_pps=1000000, latency=True):
    return errors({"experiment_latency": latency, "experiment_latency_max_pps": max_pps},
                  {"system": ["xdp"], "cores": [1], "packet_len": [64], "offered_mpps": loads}, tmp=tmp)  # fmt: skip


def test_latency_loads_within_the_stamping_generators_ceiling(tmp_path):
    assert latency_errors(tmp_path, [0.0001, 1]) == []  # 100 pps and 1 Mpps: at the ceiling is right
    assert latency_errors(tmp_path, [0.0001, 2]) == [
        "offered_mpps: latency loads [2000000.0] pps are above the stamping generator's ceiling "
        "experiment_latency_max_pps=1000000 pps (one paced xdplab-trafficgen lane; benchmarks/latency_cost.py measures "
        "it). Give loads at or below it (-e '{\"paper_latency_loads_mpps\": [0.0001, 0.5]}') or, on a faster generator, "
        "raise experiment_latency_max_pps."
    ]
    # 0.0003 Mpps is 300.0 pps, not 299.99999999999994
    assert latency_errors(tmp_path, [0.0003], max_pps=299)[0].startswith("offered_mpps: latency loads [300.0] pps are above")
    assert latency_errors(tmp_path, [0.0003], max_pps=300) == []
    # another experiment may offer more (the line-rate check is the only ceiling there)
    assert latency_errors(tmp_path, [2], latency=False) == []


def test_latency_loads_are_paced(tmp_path):
    assert latency_errors(tmp_path, [0, 0.5]) == [
        "offered_mpps: latency loads [0.0] pps are 0 or less (unpaced): a latency trial needs a paced rate; give loads "
        "above 0 and at or below the stamping generator's ceiling experiment_latency_max_pps=1000000 pps "
        "(-e '{\"paper_latency_loads_mpps\": [0.0001, 0.5]}')"
    ]
    # a load that is not a number, or a ceiling that is not one: the other checks' errors, reported once
    out = latency_errors(tmp_path, ["fast"])
    assert out == ["offered_mpps: 'fast' is not a number; offered loads in Mpps, 0 = as fast as the generator can"]
    assert latency_errors(tmp_path, [2], max_pps="lots")[0].startswith("experiment_latency_max_pps: 'lots' is not")
