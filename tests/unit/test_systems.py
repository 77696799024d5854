# SPDX-License-Identifier: GPL-3.0-or-later
"""The registry of system kinds (plugins/module_utils/_systems.py, filters in plugins/filter/systems.py)."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible_collections.xdplab.testbed.plugins.module_utils import _systems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _builtin():
    with open(os.path.join(ROOT, "roles", "experiment", "defaults", "main.yml")) as fh:
        systems = yaml.safe_load(fh)["experiment_systems"]
    # the xdp entry's count is a Jinja default of the inventory's xdplab_xdp_count
    systems["xdp"]["count"] = "program"
    return systems


SETTINGS = {
    "dut_cpus": [1, 2, 3],
    "dpdk_main_lcore": 1,
    "dut_interface": "veth-dut",
    "warmup": 2,
    "interval": 1,
    "samples": 5,
    "generator_slack": 10,
    "window_lead": 10,
    "cpu_bpf_stats": True,
    "now": "2026-12-04T00:00:00Z",
}


def _planned(**point):
    point.setdefault("cores", 2)
    return {"trial_id": "abc", "point": point, "repetition": 1, "index": 1, "total": 4}


def test_every_kind_has_a_provider_and_no_task_files():
    """Issue 26: every kind of system is a Python provider (plugin_utils/_trial.py PROVIDERS); no tasks/systems/ left."""
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PROVIDERS, provider_of

    assert sorted(PROVIDERS) == sorted(_systems.KINDS)
    for name, system in _builtin().items():
        provider = provider_of(system)
        assert provider is PROVIDERS[_systems.kind_of(system, name).name], name
        assert all(callable(getattr(provider, p, None)) for p in ("setup", "measure", "teardown")), name
        if "forward" in system:
            # the far side (phases start/stop/cleanup, far) and the collect of the background measure (phase cpu)
            assert all(callable(getattr(provider, p, None)) for p in ("far_setup", "far_teardown", "far_count", "collect"))
    assert not os.path.exists(os.path.join(ROOT, "roles", "experiment", "tasks", "systems"))


def test_no_system_name_in_the_trial_runners_task_files():
    """Issue 26: the variation is in the registry; the task files keep the order (set up, measure, tear down)."""
    names = set(_builtin()) | set(_systems.KINDS)
    task_dir = os.path.join(ROOT, "roles", "experiment", "tasks")
    for top in ("trial.yml", "preflight.yml", "trials.yml"):
        with open(os.path.join(task_dir, top)) as fh:
            text = fh.read()
        for name in names:
            assert f"'{name}'" not in text and f'"{name}"' not in text, f"{top} names the system {name}"


def test_trial_values_dpdk_keeps_its_main_lcore_out():
    t = _systems.trial_values(_planned(system="dpdk_vector"), _builtin(), SETTINGS)
    assert t["kind"] == "dpdk" and t["cpus"] == [2, 3] and t["dpdk_cpus"] == [2, 3]
    assert t["cpu_windowed"] is True and t["cpu_bpf_interfaces"] == []
    assert t["from_measure"] == {"dpdk_version": "version", "command": "command", "rx_paths": "rx_paths"}
    assert t["seconds"] == 2 + 5 + 10
    assert t["process_window_end"] is True


def test_trial_values_xdp_paced_reads_bpf_stats_and_does_not_bracket():
    t = _systems.trial_values(_planned(system="xdp", offered_mpps=0.5), _builtin(), SETTINGS)
    assert t["cpus"] == [1, 2] and t["rate_pps"] == 500000
    assert t["cpu_bpf_interfaces"] == ["veth-dut"] and t["cpu_windowed"] is False
    unpaced = _systems.trial_values(_planned(system="xdp"), _builtin(), SETTINGS)
    assert unpaced["cpu_windowed"] is True and unpaced["cpu_bpf_interfaces"] == []
    no_bpf = _systems.trial_values(_planned(system="xdp", offered_mpps=0.5), _builtin(), dict(SETTINGS, cpu_bpf_stats=False))
    assert no_bpf["cpu_windowed"] is True and no_bpf["cpu_bpf_interfaces"] == []


def test_trial_values_forwarding_runs_the_generator_past_the_window_lead():
    t = _systems.trial_values(_planned(system="xdp_tx"), _builtin(), SETTINGS)
    assert t["seconds"] == 2 + 5 + 10 + 10 and t["forward_dut_cpu_window"] is True
    process = _systems.trial_values(_planned(system="dpdk_mac"), _builtin(), SETTINGS)
    assert process["seconds"] == 27 and process["forward_dut_cpu_window"] is False


def test_trial_values_af_xdp_and_tcp_do_not_bracket_their_window():
    for name in ("af_xdp_copy", "tcp", "latency_floor"):
        assert _systems.trial_values(_planned(system=name), _builtin(), SETTINGS)["cpu_windowed"] is False


def test_trial_values_unknown_system_and_kind_are_named():
    with pytest.raises(_systems.SystemsError, match="'nope' is not one of experiment_systems"):
        _systems.trial_values(_planned(system="nope"), _builtin(), SETTINGS)
    with pytest.raises(_systems.SystemsError, match="bad: impl 'quantum' has no trial implementation"):
        _systems.trial_values(_planned(system="bad"), {"bad": {"impl": "quantum"}}, SETTINGS)


def test_measured_provenance_picks_the_kinds_keys():
    t = _systems.trial_values(_planned(system="af_xdp_copy"), _builtin(), SETTINGS)
    got = _systems.measured_provenance(t, {"bind_mode": "drv_copy", "version": "1", "pps": 5})
    assert got == {"bind_mode": "drv_copy", "version": "1"}


def test_system_matrix_pins_axes_a_kind_does_not_have(tmp_path):
    src = tmp_path / "f.bpf.c"
    src.write_text("int x;\n")
    systems = _systems.with_custom(
        _builtin(), {"mine": {"kind": "xdp", "source": str(src), "program": "xdp_mine"}}, "/usr/local/lib/xdplab"
    )
    axes = {"action": ["drop"], "touch": ["no_touch", "read"], "packet_len": [64], "cores": [1, 2, 3]}
    m = _systems.system_matrix(
        ["xdp", "dpdk_vector", "dpdk_scalar", "af_xdp_copy", "linux_raw", "mine"], axes, systems, [1, 2, 3], 0
    )
    by_first = {sub["system"][0]: sub for sub in m}
    assert by_first["xdp"]["touch"] == ["no_touch", "read"] and by_first["xdp"]["system"] == ["xdp"]
    assert by_first["dpdk_vector"]["system"] == ["dpdk_vector", "dpdk_scalar"]
    assert by_first["dpdk_vector"]["touch"] == ["no_touch"] and by_first["dpdk_vector"]["cores"] == [1, 2, 3]
    assert by_first["mine"]["touch"] == ["no_touch"], "a custom program has no touch mode"
    assert by_first["linux_raw"]["touch"] == ["no_touch"]
    # DPDK's main lcore on a DUT CPU: one core less
    m = _systems.system_matrix(["dpdk_vector"], axes, systems, [1, 2, 3], 1)
    assert m == [{"system": ["dpdk_vector"], "action": ["drop"], "touch": ["no_touch"], "packet_len": [64], "cores": [1, 2]}]
    # no core left for DPDK: no sub-matrix
    assert _systems.system_matrix(["dpdk_vector"], dict(axes, cores=[1]), systems, [1], 1) == []


def test_with_custom_adds_a_driver_counted_xdp_system(tmp_path):
    src = tmp_path / "f.bpf.c"
    src.write_text("int x;\n")
    merged = _systems.with_custom(
        _builtin(), {"mine": {"kind": "xdp", "source": str(src), "program": "xdp_mine", "variables": {"port": 9}}}, "/opt/x"
    )
    entry = merged["mine"]
    assert entry["impl"] == "xdp" and entry["count"] == "driver" and entry["custom"] is True
    assert entry["object"] == "/opt/x/lib/bpf/custom/mine.bpf.o" and entry["program"] == "xdp_mine"
    assert entry["variables"] == {"port": 9} and entry["label"] == "mine"
    import hashlib

    assert entry["given"] == {"source": str(src), "sha256": hashlib.sha256(b"int x;\n").hexdigest()}
    # merged once more (ab_compare passes its merged systems to the role): the same, not a shadowing error
    assert (
        _systems.with_custom(
            merged, {"mine": {"kind": "xdp", "source": str(src), "program": "xdp_mine", "variables": {"port": 9}}}, "/opt/x"
        )
        == merged
    )


def test_custom_errors_name_the_field_and_the_value(tmp_path):
    src = tmp_path / "f.bpf.c"
    src.write_text("x")
    builtin = _builtin()
    cases = {
        "xdp": ({"kind": "xdp", "source": str(src), "program": "p"}, "shadows the built-in system 'xdp'"),
        "a": ({"kind": "dpdk", "source": str(src), "program": "p"}, "kind: 'dpdk' is not a kind a custom system can have"),
        "b": ({"kind": "xdp", "program": "p"}, "give exactly one of source"),
        "c": ({"kind": "xdp", "source": str(src), "object": str(src), "program": "p"}, "got both"),
        "d": ({"kind": "xdp", "source": "/nonexistent/x.c", "program": "p"}, "source: /nonexistent/x.c is not a file"),
        "e": ({"kind": "xdp", "source": str(src)}, "program: missing"),
        "f": ({"kind": "xdp", "source": str(src), "program": "p", "colour": 1}, "unknown key(s) colour"),
        "g": ({"kind": "xdp", "source": str(src), "program": "p", "variables": [1]}, "variables: must be a mapping"),
        "h": ("xdp", "must be a mapping like"),
    }
    for name, (entry, expected) in cases.items():
        errors = _systems.custom_errors({name: entry}, builtin)
        assert any(expected in e and f"xdplab_custom_systems: {name}" in e for e in errors), (name, errors)
    assert _systems.custom_errors({}, builtin) == [] and _systems.custom_errors(None, builtin) == []
    with pytest.raises(_systems.SystemsError, match="shadows"):
        _systems.with_custom(builtin, {"xdp": cases["xdp"][0]}, "/p")


def test_needs_reads_the_kinds_preflight():
    b = _builtin()
    assert _systems.needs(["xdp", "linux_raw"], b, "xdp_mode")
    assert not _systems.needs(["linux_raw", "xdp_tx"], b, "xdp_mode")
    assert _systems.needs(["dpdk_scalar"], b, "dpdk_port")
    assert not _systems.needs(["nope"], b, "dpdk_port")


def test_system_matrix_leaves_bad_values_to_the_input_checks():
    axes = {"action": ["drop"], "cores": ["two", 1, 3]}
    m = _systems.system_matrix(["dpdk_vector", "nope"], axes, _builtin(), [1, "x", 2], 1)
    assert m[0]["cores"] == ["two", 1] and m[1] == {"system": ["nope"], "action": ["drop"], "cores": ["two", 1, 3]}


def test_forward_plan_by_mode():
    touch, count = {"no_touch": 0, "read": 1, "swapmac": 2}, {"program": 0, "driver": 1}
    b = _builtin()
    tx = _systems.forward_plan(b["xdp_tx"], "veth-dut1", 0, touch, count)
    assert tx["router"] is False and tx["xdp"] == {
        "object": "xdp_bench",
        "program": "xdp_bench_tx",
        "variables": {"touch_mode": 2, "count_mode": 1},
        "map_entries": {},
    }
    redirect = _systems.forward_plan(b["xdp_redirect"], "veth-dut1", 0, touch, count)["xdp"]
    assert redirect["map_entries"] == {"tx_ports": {"0": "veth-dut1"}} and redirect["variables"] == {}
    cpu = _systems.forward_plan(b["xdp_redirect_cpu"], "veth-dut1", 0, touch, count)["xdp"]
    assert cpu["variables"] == {"remote_cpu": 0}
    assert cpu["map_entries"] == {"cpu_map": {"0": {"qsize": 2048, "program": "xdp_cpumap_fwd"}}, "tx_ports": {"0": "veth-dut1"}}
    assert _systems.forward_plan(b["linux_forward"], "veth-dut1", 0, touch, count) == {
        "mode": "linux",
        "router": True,
        "xdp": None,
        "process": False,
    }
    assert _systems.forward_plan(b["dpdk_mac"], "veth-dut1", 0, touch, count)["process"] is True
    with pytest.raises(_systems.SystemsError, match="forwarding process of the kind dpdk"):
        _systems.forward_plan({"impl": "forward", "forward": "dpdk", "name": "x"}, "e", 0, touch, count)
    with pytest.raises(_systems.SystemsError, match="forward 'teleport' is not a forwarding mode"):
        _systems.forward_plan({"forward": "teleport", "name": "x"}, "e", 0, touch, count)


def test_no_system_or_kind_name_in_a_task_files_jinja():
    """Issue 26: grep finds no system name in roles/experiment/tasks or in a Jinja expression of playbooks/."""
    import glob
    import re

    names = set(_builtin()) | set(_systems.KINDS)
    files = glob.glob(os.path.join(ROOT, "roles", "experiment", "tasks", "**", "*.yml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    for path in files:
        with open(path) as fh:
            text = "\n".join(line for line in fh if not line.lstrip().startswith("#"))
        for expr in re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text, flags=re.S):
            for name in names:
                assert f"'{name}'" not in expr and f'"{name}"' not in expr, f"{path}: {name} in {expr[:120]}"


def test_custom_programs_are_the_bpf_object_kinds():
    custom = {
        "a": {"kind": "xdp", "source": "/s.c", "program": "p", "label": "A"},
        "b": {"kind": "xdp", "object": "/o", "program": "q"},
        "c": {"kind": "linux", "ruleset": "/r.nft"},
        "d": "bad",
        "e": {"kind": "xdp", "program": "x"},
    }
    assert _systems.custom_programs(custom) == [{"name": "a", "source": "/s.c", "program": "p"},
                                                {"name": "b", "object": "/o", "program": "q"}]  # fmt: skip


RULESET = (
    "table inet my_drop {\n\tchain pre {\n\t\ttype filter hook prerouting priority raw; policy accept;\n"
    "\t\tudp dport 12-75 counter drop\n\t}\n}\n"
)


def test_with_custom_adds_a_users_nftables_ruleset(tmp_path):
    import hashlib

    path = tmp_path / "rules.nft"
    path.write_text(RULESET)
    custom = {"my_nft": {"kind": "linux", "ruleset": str(path), "label": "my rules"}}
    merged = _systems.with_custom(_builtin(), custom, "/opt/x")
    entry = merged["my_nft"]
    assert entry == {
        "impl": "linux",
        "custom": True,
        "mode": "ruleset",
        "label": "my rules",
        "ruleset": str(path),
        "tables": ["inet my_drop"],
        "given": {"ruleset": str(path), "sha256": hashlib.sha256(RULESET.encode()).hexdigest()},
    }
    assert _systems.with_custom(merged, custom, "/opt/x") == merged
    t = _systems.trial_values(_planned(system="my_nft"), merged, SETTINGS)
    assert t["kind"] == "linux" and t["custom"] is True and t["cpu_windowed"] is True and t["cpus"] == [1, 2]
    # the linux kind has no axis of its own: a custom ruleset runs on the common axes
    axes = {"action": ["drop"], "touch": ["no_touch", "read"], "packet_len": [64], "cores": [1]}
    m = _systems.system_matrix(["linux_raw", "my_nft"], axes, merged, [1, 2, 3], 0)
    assert [sub["system"] for sub in m] == [["linux_raw"], ["my_nft"]] and all(s["touch"] == ["no_touch"] for s in m)
    assert "ruleset" in _systems.kind_info(entry)["custom_keys"]


def test_custom_ruleset_errors_name_the_field_and_the_value(tmp_path):
    good = tmp_path / "ok.nft"
    good.write_text(RULESET)
    flush = tmp_path / "flush.nft"
    flush.write_text("flush ruleset\n" + RULESET)
    empty = tmp_path / "empty.nft"
    empty.write_text("# nothing\n")
    binary = tmp_path / "bin.nft"
    binary.write_bytes(b"\xff\xfe\x00table")
    cases = {
        "a": ({"kind": "linux"}, "ruleset: missing"),
        "b": ({"kind": "linux", "ruleset": "/nonexistent/r.nft"}, "ruleset: /nonexistent/r.nft is not a file on the controller"),
        "c": ({"kind": "linux", "ruleset": str(flush)}, f"ruleset: {flush} has flush ruleset"),
        "d": ({"kind": "linux", "ruleset": str(empty)}, f"ruleset: {empty} declares no table"),
        "e": ({"kind": "linux", "ruleset": str(binary)}, "is not a readable text file"),
        "f": ({"kind": "linux", "ruleset": str(good), "source": "x.c"}, "unknown key(s) source (a linux system takes"),
        "linux_raw": ({"kind": "linux", "ruleset": str(good)}, "shadows the built-in system 'linux_raw'"),
    }
    for name, (entry, expected) in cases.items():
        errors = _systems.custom_errors({name: entry}, _builtin())
        assert any(expected in e and f"xdplab_custom_systems: {name}" in e for e in errors), (name, errors)
    assert _systems.custom_errors({"ok": {"kind": "linux", "ruleset": str(good)}}, _builtin()) == []
    with pytest.raises(_systems.SystemsError, match="declares no table"):
        _systems.with_custom(_builtin(), {"x": cases["d"][0]}, "/p")


def test_no_system_name_in_the_kinds_providers():
    """A kind's variation (raw, conntrack, a user's ruleset; the benchmark program or a user's) is in the modules and
    the registry's entry: no provider (plugin_utils/_trial.py) names a system."""
    import inspect

    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PROVIDERS

    names = set(_builtin())
    for kind, provider in PROVIDERS.items():
        text = inspect.getsource(provider)
        for name in names:
            assert f"'{name}'" not in text and f'"{name}"' not in text, f"the provider of {kind} names the system {name}"


