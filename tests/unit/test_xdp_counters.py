# SPDX-License-Identifier: GPL-3.0-or-later
"""Imbalance verdict and aggregation, driven by the XDP paper's xdp_rxq_info output (fixtures from seeds/000)."""

import os
import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _xdp_counters as xc

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture_text(name):
    with open(os.path.join(FIXTURES, f"seed000_{name}.txt")) as fh:
        return fh.read()


def only_run(name):
    runs = xc.parse_xdp_rxq_info(fixture_text(name))
    assert len(runs) == 1
    return runs[0]


BALANCED = ["stream_count_1", "stream_count_2", "stream_count_3", "stream_count_4", "stream_count_5",
            "stream_count_6", "stream_count_12", "stream_count_X", "read_4cpus", "single_flow_mlx5",
            "single_cpu_read", "i40e_single_queue"]
IMBALANCED = ["stream_count_7", "stream_count_8", "i40e_multi_queue"]


@pytest.mark.parametrize("n", range(1, 9))
def test_stream_count_runs_parse_to_the_noted_total(n):
    text = fixture_text(f"stream_count_{n}")
    noted = int(re.search(r"XDP_DROP total: ([\d,]+)", text).group(1).replace(",", ""))
    run = only_run(f"stream_count_{n}")
    assert run["interface"] == "mlx5p1" and run["ifindex"] == 8 and run["action"] == "XDP_DROP"
    assert run["total_pps"] == noted
    # xdp_rxq_info rounds each CPU's rate separately: the sum may differ by one per CPU
    assert sum(run["per_cpu"].values()) == pytest.approx(noted, abs=len(run["per_cpu"]))
    # one flow per queue up to 6 queues: as many active queues as flows, at most 6
    assert len(run["rxq_sum"]) == min(n, 6)
    # every per-(queue, cpu) line has a matching :sum line with the same number of queues
    assert {q for q, _c in run["rxq_cpu"]} == set(run["rxq_sum"])


@pytest.mark.parametrize("name", BALANCED)
def test_balanced_runs_are_not_flagged(name):
    view = xc.from_rxq_info(only_run(name))
    verdict = view["imbalance"]
    assert verdict["imbalanced"] is False, verdict["reason"]
    assert verdict["reason"].startswith("balanced")
    assert verdict["max_over_mean"] is None or verdict["max_over_mean"] <= 1.25


@pytest.mark.parametrize("name", IMBALANCED)
def test_imbalanced_runs_are_flagged(name):
    verdict = xc.from_rxq_info(only_run(name))["imbalance"]
    assert verdict["imbalanced"] is True
    assert verdict["max_over_mean"] > 1.25
    assert verdict["reason"].startswith("imbalanced")


def test_stream_count_7_names_cpu2_with_twice_the_others():
    run = only_run("stream_count_7")
    verdict = xc.from_rxq_info(run)["imbalance"]
    assert verdict["busiest_cpu"] == 2 and verdict["busiest_queue"] == 2
    assert verdict["active_cpus"] == [0, 1, 2, 3, 4, 5] and verdict["active_queues"] == [0, 1, 2, 3, 4, 5]
    mean = sum(run["per_cpu"].values()) / 6
    assert verdict["cpu_max_over_mean"] == pytest.approx(run["per_cpu"][2] / mean, abs=1e-4)
    # CPU 2 handles two flows: 2x the least busy CPU
    assert run["per_cpu"][2] / min(run["per_cpu"].values()) == pytest.approx(2.0, rel=0.01)
    assert "24,313,750" in verdict["reason"]


def test_stream_count_8_has_two_busy_cpus():
    run = only_run("stream_count_8")
    verdict = xc.from_rxq_info(run)["imbalance"]
    busy = sorted(c for c, p in run["per_cpu"].items() if p > 20_000_000)
    assert busy == [2, 3]
    assert verdict["busiest_cpu"] in busy
    assert verdict["busiest_queue"] in (2, 3)
    assert 1.4 < verdict["max_over_mean"] < 1.6
    # a looser threshold accepts it, a threshold <= 1 is refused
    view = xc.from_rxq_info(run, threshold=1.6)
    assert view["imbalance"]["imbalanced"] is False
    with pytest.raises(ValueError):
        xc.from_rxq_info(run, threshold=1.0)


