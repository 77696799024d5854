# SPDX-License-Identifier: GPL-3.0-or-later
"""The drivers' own per-queue XDP counters (count mode driver), against real output only.

mlx5: the XDP paper's lab notes (seeds/000), ethtool_stats.pl per-second rates of an XDP_DROP run, with the
same run's xdp_rxq_info output (the program's count) beside it. veth: ethtool -S captured on the lab VM around
traffic from xdplab-trafficgen, with xdp_bench_{drop,pass,tx} in count_mode=driver on a 2-queue veth.
"""

import json
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _driver_counters as dc
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _xdp_counters as xc

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def text(*parts):
    with open(os.path.join(FIXTURES, *parts)) as fh:
        return fh.read()


def mlx5_rates(name):
    return ethtool.parse_ethtool_stats_pl(text(*name))["mlx5p1"]


SIX_QUEUES = ("seed000_ethtool_stats_changed.txt",)  # seed000 line 53: 6 RX queues, XDP_DROP
ONE_QUEUE = ("ethtool", "seed000_mlx5_xdp_drop_1rxq_read_stats_pl.txt")  # seed000 line 153: 1 RX queue, read


def test_names_per_driver():
    assert dc.xdp_counter_names("veth")["drop"] == "rx_queue_{queue}_xdp_drops"
    assert dc.xdp_counter_names("mlx5_core") == {
        "drop": "rx{queue}_xdp_drop",
        "tx": "rx{queue}_xdp_tx_xmit",
        "redirect": "rx{queue}_xdp_redirect",
        "pass": "rx{queue}_packets",
    }
    assert dc.xdp_counter_names("mlx5") == dc.xdp_counter_names("mlx5_core")
    # veth has no XDP_PASS counter: the formula says how pass is derived
    assert dc.xdp_counter_names("veth")["pass"] == (
        "rx_queue_{queue}_xdp_packets - rx_queue_{queue}_xdp_drops - rx_queue_{queue}_xdp_tx"
        " - rx_queue_{queue}_xdp_tx_errors - rx_queue_{queue}_xdp_redirect - rx_queue_{queue}_drops"
    )
    assert dc.xdp_total_counter("mlx5_core") == "rx_xdp_drop"
    assert dc.xdp_total_counter("veth") is None


@pytest.mark.parametrize("driver", ["i40e", "ixgbe", "", None])
def test_drivers_without_known_counters_say_so(driver):
    assert dc.xdp_counter_names(driver) is None
    with pytest.raises(ValueError, match=r"no per-queue XDP counters .*\(count: program\)"):
        dc.per_queue_xdp_packets({"rx_packets": 1}, driver)


def test_unknown_action_is_refused():
    with pytest.raises(ValueError, match="not one of drop, pass, tx, redirect"):
        dc.per_queue_xdp_packets({}, "veth", "aborted")


def test_mlx5_six_queues_from_the_paper_notes():
    rates = mlx5_rates(SIX_QUEUES)
    per_queue = dc.per_queue_xdp_packets(rates, "mlx5_core", "drop")
    assert per_queue == {0: 14334335, 1: 14362141, 2: 14362118, 3: 14338841, 4: 14356183, 5: 14359405}
    # the driver's own total: rx_xdp_drop, read once by the tool, not the sum of the queues' lines
    assert dc.total_xdp_packets(rates, "mlx5_core") == 86114444
    # ethtool_stats.pl reads each counter at its own instant: the per-channel sum agrees within 0.01 %
    assert sum(per_queue.values()) == pytest.approx(86114444, rel=1e-4)
    # XDP_DROP: nothing went to the stack, so rx_packets did not change (it is not among the changed lines)
    with pytest.raises(ValueError, match=r"no rxN_packets counters"):
        dc.per_queue_xdp_packets(rates, "mlx5_core", "pass")


def test_mlx5_one_queue_driver_count_matches_the_program_count():
    rates = mlx5_rates(ONE_QUEUE)
    assert dc.per_queue_xdp_packets(rates, "mlx5_core", "drop") == {0: 8210784}
    assert dc.total_xdp_packets(rates, "mlx5_core") == 8210705
    # the same run's xdp_rxq_info (seed000 line 152): the program counted 8,210,762 on queue 0
    (run,) = xc.parse_xdp_rxq_info(text("seed000_single_cpu_read.txt"))
    assert run["rxq_sum"] == {0: 8210762}
    assert dc.per_queue_xdp_packets(rates, "mlx5_core", "drop")[0] == pytest.approx(run["rxq_sum"][0], rel=1e-5)


def veth(action, which):
    return ethtool.parse_stats(text("ethtool", f"veth_S_xdp_{action}_{which}.txt"))


def sent(action):
    return json.loads(text("ethtool", f"veth_S_xdp_{action}_generator_summary.json"))


