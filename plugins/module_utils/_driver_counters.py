# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The drivers' own per-queue XDP counters in ``ethtool -S`` (count mode ``driver``, Contract 6).

With ``count_mode=COUNT_DRIVER`` (bpf/xdp_bench.bpf.c) the XDP program counts nothing and the verifier removes
its map access; the packets are counted by the driver, which keeps per-RX-queue XDP counters anyway:

- veth: ``rx_queue_N_xdp_drops``, ``rx_queue_N_xdp_tx``, ``rx_queue_N_xdp_redirect`` and ``rx_queue_N_xdp_packets``
  (every frame the queue's NAPI poll handed to XDP). An XDP_TX the peer could not take (no XDP there, ring full)
  is not in ``xdp_tx`` but in ``rx_queue_N_xdp_tx_errors`` (real output: all of a tx run's frames moved
  ``xdp_tx_errors`` and none ``xdp_tx``). veth has no XDP_PASS counter: passed frames are the handled ones less
  those dropped, sent back, failed to send back, redirected or lost (``rx_queue_N_drops``). Real output:
  tests/unit/fixtures/ethtool/veth_S_*.txt.
- mlx5 (driver ``mlx5_core``): ``rxN_xdp_drop``, ``rxN_xdp_tx_xmit``, ``rxN_xdp_redirect`` per channel, and the
  totals ``rx_xdp_drop``, ``rx_xdp_tx_xmit``, ``rx_xdp_redirect``. With an XDP program attached ``rxN_packets``
  counts only what XDP passed to the stack (in the XDP paper's XDP_DROP notes ``rx0_xdp_drop`` moves and
  ``rx_packets`` does not). Real output: the seed notes in tests/unit/fixtures/ethtool/seed000_mlx5_*.txt.

The counts are outcomes, as the drivers count them: ``tx`` is what was sent back, ``drop`` what was dropped
(XDP_ABORTED included; on mlx5 also an XDP_TX its send queue refused).

- virtio_net: ``rx_queue_N_xdp_drops``, ``rx_queue_N_xdp_tx``, ``rx_queue_N_xdp_redirects`` (plural) and
  ``rx_queue_N_xdp_packets``; pass is the handled frames less those three (exact while no XDP_TX or redirect send
  fails: Linux 6.1 counts such a frame in ``xdp_tx``/``xdp_redirects`` and in ``xdp_drops``). Real output: the VM
  lab's DUT, tests/unit/fixtures/ethtool/vmdut_virtio_S_*.txt.

Drivers not listed here have no per-queue XDP counters we know of from real output: xdp_counter_names() returns
None for them and the caller counts with the program (``count: program``).

Pure functions on ``{counter: int}`` dicts (_ethtool.parse_stats of ``ethtool -S``), so fixtures drive them.
"""

from __future__ import annotations

import re

XDP_ACTIONS = ("drop", "pass", "tx", "redirect")

# Per driver and action: the terms (sign, per-queue counter with {queue}) whose sum is the action's packets on
# one RX queue, and the driver's own total counter over all queues (None: the sum of the queues).
_VETH_HANDLED = "rx_queue_{queue}_xdp_packets"
_VETH_DROP = "rx_queue_{queue}_xdp_drops"
_VETH_TX = "rx_queue_{queue}_xdp_tx"
_VETH_REDIRECT = "rx_queue_{queue}_xdp_redirect"
_VETH_TX_FAILED = "rx_queue_{queue}_xdp_tx_errors"
_VETH_LOST = "rx_queue_{queue}_drops"

_COUNTERS = {
    "veth": {
        "drop": (((1, _VETH_DROP),), None),
        "tx": (((1, _VETH_TX),), None),
        "redirect": (((1, _VETH_REDIRECT),), None),
        "pass": (
            ((1, _VETH_HANDLED), (-1, _VETH_DROP), (-1, _VETH_TX), (-1, _VETH_TX_FAILED), (-1, _VETH_REDIRECT), (-1, _VETH_LOST)),
            None,
        ),
    },
    # virtio_net (Linux 6.1): rx_queue_N_xdp_packets counts every frame given to XDP; xdp_tx and xdp_redirects are
    # counted when the program returns the action, before the send (a send that fails is also in xdp_drops);
    # xdp_drops: XDP_DROP, XDP_ABORTED and failed sends. Real output: tests/unit/fixtures/ethtool/vmdut_virtio_S_*.
    "virtio_net": {
        "drop": (((1, "rx_queue_{queue}_xdp_drops"),), None),
        "tx": (((1, "rx_queue_{queue}_xdp_tx"),), None),
        "redirect": (((1, "rx_queue_{queue}_xdp_redirects"),), None),
        "pass": (
            (
                (1, "rx_queue_{queue}_xdp_packets"),
                (-1, "rx_queue_{queue}_xdp_drops"),
                (-1, "rx_queue_{queue}_xdp_tx"),
                (-1, "rx_queue_{queue}_xdp_redirects"),
            ),
            None,
        ),
    },
    "mlx5_core": {
        "drop": (((1, "rx{queue}_xdp_drop"),), "rx_xdp_drop"),
        "tx": (((1, "rx{queue}_xdp_tx_xmit"),), "rx_xdp_tx_xmit"),
        "redirect": (((1, "rx{queue}_xdp_redirect"),), "rx_xdp_redirect"),
        "pass": (((1, "rx{queue}_packets"),), "rx_packets"),
    },
}
# What `ethtool -i` may call a driver we know under another name.
_ALIASES = {"mlx5": "mlx5_core"}


def _driver_key(driver):
    driver = (driver or "").strip()
    return _ALIASES.get(driver, driver)


def _formula(terms):
    text = ""
    for sign, name in terms:
        text += (" - " if sign < 0 else (" + " if text else "")) + name
    return text


def xdp_counter_names(driver):
    """``{action: counter}`` of a driver's per-queue XDP counters, ``{queue}`` standing for the queue number
    (a derived count is written as its formula), or None when the driver has no such counters.

    >>> xdp_counter_names("veth")["drop"]
    'rx_queue_{queue}_xdp_drops'
    """
    spec = _COUNTERS.get(_driver_key(driver))
    if spec is None:
        return None
    return {action: _formula(terms) for action, (terms, _total) in spec.items()}


def xdp_total_counter(driver, action="drop"):
    """The driver's own all-queue counter of ``action`` (mlx5: ``rx_xdp_drop``), or None (sum the queues)."""
    return _spec(driver, action)[1]


def _spec(driver, action):
    if action not in XDP_ACTIONS:
        raise ValueError(f"XDP action {action!r} is not one of {', '.join(XDP_ACTIONS)}")
    spec = _COUNTERS.get(_driver_key(driver))
    if spec is None:
        known = ", ".join(sorted(_COUNTERS))
        raise ValueError(
            f"driver {driver!r} has no per-queue XDP counters in ethtool -S that xdplab knows (known: {known}); "
            f"count with the program instead (count: program)"
        )
    return spec[action]


def _queue_pattern(template):
    head, _sep, tail = template.partition("{queue}")
    return re.compile("^" + re.escape(head) + r"(\d+)" + re.escape(tail) + "$")


def per_queue_xdp_packets(stats, driver, action="drop"):
    """``{queue: packets}`` of ``action`` from one ``ethtool -S`` snapshot (or from per-second rates of one).

    Queues are those the first counter of the action names in ``stats``. Raises ValueError for a driver without
    such counters, or when ``stats`` lacks them (an older kernel, or not the driver's output), naming what is
    missing.
    """
    terms, _total = _spec(driver, action)
    first = _queue_pattern(terms[0][1])
    queues = sorted(int(m.group(1)) for m in map(first.match, stats) if m)
    if not queues:
        raise ValueError(
            f"ethtool -S has no {terms[0][1].format(queue='N')} counters for driver {driver} "
            f"(XDP {action}); counters seen: {', '.join(sorted(stats)[:8]) or '(none)'}"
        )
    out = {}
    for queue in queues:
        packets = 0
        for sign, template in terms:
            name = template.format(queue=queue)
            if name not in stats:
                raise ValueError(f"ethtool -S of a {driver} device lacks {name} (needed for XDP {action} of queue {queue})")
            packets += sign * stats[name]
        out[queue] = packets
    return out


def total_xdp_packets(stats, driver, action="drop"):
    """All-queue packets of ``action``: the driver's own total counter when it has one, else the queues' sum."""
    total = xdp_total_counter(driver, action)
    if total is not None and total in stats:
        return stats[total]
    return sum(per_queue_xdp_packets(stats, driver, action).values())


def per_queue_xdp_rates(before, after, seconds, driver, action="drop"):
    """``{queue: packets per second}`` of ``action`` between two ``ethtool -S`` snapshots ``seconds`` apart.

    A queue whose count went down (counters reset, device re-created) counts from zero; a queue that appeared
    in ``after`` only counts from zero too.
    """
    if seconds <= 0:
        raise ValueError(f"interval must be positive, got {seconds}")
    then = per_queue_xdp_packets(before, driver, action)
    now = per_queue_xdp_packets(after, driver, action)
    rates = {}
    for queue, count in now.items():
        start = then.get(queue, 0)
        rates[queue] = (count - start if count >= start else count) / seconds
    return rates