def test_with_custom_adds_a_users_af_xdp_binary(tmp_path):
    import hashlib

    binary = tmp_path / "my_xsk"
    binary.write_bytes(b"\x7fELF...")
    binary.chmod(0o755)
    custom = {"my_xsk": {"kind": "af_xdp", "binary": str(binary), "args": ["--dev", "{interface}", "-q", "{queue}", 3]}}
    merged = _systems.with_custom(_builtin(), custom, "/opt/x")
    assert merged["my_xsk"] == {
        "impl": "af_xdp",
        "custom": True,
        "count": "driver",
        "label": "my_xsk",
        "binary": "/opt/x/bin/custom/my_xsk",
        "args": ["--dev", "{interface}", "-q", "{queue}", "3"],
        "given": {"binary": str(binary), "sha256": hashlib.sha256(b"\x7fELF...").hexdigest()},
    }
    t = _systems.trial_values(_planned(system="my_xsk"), merged, SETTINGS)
    assert t["kind"] == "af_xdp" and t["custom"] is True and t["cpu_windowed"] is False
    axes = {"action": ["drop"], "mode": ["rxdrop", "l2fwd"], "bind": ["skb", "drv_copy"], "cores": [1]}
    (sub,) = _systems.system_matrix(["my_xsk"], axes, merged, [1, 2, 3], 0)
    assert sub["mode"] == ["rxdrop"] and sub["bind"] == ["drv_copy"], "a user's binary has no mode or bind axis"


