# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Counting forwarded frames where they come back, and where the rest was lost (issue 9, Contract 4 ``forwarding``).

A forwarding trial has three places that count:

- the generator's sending port: frames offered, and (veth) frames the DUT's RX ring refused: the sender's
  ``tx_queue_N_xdp_xmit_errors`` (veth's ndo_xdp_xmit could not put them on the peer's ring);
- the DUT's ports: what it received (``if_rx_packets``, the interface statistics of /sys/class/net/DEV/statistics)
  and sent: ``if_tx_packets`` of every port (on veth this includes what XDP_REDIRECT put on the egress peer's
  ring, ``tx_queue_N_xdp_xmit``, and what XDP_TX sent back, ``rx_queue_N_xdp_tx``: veth adds the peer's
  xdp_packets to tx_packets, so on the ingress port the larger of the two counts, never their sum);
  what the far end's ring refused is ``if_tx_dropped`` (veth: ``tx_queue_N_xdp_xmit_errors`` + refused skbs, and
  ``rx_queue_N_xdp_tx_errors`` of XDP_TX on the ingress port, likewise the larger of the two);
- the generator's receive ports (the far side, ``at: generator_rx``): a cheap counting drop program
  (bpf/xdp_bare_drop) is attached and the driver counts each frame it drops (veth ``rx_queue_N_xdp_drops``,
  mlx5 ``rxN_xdp_drop``); the receiving interface's own ``if_rx_packets`` is read in the same snapshot, so the two
  can be compared over the same window (``agreement``).

