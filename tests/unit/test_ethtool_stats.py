# SPDX-License-Identifier: GPL-3.0-or-later
"""ethtool_stats: rates and ethtool_stats.pl lines from fixture snapshots (mlx5 rates of seeds/002, real veth
snapshots); the module runs its real parsing path, only ``ethtool -S``, the monotonic clock and sleep are faked.
The module against a real veth pair with traffic is tests/integration/test_ethtool_stats.py."""

import json
import os
import re

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.modules import ethtool_stats

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "ethtool")


def fixture(name):
    with open(os.path.join(FIX, name)) as fh:
        return fh.read()


def seed_lines(name):
    # the notes indent each line by one space
    return [line[1:] for line in fixture(name).splitlines() if line.startswith(" Ethtool(")]


def snapshot(counters):
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in counters.items())


class FakeHost:
    """ethtool -S answers from a list of snapshots per device; a clock that advances only in sleep()."""

    def __init__(self, monkeypatch, snapshots, read_cost=0.0):
        self.snapshots = {d: list(s) for d, s in snapshots.items()}
        self.now = 1000.0
        self.read_cost = read_cost
        self.calls = []
        monkeypatch.setattr(ethtool_stats, "monotonic", lambda: self.now)
        monkeypatch.setattr(ethtool_stats, "sleep", self.sleep)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", self.run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self_, name, *a, **k: "/usr/sbin/ethtool")

    def sleep(self, seconds):
        self.now += seconds

    def run_command(self, argv, **_kw):
        self.calls.append(argv)
        assert argv[:2] == ["ethtool", "-S"], argv
        dev = argv[2]
        if dev not in self.snapshots:
            return 1, "", f"Cannot get stats strings information: No such device ({dev})\n"
        self.now += self.read_cost
        return 0, snapshot(self.snapshots[dev].pop(0)), ""


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        ethtool_stats.main()
    return json.loads(capsys.readouterr().out)


def rates_of(lines):
    return ethtool.parse_ethtool_stats_pl("\n".join(lines))["mlx5p1"]


@pytest.mark.parametrize("name", ["seed002_mlx5_xdp_lines.txt", "seed002_mlx5_nonxdp_lines.txt",
                                  "seed002_mlx5_tcp_window_lines.txt"])
def test_rates_from_two_snapshots_give_the_seed_lines_byte_for_byte(monkeypatch, capsys, name):
    expected = seed_lines(name)
    rates = rates_of(expected)
    # two mlx5 snapshots 2 s apart whose deltas are the seed's rates; a few counters that do not move
    before = {**{k: 10_000_000_000 + 7 * i for i, k in enumerate(sorted(rates))}, "rx_oversize_pkts_phy": 3, "ch0_arm": 0}
    after = {k: v + 2 * rates.get(k, 0) for k, v in before.items()}
    FakeHost(monkeypatch, {"mlx5p1": [before, after]})
    res = run({"devices": ["mlx5p1"], "interval": 2, "format_lines": True, "line_style": "seed002",
               "_ansible_check_mode": True}, capsys)
    assert res["changed"] is False
    assert res["lines"] == expected
    assert res["rates"]["mlx5p1"] == {k: float(v) for k, v in rates.items()}
    assert res["seconds"] == {"mlx5p1": 2.0}
    assert res["window"] == {"start": 1000.0, "end": 1002.0}
    assert res["header"] == "Show adapter mlx5p1 statistics (ONLY that changed!)"


def test_the_published_script_layout():
    # the line of the issue, ethtool_stats.pl's printf("Ethtool(%-8s) stat: %12d (%15s) <= %s /sec")
    assert ethtool.format_stats_line("mlx5p1", "rx_vport_unicast_packets", 31064392.4) == (
        "Ethtool(mlx5p1  ) stat:     31064392 (     31,064,392) <= rx_vport_unicast_packets /sec")
    # wider numbers push the columns, as printf does
    assert ethtool.format_stats_line("mlx5p1", "rx_bytes_phy", 6286927774, "seed002") == (
        "Ethtool(mlx5p1  ) stat:  6286927774 (6,286,927,774) <= rx_bytes_phy /sec")
    # Perl's %.0f rounds half to even, as Python's format does
    assert [ethtool.round_rate(x) for x in (0.5, 1.5, 2.5, 2.6)] == [0, 2, 2, 3]
    with pytest.raises(ValueError, match="unknown line style 'x'"):
        ethtool.format_stats_line("a", "b", 1, "x")


def test_lines_parse_back_to_the_seed000_values():
    # the flattened ethtool_stats.pl output of seeds/000, formatted again and parsed back: same numbers
    with open(os.path.join(FIX, "..", "seed000_ethtool_stats_changed.txt")) as fh:
        seed = ethtool.parse_ethtool_stats_pl(fh.read())["mlx5p1"]
    lines = ethtool.format_stats_lines({"mlx5p1": seed})
    assert ethtool.parse_ethtool_stats_pl("\n".join(lines))["mlx5p1"] == seed
    assert lines[0] == "Ethtool(mlx5p1  ) stat:        34585 (         34,585) <= ch0_arm /sec"