def test_custom_af_xdp_errors_name_the_field_and_the_value(tmp_path):
    binary = tmp_path / "b"
    binary.write_text("x")
    binary.chmod(0o644)
    cases = {
        "a": ({"kind": "af_xdp"}, "binary: missing"),
        "b": ({"kind": "af_xdp", "binary": "/nonexistent/b"}, "binary: /nonexistent/b is not a file on the controller"),
        "c": ({"kind": "af_xdp", "binary": str(binary)}, "is not executable"),
        "d": ({"kind": "af_xdp", "binary": str(binary), "args": "--dev x"}, "args: must be a list of strings"),
        "e": ({"kind": "af_xdp", "binary": str(binary), "args": ["{iface}"]}, "unknown placeholder(s) iface"),
        "f": ({"kind": "af_xdp", "binary": str(binary), "args": ["{queue"]}, "args: '{queue'"),
    }
    for name, (entry, expected) in cases.items():
        errors = _systems.custom_errors({name: entry}, _builtin())
        assert any(expected in e and f"xdplab_custom_systems: {name}" in e for e in errors), (name, errors)
    binary.chmod(0o755)
    assert _systems.custom_errors({"ok": {"kind": "af_xdp", "binary": str(binary), "args": ["{cpu}"]}}, _builtin()) == []