def test_i40e_queue_2_is_served_by_cpu_3():
    run = only_run("i40e_multi_queue")
    view = xc.from_rxq_info(run)
    q2 = next(e for e in view["per_rxq"] if e["queue"] == 2)
    assert q2["cpus"] == [3]
    assert view["imbalance"]["busiest_cpu"] == 3


def test_fixtures_parse_as_one_document():
    text = "".join(fixture_text(n) for n in BALANCED + IMBALANCED)
    runs = xc.parse_xdp_rxq_info(text)
    assert len(runs) == len(BALANCED) + len(IMBALANCED)
    flagged = [xc.from_rxq_info(r)["imbalance"]["imbalanced"] for r in runs]
    assert flagged == [False] * len(BALANCED) + [True] * len(IMBALANCED)


def test_multiline_xdp_rxq_info_output():
    text = """
Running XDP on dev:eth0 (ifindex:3) action:XDP_DROP options:read
XDP stats       CPU     pps         issue-pps
XDP-RX CPU      0       1000        0
XDP-RX CPU      1       3000        0
XDP-RX CPU      total   4000

RXQ stats       RXQ:CPU pps         issue-pps
rx_queue_index    0:0   1000        0
rx_queue_index    0:sum 1000
rx_queue_index    1:1   3000        0
rx_queue_index    1:sum 3000
"""
    (run,) = xc.parse_xdp_rxq_info(text)
    assert run["options"] == "read"
    assert run["per_cpu"] == {0: 1000, 1: 3000}
    assert run["rxq_cpu"] == {(0, 0): 1000, (1, 1): 3000}
    assert xc.from_rxq_info(run)["imbalance"]["imbalanced"] is True  # 3000 / 2000 = 1.5


def raw(packets, nbytes=0, errors=0):
    return xc.RXQ_COUNTERS.pack(packets, nbytes, errors)


def test_decode_keeps_non_zero_queue_cpu_pairs():
    zero = raw(0)
    values = [[raw(10, 600), zero], [zero, raw(5, 300, 1)], [zero, zero]]
    assert xc.decode_rxq_stats(values) == {(0, 0): (10, 600, 0), (1, 1): (5, 300, 1)}


def test_summarize_rates_and_samples():
    s0 = {(0, 0): (100, 6000, 0)}
    s1 = {(0, 0): (1100, 66000, 0), (1, 1): (500, 30000, 2)}
    s2 = {(0, 0): (2100, 126000, 0), (1, 1): (1500, 90000, 2)}
    res = xc.summarize([(10.0, s0), (11.0, s1), (12.0, s2)])
    assert res["packets"] == 3500
    assert res["seconds"] == 2.0
    assert res["total_pps"] == 1750.0
    assert res["ns_per_packet"] == pytest.approx(1e9 / 1750)
    assert res["per_cpu"] == [{"cpu": 0, "pps": 1000.0}, {"cpu": 1, "pps": 750.0}]
    assert res["per_rxq"] == [{"queue": 0, "pps": 1000.0, "cpus": [0]}, {"queue": 1, "pps": 750.0, "cpus": [1]}]
    assert res["rxq_cpu"] == [{"queue": 0, "cpu": 0, "pps": 1000.0}, {"queue": 1, "cpu": 1, "pps": 750.0}]
    assert [s["packets"] for s in res["samples"]] == [1500, 2000]
    assert res["bytes_per_second"] == 105000.0
    assert res["errors_per_second"] == 1.0
    assert res["imbalance"]["imbalanced"] is False  # 1000 / 875 = 1.14


def test_counter_reset_counts_from_zero():
    d = xc.snapshot_delta({(0, 0): (1000, 0, 0)}, {(0, 0): (40, 0, 0)})
    assert d == {(0, 0): (40, 0, 0)}


def test_stray_packets_on_an_idle_queue_do_not_fake_an_imbalance():
    per = [{"cpu": 0, "pps": 1_000_000.0}, {"cpu": 1, "pps": 1_000_000.0}, {"cpu": 2, "pps": 3.0}]
    rxq = [{"queue": q, "pps": e["pps"], "cpus": [q]} for q, e in enumerate(per)]
    verdict = xc.imbalance(per, rxq)
    assert verdict["active_cpus"] == [0, 1]
    assert verdict["imbalanced"] is False


def test_no_traffic():
    verdict = xc.imbalance([], [])
    assert verdict["imbalanced"] is False and verdict["reason"] == "no traffic"
    with pytest.raises(ValueError):
        xc.summarize([(1.0, {})])
