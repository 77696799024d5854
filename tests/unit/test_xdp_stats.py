# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_stats against a faked kernel map (the real one is exercised in tests/integration)."""

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _xdp_counters as xdp_counters
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


def test_samples_a_growing_map_in_check_mode(monkeypatch, capsys, check_measurement):
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
    m = check_measurement(res["measurement"], "program_map", samples=3)
    assert m["source"]["count_mode"] == "program" == res["count_mode"] and m["source"]["map_id"] == 7
    assert m["packets"] == 12000 and m["pps"] == res["total_pps"]
    assert m["per_cpu"] == res["per_cpu"] and m["imbalance"] == res["imbalance"]
    assert m["window"]["start"] == res["window"]["start"]


def test_bad_parameters(capsys):
    res = run_module({"interface": "lo", "interval": 0}, capsys)
    assert res["failed"] and "interval must be a positive number" in res["msg"]
    res = run_module({"interface": "lo", "imbalance_threshold": 0.9}, capsys)
    assert res["failed"] and "greater than 1" in res["msg"]


def make(args, clock):
    """An XdpStats on the fake clock (no real sleeping), and its AnsibleModule."""
    with patch_module_args(args):
        module = AnsibleModule(argument_spec=xdp_stats.argument_spec(), supports_check_mode=True)
    return xdp_stats.XdpStats(module, clock=clock, sleep=clock.sleep), module


def veth_stats_text(drops):
    """ethtool -S of a 2-queue veth (the lines of tests/unit/fixtures/ethtool/veth_S_after.txt) with the drop
    counts ``drops`` per queue."""
    lines = ["NIC statistics:", "     peer_ifindex: 2"]
    for q, n in enumerate(drops):
        lines += [f"     rx_queue_{q}_xdp_packets: {n}", f"     rx_queue_{q}_xdp_bytes: {n * 60}",
                  f"     rx_queue_{q}_drops: 0", f"     rx_queue_{q}_xdp_redirect: 0", f"     rx_queue_{q}_xdp_drops: {n}",
                  f"     rx_queue_{q}_xdp_tx: 0", f"     rx_queue_{q}_xdp_tx_errors: 0"]
    return "\n".join(lines) + "\n"


def fake_ethtool(monkeypatch, module, driver, stats=None):
    calls = []

    def run_command(argv, **kw):
        calls.append(argv)
        if argv[1] == "-i":
            return 0, f"driver: {driver}\nversion: 1.0\nbus-info: \n", ""
        return 0, stats(), ""

    monkeypatch.setattr(module, "get_bin_path", lambda name, *a, **kw: "/usr/sbin/ethtool")
    monkeypatch.setattr(module, "run_command", run_command)
    return calls


def test_program_mode_on_the_fake_clock_follows_the_schedule(monkeypatch, fake_clock, check_measurement):
    fake_prog(monkeypatch, [RXQ_MAP])
    zero = xdp_counters.RXQ_COUNTERS.pack(0, 0, 0)

    def read(map_id):
        n = int(fake_clock.now - 1000)  # 1000 packets per fake second on queue 0, CPU 1
        return [[zero, xdp_counters.RXQ_COUNTERS.pack(1000 * n, 64000 * n, 0)]]

    monkeypatch.setattr(libbpf, "read_percpu_array", read)
    runner, _module = make({"interface": "lo", "warmup": 2, "interval": 1, "samples": 4, "ethtool": False}, fake_clock)
    res = runner.run()
    assert fake_clock.sleeps == [2.0, 1.0, 1.0, 1.0, 1.0]
    m = check_measurement(res["measurement"], "program_map", samples=4)
    assert m["window"]["start"] == 1002.0 and m["window"]["seconds"] == 4.0
    assert m["pps"] == 1000.0 and m["packets"] == 4000 and m["per_cpu"] == [{"cpu": 1, "pps": 1000.0}]
    assert m["spread"]["cv"] == 0.0 and m["details"]["bytes_per_second"] == 64000.0


def test_driver_mode_reads_veth_drop_counters_without_a_map(monkeypatch, fake_clock, check_measurement):
    fake_prog(monkeypatch, [])  # a bare XDP_DROP program: no maps at all
    runner, module = make({"interface": "lo", "count": "driver", "interval": 1, "samples": 3}, fake_clock)
    calls = fake_ethtool(monkeypatch, module, "veth",
                         lambda: veth_stats_text([3000 * int(fake_clock.now - 1000), 1000 * int(fake_clock.now - 1000)]))
    res = runner.run()
    assert [c[1] for c in calls] == ["-i", "-S", "-S", "-S", "-S"]
    m = check_measurement(res["measurement"], "driver_counters", samples=3)
    assert m["source"]["count_mode"] == "driver" == res["count_mode"] and m["source"]["driver"] == "veth" == res["driver"]
    assert m["source"]["counter"] == "rx_queue_{queue}_xdp_drops" and m["source"]["program"] == "xdp_bench_drop"
    assert m["pps"] == 4000.0 and m["packets"] == 12000 and m["per_cpu"] == []
    assert [(q["queue"], q["pps"]) for q in m["per_rxq"]] == [(0, 3000.0), (1, 1000.0)]
    assert m["imbalance"]["imbalanced"] is True and m["imbalance"]["busiest_queue"] == 0
    assert res["program"]["map_id"] is None and res["total_pps"] == 4000.0
    assert res["ethtool"]["rx_queue_0_xdp_drops"] == 3000.0


def test_driver_mode_refuses_a_driver_without_xdp_counters(monkeypatch, fake_clock, capsys):
    fake_prog(monkeypatch, [])
    with patch_module_args({"interface": "lo", "count": "driver"}), pytest.raises(SystemExit):
        module = AnsibleModule(argument_spec=xdp_stats.argument_spec(), supports_check_mode=True)
        fake_ethtool(monkeypatch, module, "e1000e")
        xdp_stats.XdpStats(module, clock=fake_clock, sleep=fake_clock.sleep).run()
    res = json.loads(capsys.readouterr().out)
    assert res["failed"] and "driver e1000e" in res["msg"] and "use count: program" in res["msg"]