Snapshots are ``{"t": monotonic, "devices": {dev: {"driver": str, "stats": {counter: int}}}}``, where ``stats``
holds ``ethtool -S`` and the interface statistics prefixed ``if_``. Everything here is pure (fixtures drive it).
"""

from __future__ import annotations

import re

from ansible_collections.xdplab.testbed.plugins.module_utils import _driver_counters as driver_counters

#: interface statistics read beside ethtool -S (/sys/class/net/DEV/statistics/NAME), prefixed "if_"
IF_STATS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors")
IF_PREFIX = "if_"


def deltas(before, after):
    """{counter: after - before} (a counter that went down counts from zero; counters only in one are left out)."""
    out = {}
    for name, now in after.items():
        if name in before:
            then = before[name]
            out[name] = now - then if now >= then else now
    return out


def summed(stats, pattern):
    """Sum of the counters whose name matches ``pattern`` with ``{queue}`` standing for a queue number."""
    head, _sep, tail = pattern.partition("{queue}")
    rx = re.compile("^" + re.escape(head) + r"\d+" + re.escape(tail) + "$") if _sep else None
    if rx is None:
        return stats.get(pattern, 0)
    return sum(v for k, v in stats.items() if rx.match(k))


def device_deltas(before, after):
    """{dev: {counter: delta}} of two snapshots of the same devices."""
    out = {}
    for dev, now in after["devices"].items():
        then = before["devices"].get(dev)
        if then is None:
            raise ValueError(f"device {dev} is not in the earlier snapshot (devices {sorted(before['devices'])})")
        out[dev] = deltas(then["stats"], now["stats"])
    return out


def counted(before, after, counter="xdp_drop"):
    """What the far side counted between two snapshots: {"packets", "per_rxq": [{device, queue, packets}],
    "counter": the counter used, "own_packets": the devices' own if_rx_packets, "agreement_pct"}.

    ``counter``: ``xdp_drop`` (the driver's XDP drop counter, with a counting drop program attached; the driver's
    per-queue names from _driver_counters) or any ethtool/interface counter name, ``{queue}`` for per-queue ones.
    """
    per_rxq, total, own, names = [], 0, 0, set()
    for dev, now in sorted(after["devices"].items()):
        then = before["devices"][dev]
        d = deltas(then["stats"], now["stats"])
        own += d.get(IF_PREFIX + "rx_packets", 0)
        if counter == "xdp_drop":
            queues_now = driver_counters.per_queue_xdp_packets(now["stats"], now["driver"], "drop")
            queues_then = driver_counters.per_queue_xdp_packets(then["stats"], then["driver"], "drop")
            names.add((driver_counters.xdp_counter_names(now["driver"]) or {}).get("drop", counter))
            for queue, packets in sorted(queues_now.items()):
                n = packets - queues_then.get(queue, 0)
                n = n if n >= 0 else packets
                total += n
                if n:
                    per_rxq.append({"device": dev, "queue": queue, "packets": n})
        else:
            names.add(counter)
            n = summed(d, counter)
            total += n
    agreement = (100.0 * (total - own) / own) if own else None
    return {
        "packets": total,
        "per_rxq": per_rxq,
        "counter": ", ".join(sorted(names)),
        "own_counter": IF_PREFIX + "rx_packets",
        "own_packets": own,
        "agreement_pct": agreement,
    }


def dut_counts(dut_deltas, ingress):
    """What the DUT itself counted on its ports ({dev: {counter: delta}}, the ingress port named):
    {received, sent, refused_by_peer, per_port}. See the module docstring for the counters."""
    ing = dut_deltas.get(ingress, {})
    received = ing.get(IF_PREFIX + "rx_packets", 0)
    # the ingress port's own tx counters already hold what XDP_TX sent back and what its peer refused (veth's
    # get_stats64 adds the peer's xdp_packets to tx_packets and the XDP_TX errors to tx_dropped): the larger of the
    # two counts, not their sum (summed, a 6.18 XDP_TX trial accounted for 195 % of what was offered)
    sent = max(ing.get(IF_PREFIX + "tx_packets", 0), summed(ing, "rx_queue_{queue}_xdp_tx"))
    refused = max(ing.get(IF_PREFIX + "tx_dropped", 0), summed(ing, "rx_queue_{queue}_xdp_tx_errors"))
    for dev, stats in dut_deltas.items():
        if dev != ingress:
            sent += stats.get(IF_PREFIX + "tx_packets", 0)
            refused += stats.get(IF_PREFIX + "tx_dropped", 0)
    per_port = {
        dev: {k: v for k, v in sorted(stats.items()) if v and (k.startswith(IF_PREFIX) or "xdp" in k or "drop" in k)}
        for dev, stats in sorted(dut_deltas.items())
    }
    return {"received": received, "sent": sent, "refused_by_peer": refused, "per_port": per_port}


def _has_xdp_xmit(stats):
    return any(k.startswith("tx_queue_") and "xdp_xmit" in k for k in stats)


def generator_refused(gen_deltas, tx_interface):
    """Frames the DUT's RX ring refused, as the generator's sending veth counts them (None where the sender has no
    such counter: a T-Rex port's oerrors are its own TX errors, the DUT's NIC counters say what its ring refused)."""
    stats = gen_deltas.get(tx_interface, {})
    if not _has_xdp_xmit(stats):
        return None
    return summed(stats, "tx_queue_{queue}_xdp_xmit_errors")


def generator_sent(gen_deltas, tx_interface):
    """Frames the generator's sending veth put on the DUT's ring plus those refused, or a T-Rex port's opackets
    (None where unknown)."""
    stats = gen_deltas.get(tx_interface, {})
    if not _has_xdp_xmit(stats):
        return stats.get("opackets")
    return summed(stats, "tx_queue_{queue}_xdp_xmit") + summed(stats, "tx_queue_{queue}_xdp_xmit_errors")


def window_offset(window, dut_window):
    """Seconds by which the DUT's window opened after the far side's, on CLOCK_REALTIME (None where either window has
    no realtime_start: the DUT's counters bracketed the far side's task, or T-Rex's runner timed the far side)."""
    starts = [(w or {}).get("realtime_start") for w in (window, dut_window)]
    if None in starts:
        return None
    return round(starts[1] - starts[0], 6)


def forwarding_section(far, dut, seconds, *, return_port, receive_ports, gen_tx_interface, gen_deltas,
                       window, dut_window=None, dut_seconds=None):
    """The record's ``forwarding`` section (all rates per second over ``seconds``, the far side's window).

    far: counted(); dut: dut_counts(); gen_deltas: {dev: {counter: delta}} of the generator's ports.
    Loss is split into: refused at the DUT's RX ring (the generator's sender counted it), dropped in the DUT
    (received, not sent), lost on the way back (sent by the DUT, not counted at the generator's receive ports:
    the receiving ring refused it or it vanished on the path).
    """
    if seconds <= 0:
        raise ValueError(f"the far side's window must be positive, got {seconds} s")

    dut_seconds = dut_seconds or seconds

    def rate(n, over=seconds):
        return None if n is None else n / over

    refused = generator_refused(gen_deltas, gen_tx_interface)
    offered = generator_sent(gen_deltas, gen_tx_interface)
    dropped = max(0.0, (dut["received"] - dut["sent"] - dut["refused_by_peer"]) / dut_seconds)
    # what the DUT sent that did not arrive: refused by the receiving ring, or gone on the path
    back = dut["refused_by_peer"] / dut_seconds + max(0.0, dut["sent"] / dut_seconds - far["packets"] / seconds)
    return {
        "received_pps": rate(far["packets"]),
        "received_packets": far["packets"],
        # what the generator's sending port put out (frames it sent + frames the DUT's ring refused), not the trial's
        # offered rate: that is the record's loss.offered_pps, with its basis (loss.offered_basis)
        "sent_pps": rate(offered),
        "window": window,
        "dut_window": dut_window,
        "dut_window_offset_s": window_offset(window, dut_window),
        "return_port": return_port,
        "receive_ports": list(receive_ports),
        "counter": far["counter"],
        "per_rxq": [dict(q, pps=q["packets"] / seconds) for q in far["per_rxq"]],
        "agreement": {
            "own_counter": far["own_counter"],
            "own_packets": far["own_packets"],
            "counted_packets": far["packets"],
            "pct": far["agreement_pct"],
        },
        "dut": {
            "received_pps": rate(dut["received"], dut_seconds),
            "sent_pps": rate(dut["sent"], dut_seconds),
            "refused_by_peer_pps": rate(dut["refused_by_peer"], dut_seconds),
            "per_port": dut["per_port"],
        },
        "lost": {
            "refused_at_dut_ring_pps": rate(refused),
            "dropped_in_dut_pps": dropped,
            "lost_on_way_back_pps": back,
        },
    }