def generator_side(action, counter):
    """Per DUT queue: how much the generator's veth end's tx_queue_N_<counter> moved (ndo_xdp_xmit)."""
    before, after = veth(action, "tg_before"), veth(action, "tg_after")
    return {q: after[f"tx_queue_{q}_{counter}"] - before[f"tx_queue_{q}_{counter}"] for q in (0, 1)}


@pytest.mark.parametrize("action", ["drop", "pass"])
def test_veth_counts_what_the_generator_delivered(action):
    before, after = veth(action, "before"), veth(action, "after")
    then = dc.per_queue_xdp_packets(before, "veth", action)
    now = dc.per_queue_xdp_packets(after, "veth", action)
    counted = {q: now[q] - then[q] for q in now}
    # the generator's summary: one thread per DUT queue, and what it sent to each
    summary = sent(action)
    by_queue = {t["queue"]: t["sent"] for t in summary["threads"]}
    assert sum(by_queue.values()) == summary["sent"] > 0
    delivered, refused = generator_side(action, "xdp_xmit"), generator_side(action, "xdp_xmit_errors")
    # every frame sent entered the DUT queue's ring or was refused there (ring full) ...
    assert {q: delivered[q] + refused[q] for q in by_queue} == by_queue
    # ... and the driver counted each one that entered under the program's action
    assert counted == delivered
    rates = dc.per_queue_xdp_rates(before, after, 2.0, "veth", action)
    assert rates == {q: counted[q] / 2.0 for q in counted}


def test_veth_xdp_tx_the_peer_refused_is_neither_tx_nor_pass():
    # xdp_bench_tx on dut0; tg0 (the generator's end) has no XDP, so veth could send nothing back
    before, after = veth("tx", "before"), veth("tx", "after")
    delivered = generator_side("tx", "xdp_xmit")
    assert all(delivered.values())
    failed = {q: after[f"rx_queue_{q}_xdp_tx_errors"] - before[f"rx_queue_{q}_xdp_tx_errors"] for q in (0, 1)}
    assert failed == delivered
    for action in ("tx", "pass", "drop", "redirect"):
        then = dc.per_queue_xdp_packets(before, "veth", action)
        now = dc.per_queue_xdp_packets(after, "veth", action)
        assert {q: now[q] - then[q] for q in now} == {0: 0, 1: 0}, action


def test_veth_actions_do_not_leak_into_each_other():
    before, after = veth("drop", "before"), veth("drop", "after")
    for other in ("tx", "redirect", "pass"):
        then = dc.per_queue_xdp_packets(before, "veth", other)
        now = dc.per_queue_xdp_packets(after, "veth", other)
        assert {q: now[q] - then[q] for q in now} == {0: 0, 1: 0}, other


def test_missing_companion_counter_is_named():
    stats = veth("drop", "after")
    del stats["rx_queue_1_xdp_tx"]
    assert dc.per_queue_xdp_packets(stats, "veth", "drop")  # drop needs only xdp_drops
    with pytest.raises(ValueError, match=r"lacks rx_queue_1_xdp_tx .*queue 1"):
        dc.per_queue_xdp_packets(stats, "veth", "pass")


def test_counter_reset_counts_from_zero():
    before = {"rx_queue_0_xdp_drops": 1000, "rx_queue_1_xdp_drops": 10}
    after = {"rx_queue_0_xdp_drops": 300, "rx_queue_1_xdp_drops": 30, "rx_queue_2_xdp_drops": 5}
    assert dc.per_queue_xdp_rates(before, after, 1.0, "veth") == {0: 300.0, 1: 20.0, 2: 5.0}
    with pytest.raises(ValueError, match="interval must be positive"):
        dc.per_queue_xdp_rates(before, after, 0, "veth")


def test_virtio_net_drop_counters_from_the_vm_lab():
    """virtio_net (Linux 6.1, the VM lab's DUT): XDP_DROP of 491 echo requests counted per queue in
    rx_queue_0_xdp_drops; rx_queue_0_xdp_packets has them all, so pass (handled - drop - tx - redirects) is 0."""
    before = ethtool.parse_stats(text("ethtool", "vmdut_virtio_S_xdp_drop_before.txt"))
    after = ethtool.parse_stats(text("ethtool", "vmdut_virtio_S_xdp_drop_after.txt"))
    assert dc.xdp_counter_names("virtio_net")["drop"] == "rx_queue_{queue}_xdp_drops"
    assert dc.per_queue_xdp_packets(before, "virtio_net", "drop") == {0: 0}
    assert dc.per_queue_xdp_packets(after, "virtio_net", "drop") == {0: 491}
    assert dc.per_queue_xdp_packets(after, "virtio_net", "pass") == {0: 0}
    assert dc.total_xdp_packets(after, "virtio_net", "drop") == 491
    rates = dc.per_queue_xdp_rates(before, after, 10.0, "virtio_net", "drop")
    assert rates == {0: pytest.approx(49.1)}
