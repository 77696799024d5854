# SPDX-License-Identifier: GPL-3.0-or-later
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")

VETH_S = """NIC statistics:
     peer_ifindex: 2
     rx_queue_0_xdp_packets: 0
     rx_queue_1_xdp_packets: 1000
     rx_queue_1_xdp_bytes: 46000
     rx_queue_1_xdp_drops: 1000
"""

VETH_L = """Channel parameters for xp-a:
Pre-set maximums:
RX:\t\t2
TX:\t\t2
Other:\t\tn/a
Combined:\tn/a
Current hardware settings:
RX:\t\t2
TX:\t\t1
Other:\t\tn/a
Combined:\tn/a
"""


def test_parse_stats():
    s = ethtool.parse_stats(VETH_S)
    assert s == {"peer_ifindex": 2, "rx_queue_0_xdp_packets": 0, "rx_queue_1_xdp_packets": 1000,
                 "rx_queue_1_xdp_bytes": 46000, "rx_queue_1_xdp_drops": 1000}


def test_counter_rates_only_changed_and_reset():
    before = {"a": 10, "b": 5, "c": 100}
    after = {"a": 30, "b": 5, "c": 4, "new": 7}
    assert ethtool.counter_rates(before, after, 2.0) == {"a": 10.0, "c": 2.0}
    assert ethtool.counter_rates(before, after, 2.0, changed_only=False)["b"] == 0.0
    with pytest.raises(ValueError):
        ethtool.counter_rates(before, after, 0)


def test_parse_channels_and_driver_info():
    ch = ethtool.parse_channels(VETH_L)
    assert ch["max"] == {"rx": 2, "tx": 2, "other": None, "combined": None}
    assert ch["current"]["tx"] == 1
    info = ethtool.parse_driver_info("driver: veth\nversion: 1.0\nfirmware-version: \nbus-info: \n")
    assert info["driver"] == "veth" and info["version"] == "1.0" and info["firmware-version"] == ""


def test_ethtool_stats_pl_seed_output_matches_the_notes_arithmetic():
    with open(os.path.join(FIXTURES, "seed000_ethtool_stats_changed.txt")) as fh:
        parsed = ethtool.parse_ethtool_stats_pl(fh.read())
    mlx = parsed["mlx5p1"]
    # the notes: rx_packets_phy - rx_discards_phy = 98233252 - 12048409 = 86184843
    assert mlx["rx_packets_phy"] - mlx["rx_discards_phy"] == 86184843
    assert sum(mlx[f"rx{q}_xdp_drop"] for q in range(6)) == pytest.approx(mlx["rx_xdp_drop"], rel=1e-3)


def test_runner_errors_say_what_failed():
    def runner(argv):
        return 71, "", "Cannot get driver information: Operation not supported"

    with pytest.raises(ethtool.EthtoolError, match="ethtool -i lo failed"):
        ethtool.driver_info(runner, "lo")
    assert ethtool.stats(lambda argv: (0, VETH_S, ""), "xp-a")["rx_queue_1_xdp_drops"] == 1000