def test_real_veth_snapshots_two_devices_per_device_clock(monkeypatch, capsys, check_measurement):
    before, after = (ethtool.parse_stats(fixture(f"veth_S_{w}.txt")) for w in ("before", "after"))
    other = {"rx_queue_0_xdp_packets": 5, "tx_queue_0_xdp_xmit": 100}
    # each read costs 10 ms: the second device's reads are 10 ms later than the first's, on both rounds
    host = FakeHost(monkeypatch, {"b0": [before, after], "a0": [other, {**other, "tx_queue_0_xdp_xmit": 2100}]},
                    read_cost=0.01)
    res = run({"devices": ["b0", "a0"], "interval": 1.0, "format_lines": True}, capsys)
    assert [c[2] for c in host.calls] == ["b0", "a0", "b0", "a0"]
    b0 = res["rates"]["b0"]
    assert set(b0) == {"rx_queue_0_xdp_packets", "rx_queue_0_xdp_bytes", "rx_queue_1_xdp_packets",
                       "rx_queue_1_xdp_bytes"}
    # the absolute schedule: the second round starts 1 s after the first, however long the reads took, so each
    # device's two read midpoints are 1 s apart (a relative sleep made it 1.02 s: 1 s + the two 10 ms reads)
    assert res["seconds"]["b0"] == pytest.approx(1.0)
    assert b0["rx_queue_1_xdp_packets"] == pytest.approx(22528)
    assert b0["rx_queue_0_xdp_packets"] == pytest.approx(218176 - 195456)
    assert res["rates"]["a0"] == {"tx_queue_0_xdp_xmit": pytest.approx(2000)}
    assert res["lines"][-1] == "Ethtool(a0      ) stat:         2000 (          2,000) <= tx_queue_0_xdp_xmit /sec"
    # measurement: veth's per-queue rx_queue_N_xdp_packets (the default), summed over both devices
    m = check_measurement(res["measurement"], "ethtool", samples=1)
    assert m["source"]["counter"] == "rx_queue_{queue}_xdp_packets" and m["source"]["devices"] == ["b0", "a0"]
    assert m["packets"] == (218176 - 195456) + 22528 + 0
    assert [(q["device"], q["queue"]) for q in m["per_rxq"]] == [("a0", 0), ("b0", 0), ("b0", 1)]
    assert m["details"]["per_device"]["b0"] == pytest.approx(218176 - 195456 + 22528)
    assert [line.split("<= ")[1] for line in res["lines"][:4]] == [
        "rx_queue_0_xdp_bytes /sec", "rx_queue_0_xdp_packets /sec", "rx_queue_1_xdp_bytes /sec",
        "rx_queue_1_xdp_packets /sec"]


def test_samples_average_include_exclude_and_reset(monkeypatch, capsys, check_measurement):
    snaps = [{"rx_packets": 0, "rx_bytes": 0, "tx_packets": 7}, {"rx_packets": 100, "rx_bytes": 6400, "tx_packets": 7},
             {"rx_packets": 300, "rx_bytes": 19200, "tx_packets": 7},
             # driver reset: counts from zero
             {"rx_packets": 50, "rx_bytes": 3200, "tx_packets": 7}]
    FakeHost(monkeypatch, {"eth0": snaps})
    res = run({"devices": ["eth0"], "interval": 0.5, "samples": 3, "include": ["packets$"], "warmup": 1}, capsys)
    assert [s["rates"]["eth0"] for s in res["samples"]] == [{"rx_packets": 200.0}, {"rx_packets": 400.0},
                                                            {"rx_packets": 100.0}]
    assert [s["t"] for s in res["samples"]] == [0.5, 1.0, 1.5]
    assert res["rates"]["eth0"] == {"rx_packets": pytest.approx(350 / 1.5)}
    assert res["lines"] == [] and res["window"] == {"start": 1001.0, "end": 1002.5}
    # measurement: rx_packets (the driver has no per-queue counter), the reset counted from zero
    m = check_measurement(res["measurement"], "ethtool", samples=3)
    assert m["source"]["counter"] == "rx_packets" and m["packets"] == 350 and m["per_rxq"] == []
    assert [s["pps"] for s in m["samples"]] == [200.0, 400.0, 100.0]
    assert m["window"]["start"] == 1001.0 and m["window"]["seconds"] == 1.5

    FakeHost(monkeypatch, {"eth0": snaps[:2]})
    res = run({"devices": ["eth0"], "changed_only": False, "exclude": ["^rx_bytes$"]}, capsys)
    assert res["rates"]["eth0"] == {"rx_packets": 100.0, "tx_packets": 0.0}


def test_bad_input_and_missing_device(monkeypatch, capsys):
    FakeHost(monkeypatch, {"eth0": [{"a": 1}, {"a": 2}]})
    for args, msg in [({"devices": []}, "at least one interface"),
                      ({"devices": ["eth0"], "interval": 0}, "interval must be a positive number"),
                      ({"devices": ["eth0"], "samples": 0}, "samples must be at least 1"),
                      ({"devices": ["eth0"], "include": ["(unclosed"]}, "include: '(unclosed' is not a valid regular"),
                      ({"devices": ["way-too-long-interface-name"]}, "invalid interface name"),
                      ({"devices": ["eth0", "nope0"]}, "cannot read the counters of nope0")]:
        res = run(args, capsys)
        assert res["failed"] and msg in res["msg"], (args, res["msg"])
    assert re.search(r"No such device", res["msg"])


def test_pps_counter_per_queue_pattern_and_unknown_counter(monkeypatch, capsys, check_measurement):
    before, after = (ethtool.parse_stats(fixture(f"veth_S_{w}.txt")) for w in ("before", "after"))
    FakeHost(monkeypatch, {"b0": [before, after]})
    res = run({"devices": ["b0"], "pps_counter": "rx_queue_{queue}_xdp_bytes"}, capsys)
    m = check_measurement(res["measurement"], "ethtool", samples=1)
    assert m["per_rxq"][1] == {"queue": 1, "pps": 1351680.0, "device": "b0", "counter": "rx_queue_1_xdp_bytes"}
    FakeHost(monkeypatch, {"b0": [before, after]})
    res = run({"devices": ["b0"], "pps_counter": "rx_xdp_drop"}, capsys)
    assert res["failed"] and "pps_counter 'rx_xdp_drop' names no counter of b0" in res["msg"]
