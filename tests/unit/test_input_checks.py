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


def errors(options=None, matrix=None, dut=None, gen="default", online="0-1", results=None, tmp=None):
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
        tcp_programs=["none"], afxdp_binds=["skb", "drv_copy", "drv_zerocopy"], generators=["tg"], vlab=["dut", "tg"],
        online_cpus=online,
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
