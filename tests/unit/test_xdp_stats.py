# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_stats against a faked kernel map (the real one is exercised in tests/integration)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf, _xdp_counters as xdp_counters
from ansible_collections.xdplab.testbed.plugins.modules import xdp_stats


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        xdp_stats.main()
    return json.loads(capsys.readouterr().out)


def fake_prog(monkeypatch, maps):
    monkeypatch.setattr(libbpf, "attached_program", lambda ifindex: (42, "native"))
    monkeypatch.setattr(libbpf, "prog_info", lambda prog_id=None, fd=None: {
        "id": 42, "tag": "ab", "name": "xdp_bench_drop", "load_time": 1, "map_ids": [m["id"] for m in maps]})
    monkeypatch.setattr(libbpf, "map_info", lambda mid: next(m for m in maps if m["id"] == mid))


RXQ_MAP = {"id": 7, "name": "rxq_stats", "type": libbpf.BPF_MAP_TYPE_PERCPU_ARRAY, "type_name": "percpu_array",
           "value_size": 24}


def test_no_program_attached(monkeypatch, capsys):
    monkeypatch.setattr(libbpf, "attached_program", lambda ifindex: (0, None))
    res = run_module({"interface": "lo"}, capsys)
    assert res["failed"] and "no XDP program attached on lo" in res["msg"]
    assert "xdplab.testbed.xdp_program" in res["msg"]


def test_program_without_rxq_stats(monkeypatch, capsys):
    fake_prog(monkeypatch, [{"id": 9, "name": "xdp_bare.rodata", "type": 2, "type_name": "array", "value_size": 4}])
    res = run_module({"interface": "lo"}, capsys)
    assert res["failed"] and "has no rxq_stats map" in res["msg"] and "xdp_bare.rodata" in res["msg"]


def test_samples_a_growing_map_in_check_mode(monkeypatch, capsys):
    fake_prog(monkeypatch, [RXQ_MAP])
    reads = {"n": 0}
    zero = xdp_counters.RXQ_COUNTERS.pack(0, 0, 0)

    def read(map_id):
        # queue 0 on CPU 0 gets 1000 packets per read, queue 1 on CPU 1 3000 (queue 1 is the busy one)
        n = reads["n"]
        reads["n"] += 1
        return [
            [xdp_counters.RXQ_COUNTERS.pack(1000 * n, 64000 * n, 0), zero],
            [zero, xdp_counters.RXQ_COUNTERS.pack(3000 * n, 192000 * n, 0)],
        ]

    monkeypatch.setattr(libbpf, "read_percpu_array", read)
    res = run_module({"interface": "lo", "interval": 0.05, "samples": 3, "ethtool": False,
                      "_ansible_check_mode": True}, capsys)
    assert res["changed"] is False
    assert reads["n"] == 4
    assert res["packets"] == 12000
    assert [s["packets"] for s in res["samples"]] == [4000, 4000, 4000]
    assert res["per_rxq"][1]["queue"] == 1 and res["per_rxq"][1]["cpus"] == [1]
    assert res["total_pps"] == pytest.approx(4000 / 0.05, rel=0.5)
    assert res["imbalance"]["imbalanced"] is True and res["imbalance"]["busiest_queue"] == 1
    assert res["program"]["map_id"] == 7 and res["ethtool"] == {}


def test_bad_parameters(capsys):
    res = run_module({"interface": "lo", "interval": 0}, capsys)
    assert res["failed"] and "interval must be positive" in res["msg"]
    res = run_module({"interface": "lo", "imbalance_threshold": 0.9}, capsys)
    assert res["failed"] and "greater than 1" in res["msg"]
