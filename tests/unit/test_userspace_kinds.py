# SPDX-License-Identifier: GPL-3.0-or-later
"""The providers of the kinds dpdk and af_xdp for their drop entries (plugins/plugin_utils/_kind_dpdk.py,
_kind_af_xdp.py; issue 26): their pure parts (input checks, module arguments), and the modules a provider calls in
what order with which arguments, on a stand-in for the trial's phases that records them (the real runs are the lab
tests: test_custom_systems, test_seed_experiments, paper_drop's dpdk and af_xdp systems)."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.xdplab.testbed.plugins.module_utils import _systems
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_af_xdp, _kind_dpdk
from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PROVIDERS, PhaseFailure, provider_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as fh:
        return yaml.safe_load(fh)


def _systems_builtin():
    return _yaml("roles", "experiment", "defaults", "main.yml")["experiment_systems"]


def _trial(system, dut_cpus=(1, 2, 3), main_lcore=1, **point):
    planned = {"trial_id": "t1", "point": dict({"system": system, "cores": 2}, **point), "repetition": 1, "index": 1,
               "total": 1}  # fmt: skip
    settings = {"dut_cpus": list(dut_cpus), "dpdk_main_lcore": main_lcore, "dut_interface": "veth-dut0",
                "now": "2026-12-05T00:00:00Z"}  # fmt: skip
    return _systems.trial_values(planned, _systems_builtin(), settings)


class FakePhases:
    """What a provider uses of plugin_utils/_trial.Phases: the host's variables, the trial's state, and module
    calls, recorded with canned results."""

    def __init__(self, trial, variables, results=None):
        self.state = {"trial": trial, "program": {}}
        self.variables = variables
        self.results = results or {}
        self.calls = []
        self.changed = False
        self.task_vars = {"inventory_hostname": "dut"}

    @property
    def trial(self):
        return self.state["trial"]

    def var(self, name, default=None):
        value = self.variables.get(name)
        return default if value is None else value

    def host_var(self, host, name, default=None):
        return self.variables.get(f"{host}.{name}", default)

    def flag(self, name, default=False):
        # as Phases.flag: Ansible's own boolean (the inventory's "false" is False)
        return boolean(self.var(name, default), strict=False)

    def module(self, name, args):
        args = {k: v for k, v in args.items() if v is not None}
        self.calls.append((name, args))
        result = self.results.get((name, args.get("state")), {})
        if callable(result):
            result = result(args)
        self.changed = self.changed or bool(result.get("changed"))
        return result


VLAB = {
    "xdplab_dut_interface": "veth-dut0",
    "xdplab_dut_egress_interface": "veth-dut1",
    "xdplab_dut_cpus": [1, 2, 3],
    "xdplab_dut_ip": "198.18.0.2",
    "xdplab_dpdk_main_lcore": 1,
    "xdplab_dpdk_testpmd": "/usr/bin/dpdk-testpmd",
    "xdplab_dpdk_port": "",
    "xdplab_dpdk_egress_port": "",
    "xdplab_dpdk_vdev_driver": "net_af_xdp",
    "xdplab_dpdk_devargs": {"vector": "", "scalar": ""},
    "xdplab_dpdk_max_simd_bitwidth": {"vector": None, "scalar": 64},
    "xdplab_dpdk_mbufs": 0,
    "xdplab_dpdk_no_huge": "false",
    "xdplab_nic_cpus": [],
    "xdplab_bpf_prefix": "/usr/local/lib/xdplab",
    "xdplab_afxdp_xdp_mode": "native",
    "xdplab_afxdp_poll": True,
    "xdplab_afxdp_txpush_offered_pps": 1000,
    "__experiment_afxdp_binds": _yaml("roles", "experiment", "vars", "main.yml")["__experiment_afxdp_binds"],
    "__experiment_gen": {"host": "tg", "mac": "02:00:00:00:00:01", "ip": "198.18.0.1"},
    "experiment_warmup": 2,
    "experiment_interval": 1,
    "experiment_samples": 5,
    "__experiment_systems": _systems_builtin(),
}


# -- which entries the providers take ---------------------------------------------------------------------------
def test_the_userspace_kinds_providers_take_every_entry():
    systems = _systems_builtin()
    assert PROVIDERS["dpdk"] is _kind_dpdk.DpdkProvider and PROVIDERS["af_xdp"] is _kind_af_xdp.AfXdpProvider
    for name, system in systems.items():
        assert provider_of(system) is PROVIDERS[system["impl"]], name
    assert provider_of(None) is None and provider_of({"impl": "nope"}) is None
    # the forwarding entries (testpmd mac/macswap, l2fwd beside the far side's count) too
    assert any("forward" in s and s["impl"] == "dpdk" for s in systems.values())
    assert any("forward" in s and s["impl"] == "af_xdp" for s in systems.values())


def _planned_vars(system, **more):
    return dict(VLAB, __experiment_planned={"trial_id": "t1", "point": {"system": system}}, **more)


def test_dpdk_forwarding_input_check_before_any_change():
    for system, egress, ok in (("dpdk_mac", "veth-dut1", True), ("dpdk_macswap", "", True), ("dpdk_mac", "", False),
                               ("dpdk_mac", "veth-dut0", False)):  # fmt: skip
        trial = _trial(system)
        fwd = dict({"return_port": "egress"}, **_systems_builtin()[system])
        settings = {"host": "dut", "interface": "veth-dut0", "dpdk_port": "", "egress_port": ""}
        assert (_kind_dpdk.forward_input_error(trial, fwd, egress, settings) is None) == ok, (system, egress)
    trial = _trial("dpdk_mac")
    bad = dict(_systems_builtin()["dpdk_mac"], forward_mode="macswap")
    settings = {"host": "dut", "interface": "veth-dut0", "dpdk_port": "", "egress_port": ""}
    msg = _kind_dpdk.forward_input_error(trial, bad, "veth-dut1", settings)
    assert "forward_mode 'macswap' return_port 'egress'" in msg
    # a PCI port needs the egress port's PCI address too
    settings = {"host": "dut", "interface": "eth1", "dpdk_port": "0000:03:00.0", "egress_port": ""}
    fwd = _systems_builtin()["dpdk_mac"]
    assert "xdplab_dpdk_egress_port must give" in _kind_dpdk.forward_input_error(trial, fwd, "eth2", settings)
    # refused by the setup before the port is bound or anything else runs
    variables = _planned_vars("dpdk_mac", xdplab_dut_egress_interface="")
    p = FakePhases(_trial("dpdk_mac"), variables)
    with pytest.raises(PhaseFailure, match="xdplab_dut_egress_interface must name a port"):
        _kind_dpdk.DpdkProvider.setup(p)
    assert p.calls == []


def test_dpdk_forwarding_testpmd_runs_for_the_far_sides_window_and_a_margin():
    from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward

    variables = _planned_vars("dpdk_mac", experiment_window_lead=5, **{"tg.xdplab_generator_rx_mac": "02:00:00:00:00:03"})
    p = FakePhases(_trial("dpdk_mac"), variables)
    args = _kind_dpdk._testpmd_args(p)
    # the margin: (6 s + the window's lead) / interval samples past the far side's window
    assert _kind_forward.margin_samples(p) == 11 and args["samples"] == 5 + 11
    assert args["window_end_file"] == _kind_forward.WINDOW_END_FILE and args["forward_mode"] == "mac"
    assert args["extra_args"] == ["--eth-peer=0,02:00:00:00:00:01", "--eth-peer=1,02:00:00:00:00:03"]
    assert [a.split(",")[1] for a in args["ports"]] == ["iface=veth-dut0", "iface=veth-dut1"]
    # the latency experiment: the generator's whole run and the lead at most (its window ends with the generator)
    p.variables["experiment_latency"] = True
    assert _kind_forward.process_samples(p) == p.trial["seconds"] + _kind_forward.LATENCY_LEAD_S + 11
    # a drop entry: its samples, no window end
    drop = _kind_dpdk._testpmd_args(FakePhases(_trial("dpdk_vector"), variables))
    assert drop["samples"] == 5 and drop["window_end_file"] is None and drop["forward_mode"] == "rxonly"


def test_afxdp_forwarding_input_is_l2fwd_back_out_of_its_queue():
    variables = _planned_vars("af_xdp_l2fwd", __experiment_gen={"host": "tg", "backend": "xdp_live", "interface": "veth-tg0"})
    bad = dict(_systems_builtin()["af_xdp_l2fwd"], return_port="egress")
    variables["__experiment_systems"] = dict(_systems_builtin(), af_xdp_l2fwd=bad)
    p = FakePhases(_trial("af_xdp_l2fwd"), variables)
    with pytest.raises(PhaseFailure, match="mode l2fwd, return_port ingress"):
        _kind_af_xdp.AfXdpProvider.setup(p)
    assert p.calls == []


def test_the_process_result_is_the_far_sides_measurement_with_its_own_rate_beside_it(monkeypatch):
    from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward

    far = {"measurement": {"pps": 100.0, "at": "generator_rx", "details": {"forwarding": {"dut_rx_pps": 101.0}}}}
    monkeypatch.setattr(_kind_forward.ForwardProvider, "collect", staticmethod(lambda phases: dict(far, cpu_window=None)))
    own = {"version": "23.11", "command": ["dpdk-testpmd"], "cpu_window": {"start": {}, "end": {}},
           "measurement": {"pps": 99.0, "source": "testpmd", "window": {"end": 3.0}}}  # fmt: skip
    collected = []

    class Jobs(FakePhases):
        def collect_job(self, name, timeout_s):
            collected.append((name, timeout_s))
            return own

    p = Jobs(_trial("dpdk_mac"), VLAB)
    p.state["jobs"] = {_kind_forward.PROCESS_JOB: {"limit_s": 321}}
    measured = _kind_forward.collect_process(p, "testpmd")
    assert collected == [(_kind_forward.PROCESS_JOB, 321)]
    # the rest of the measure's result is the process's (the record's version, command; its CPU window)
    assert measured["version"] == "23.11" and measured["cpu_window"] == own["cpu_window"]
    assert measured["measurement"]["pps"] == 100.0 and measured["measurement"]["details"] == {
        "forwarding": {"dut_rx_pps": 101.0},
        "dut_process": {"name": "testpmd", "pps": 99.0, "source": "testpmd", "window": {"end": 3.0}},
    }


# -- dpdk -------------------------------------------------------------------------------------------------------
def test_dpdk_input_check_names_the_simd_variant_and_the_cpus():
    trial = _trial("dpdk_vector")
    assert trial["cpus"] == [2, 3]
    assert _kind_dpdk.input_error(trial, {"vector": None, "scalar": 64}, 1) is None
    msg = _kind_dpdk.input_error(trial, {"scalar": 64}, 1)
    assert msg == (
        "system dpdk_vector: SIMD variant 'vector' needs an entry in xdplab_dpdk_max_simd_bitwidth (['scalar']), and 2 "
        "forwarding lcores need as many DUT CPUs besides the main lcore 1 (have [2, 3])"
    )
    # 3 cores on 3 DUT CPUs, one of them the main lcore: 2 left
    short = _trial("dpdk_vector", cores=3)
    assert "3 forwarding lcores need as many DUT CPUs besides the main lcore 1 (have [2, 3])" in _kind_dpdk.input_error(
        short, {"vector": None}, 1
    )


def test_dpdk_ports_vdev_pci_and_two_ports():
    vdev = {"dpdk_port": "", "egress_port": "", "devargs": "", "vdev_driver": "net_af_xdp", "interface": "veth-dut0",
            "egress_interface": "veth-dut1"}  # fmt: skip
    assert _kind_dpdk.testpmd_ports({"simd": "vector"}, 2, vdev) == ["net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=2"]
    assert _kind_dpdk.testpmd_ports({"forward_mode": "mac"}, 1, vdev) == [
        "net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=1",
        "net_af_xdp1,iface=veth-dut1,start_queue=0,queue_count=1",
    ]
    pci = dict(vdev, dpdk_port="0000:03:00.0", egress_port="0000:03:00.1", devargs="rx_vec_en=0")
    assert _kind_dpdk.testpmd_ports({"simd": "scalar"}, 4, pci) == ["0000:03:00.0,rx_vec_en=0"]
    assert _kind_dpdk.testpmd_ports({"forward_mode": "mac"}, 4, dict(pci, devargs="")) == ["0000:03:00.0", "0000:03:00.1"]
    assert _kind_dpdk.testpmd_extra_args({}, "a", "b") == []
    assert _kind_dpdk.testpmd_extra_args({"forward_mode": "mac"}, "a", "b") == ["--eth-peer=0,a", "--eth-peer=1,b"]


def test_dpdk_bind_check_and_what_is_bound():
    assert _kind_dpdk.bind_errors([{"pci": "0000:00:04.0"}, {"pci": "0000:0a:1f.7", "driver": "uio"}]) is None
    assert _kind_dpdk.bind_errors([{"pci": "00:04.0"}, {"pci": "0000:00:04.0"}, {}]) == (
        "dpdk_bind_devices: 00:04.0, None not PCI addresses in domain:bus:slot.function form (e.g. 0000:03:00.0)"
    )
    result = {"address": "0000:00:04.0", "driver": "vfio-pci", "previous": "vfio-pci", "noiommu": True,
              "iommu_group": "0", "seconds": 0.2, "record": {"driver": "virtio-pci", "interfaces": ["ens4"]}}  # fmt: skip
    bound = {"pci": "0000:00:04.0", "driver": "vfio-pci", "previous": "virtio-pci", "interfaces": ["ens4"],
             "noiommu": True, "iommu_group": "0", "seconds": 0.2}  # fmt: skip
    assert _kind_dpdk.bound_device(result) == bound
    # no record: the driver it had before
    assert _kind_dpdk.bound_device(dict(result, record=None))["previous"] == "vfio-pci"
    assert _kind_dpdk.bound_device(dict(result, record=None))["interfaces"] == []


def test_the_roles_defaults_the_dpdk_provider_reads_are_the_roles_own():
    dpdk = _yaml("roles", "dpdk", "defaults", "main.yml")
    nic = _yaml("roles", "nic", "defaults", "main.yml")
    assert {k: dpdk[k] for k in _kind_dpdk.DPDK_ROLE_DEFAULTS} == _kind_dpdk.DPDK_ROLE_DEFAULTS
    assert {k: nic[k] for k in _kind_dpdk.NIC_ROLE_DEFAULTS} == _kind_dpdk.NIC_ROLE_DEFAULTS
    # role nic's ports.yml passes the same optional keys of a port on
    ports = _yaml("roles", "nic", "tasks", "ports.yml")[0]["xdplab.testbed.nic_settings"]
    passed = {k for k, v in ports.items() if "| default(omit)" in str(v)}
    assert passed == set(_kind_dpdk.NIC_PORT_KEYS)


def test_nic_settings_args_and_drift():
    port = {"name": "ens4", "pci": "0000:00:04.0", "channels": {"combined": 2}, "irq_cpus": [1, 2]}
    assert _kind_dpdk.nic_settings_args(port, 12, "skip", False) == {
        "interface": "ens4", "pci": "0000:00:04.0", "channels": {"combined": 2}, "irq_cpus": [1, 2],
        "ntuple_udp_flows": 0, "ntuple_port_base": 12, "ntuple_purge": False, "unsupported": "skip", "verify": False,
    }  # fmt: skip
    drift = [{"interface": "ens4", "item": "channels.combined", "expected": 2, "actual": 1}]
    assert _kind_dpdk.drift_message("dut", drift) == (
        "dut drifted from its NIC tuning, refusing to measure: ens4 channels.combined expected 2, actual 1. Run the nic "
        "role again (or fix the inventory) before measuring."
    )


def test_dpdk_provider_on_the_virtual_lab():
    phases = FakePhases(_trial("dpdk_vector"), dict(VLAB, xdplab_nic_cpus=[0]))
    program = _kind_dpdk.DpdkProvider.setup(phases)
    assert program == {"system": "dpdk", "simd": "vector", "forward_mode": "rxonly", "testpmd": "/usr/bin/dpdk-testpmd",
                       "max_simd_bitwidth": None, "devargs": "", "main_lcore": 1, "no_huge": False, "dpdk_build": {},
                       "bound": None, "pci": None, "nic_cpus": [0]}  # fmt: skip
    assert phases.calls == [("xdplab.testbed.napi_affinity", {"interface": "veth-dut0", "cpus": [0]})]
    phases.calls.clear()
    phases.results[("xdplab.testbed.testpmd", "measured")] = {"changed": True, "pps": 1.0}
    assert _kind_dpdk.DpdkProvider.measure(phases) == {"changed": True, "pps": 1.0}
    # changed_when: false (testpmd leaves the port as found)
    assert phases.changed is False
    assert phases.calls == [("xdplab.testbed.testpmd", {
        "state": "measured", "binary": "/usr/bin/dpdk-testpmd", "name": "trial",
        "ports": ["net_af_xdp0,iface=veth-dut0,start_queue=0,queue_count=2"], "forward_mode": "rxonly",
        "lcores": [1, 2, 3], "nb_cores": 2, "rxq": 2, "txq": 2, "rss": "udp", "no_huge": False, "extra_args": [],
        "warmup": 2, "interval": 1, "samples": 5})]  # fmt: skip
    phases.calls.clear()
    phases.variables["__experiment_planned"] = {"point": {"system": "dpdk_vector"}}
    _kind_dpdk.DpdkProvider.teardown(phases)
    assert phases.calls == [
        ("xdplab.testbed.testpmd", {"state": "absent", "name": "trial"}),
        ("xdplab.testbed.xdp_program", {"interface": "veth-dut0", "state": "absent", "mode": "native"}),
        ("xdplab.testbed.napi_affinity", {"interface": "veth-dut0", "cpus": [1, 2, 3]}),
    ]


def test_dpdk_provider_refuses_a_trial_before_any_change():
    phases = FakePhases(_trial("dpdk_vector"), dict(VLAB, xdplab_dpdk_max_simd_bitwidth={"scalar": 64}))
    with pytest.raises(PhaseFailure, match="SIMD variant 'vector' needs an entry"):
        _kind_dpdk.DpdkProvider.setup(phases)
    assert phases.calls == []


def test_dpdk_provider_binds_the_port_per_trial_and_gives_it_back_tuned():
    """The VM lab's virtio-net port (dpdk_bind_at: trial): pci_driver bind in setup, restored in teardown, then the
    nic role's settings again (a read-only pass over every port first, as the role's preflight)."""
    variables = dict(VLAB, xdplab_dpdk_port="0000:00:04.0", dpdk_bind_at="trial", dpdk_bind_vfio_noiommu=True,
                     dpdk_bind_devices=[{"pci": "0000:00:04.0", "driver": "vfio-pci"}],
                     xdplab_dpdk_devargs={"vector": "", "scalar": "x=1"},
                     nic_ports=[{"name": "ens4", "channels": {"combined": 2}}], xdplab_nic_cpus=[0])  # fmt: skip
    bind = {"address": "0000:00:04.0", "driver": "vfio-pci", "previous": "virtio-pci", "noiommu": True,
            "iommu_group": "1", "seconds": 0.5, "record": None, "changed": True}  # fmt: skip
    phases = FakePhases(_trial("dpdk_scalar"), variables, {("xdplab.testbed.pci_driver", None): bind})
    program = _kind_dpdk.DpdkProvider.setup(phases)
    bound = {"address": "0000:00:04.0", "driver": "vfio-pci", "vfio_noiommu": True, "record_dir": "/run/xdplab/pci_driver"}
    assert phases.calls == [("xdplab.testbed.pci_driver", bound)]
    # a PCI port: no NAPI move (the NIC's DMA does that work)
    assert program["bound"] == [{"pci": "0000:00:04.0", "driver": "vfio-pci", "previous": "virtio-pci",
                                 "interfaces": [], "noiommu": True, "iommu_group": "1", "seconds": 0.5}]  # fmt: skip
    assert program["pci"] == ["0000:00:04.0"] and "nic_cpus" not in program and program["max_simd_bitwidth"] == 64
    assert phases.changed is True
    phases.calls.clear()
    _kind_dpdk.DpdkProvider.measure(phases)
    assert phases.calls[0][1]["ports"] == ["0000:00:04.0,x=1"] and phases.calls[0][1]["max_simd_bitwidth"] == 64
    phases.calls.clear()
    phases.variables["__experiment_planned"] = {"point": {"system": "dpdk_scalar"}}
    _kind_dpdk.DpdkProvider.teardown(phases)
    nic = {"interface": "ens4", "channels": {"combined": 2}, "ntuple_udp_flows": 0, "ntuple_port_base": 12,
           "ntuple_purge": False, "unsupported": "fail"}  # fmt: skip
    assert phases.calls == [
        ("xdplab.testbed.testpmd", {"state": "absent", "name": "trial"}),
        ("xdplab.testbed.pci_driver", {"address": "0000:00:04.0", "state": "restored", "record_dir": "/run/xdplab/pci_driver"}),
        ("xdplab.testbed.nic_settings", dict(nic, verify=True)),
        ("xdplab.testbed.nic_settings", dict(nic, verify=False)),
    ]


def test_dpdk_provider_nic_drift_check_only():
    variables = dict(VLAB, xdplab_dpdk_port="0000:00:04.0", dpdk_bind_at="trial", nic_verify_only=True,
                     dpdk_bind_devices=[{"pci": "0000:00:04.0"}], nic_ports=[{"name": "ens4"}],
                     __experiment_planned={"point": {"system": "dpdk_vector"}})  # fmt: skip
    drift = {"drift": [{"interface": "ens4", "item": "rings.rx", "expected": 512, "actual": 256}]}
    phases = FakePhases(_trial("dpdk_vector"), variables, {("xdplab.testbed.nic_settings", None): drift})
    with pytest.raises(PhaseFailure, match=r"dut drifted from its NIC tuning, refusing to measure: ens4 rings\.rx"):
        _kind_dpdk.DpdkProvider.teardown(phases)
    assert [c[1].get("verify") for c in phases.calls if c[0] == "xdplab.testbed.nic_settings"] == [True]


# -- af_xdp -----------------------------------------------------------------------------------------------------
def test_afxdp_run_from_the_points_axes_or_the_system():
    binds = VLAB["__experiment_afxdp_binds"]
    assert _kind_af_xdp.afxdp_run(_trial("af_xdp_copy"), binds, "native") == {"mode": "rxdrop", "xdp_mode": "native",
                                                                              "copy_mode": "copy"}  # fmt: skip
    assert _kind_af_xdp.afxdp_run(_trial("af_xdp", mode="txpush", bind="skb"), binds, "native") == {
        "mode": "txpush", "xdp_mode": "skb", "copy_mode": "copy"}  # fmt: skip
    with pytest.raises(PhaseFailure, match=r"system af_xdp: bind 'zc' is not one of the AF_XDP binds \(skb, drv_copy"):
        _kind_af_xdp.afxdp_run(_trial("af_xdp", bind="zc"), binds, "native")


def test_afxdp_bench_args_txpush_sends_to_the_generator():
    settings = {"binary": "/b", "interface": "veth-dut0", "poll": True, "warmup": 2, "interval": 1, "samples": "5",
                "gen_mac": "m", "gen_ip": "g", "dut_ip": "d"}  # fmt: skip
    rxdrop = _kind_af_xdp.bench_args(_trial("af_xdp_copy"), {"mode": "rxdrop", "xdp_mode": "native", "copy_mode": "copy"},
                                     settings)  # fmt: skip
    assert rxdrop["queues"] == [0, 1] and rxdrop["cpus"] == [1, 2] and rxdrop["samples"] == 5
    assert [k for k in ("dst_mac", "src_ip", "dst_ip", "packet_len") if rxdrop[k] is not None] == []
    run = {"mode": "txpush", "xdp_mode": "skb", "copy_mode": "copy"}
    txpush = _kind_af_xdp.bench_args(_trial("af_xdp", packet_len=128), run, settings)
    assert (txpush["dst_mac"], txpush["src_ip"], txpush["dst_ip"], txpush["packet_len"]) == ("m", "d", "g", 128)


def test_afxdp_provider_bench_txpush_asks_for_a_trickle():
    phases = FakePhases(_trial("af_xdp", mode="txpush", bind="drv_copy"), VLAB)
    program = _kind_af_xdp.AfXdpProvider.setup(phases)
    assert program == {"system": "af_xdp", "mode": "txpush", "bind": "drv_copy", "copy_mode": "copy",
                       "xdp_mode": "native", "binary": "/usr/local/lib/xdplab/bin/xdplab-xsk-bench"}  # fmt: skip
    assert phases.state["traffic"] == {"rate_pps": 1000} and phases.calls == []
    phases = FakePhases(_trial("af_xdp_copy"), VLAB)
    assert _kind_af_xdp.AfXdpProvider.setup(phases)["bind"] is None and "traffic" not in phases.state


def test_afxdp_provider_users_binary_measure_and_teardown():
    systems = _systems.with_custom(_systems_builtin(), {}, "/p")
    systems["mine"] = {"impl": "af_xdp", "custom": True, "count": "driver", "label": "mine", "binary": "/p/bin/custom/mine",
                       "args": ["--dev", "{interface}"], "given": {"binary": "/home/u/mine", "sha256": "ab"}}  # fmt: skip
    planned = {"trial_id": "t", "point": {"system": "mine", "cores": 1}, "repetition": 1, "index": 1, "total": 1}
    trial = _systems.trial_values(planned, systems, {"dut_cpus": [1, 2]})
    variables = dict(VLAB, __experiment_systems=systems, __experiment_planned=planned)
    results = {("xdplab.testbed.afxdp_user", "started"): {"command": [["/p/bin/custom/mine", "--dev", "veth-dut0"]]},
               ("xdplab.testbed.xdp_stats", None): {"measurement": {"pps": 5}}}  # fmt: skip
    phases = FakePhases(trial, variables, results)
    phases.state["program"] = {"binary": "/p/bin/custom/mine"}
    assert _kind_af_xdp.AfXdpProvider.measure(phases) == {"measurement": {"pps": 5}}
    assert phases.state["program"]["command"] == [["/p/bin/custom/mine", "--dev", "veth-dut0"]]
    assert phases.calls == [
        ("xdplab.testbed.afxdp_user", {"state": "started", "binary": "/p/bin/custom/mine", "args": ["--dev", "{interface}"],
                                       "interface": "veth-dut0", "queues": [0], "cpus": [1]}),
        ("xdplab.testbed.xdp_stats", {"interface": "veth-dut0", "count": "driver", "action": "redirect", "warmup": 2,
                                      "interval": 1, "samples": 5}),
        ("xdplab.testbed.afxdp_user", {"state": "stopped"}),
    ]  # fmt: skip
    phases.calls.clear()
    _kind_af_xdp.AfXdpProvider.teardown(phases)
    assert phases.calls == [
        ("xdplab.testbed.afxdp_user", {"state": "absent"}),
        ("xdplab.testbed.xsk_bench", {"state": "absent", "interface": "veth-dut0"}),
        ("xdplab.testbed.xdp_program", {"interface": "veth-dut0", "state": "absent"}),
    ]
