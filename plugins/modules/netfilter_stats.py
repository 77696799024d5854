#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: netfilter_stats
short_description: Measure how many packets per second the DUT's stack drops with the netfilter_drop rule
version_added: 0.2.0
author:
  - xdplab.testbed developers
description:
  - Reads the counter of the drop rule put in place by M(xdplab.testbed.netfilter_drop) (nftables
    C(nft -j list table); iptables C(-L -v -x -n), never zeroing) O(samples) + 1 times, every O(interval)
    seconds after O(warmup) seconds, and returns the drop rate over that window. Timestamps are
    C(time.monotonic()) (CLOCK_MONOTONIC), taken half way through each counter read.
  - "Over the same window: RV(per_cpu) from C(/proc/net/softnet_stat) (column C(processed): packets
    NAPI/netif_receive_skb handed to the stack on that CPU, all protocols and all interfaces, not only the test
    flows; the file is the same in every network namespace), RV(per_rxq) from C(ethtool -S) C(rx_queue_N_packets)
    or, on veth, C(rx_queue_N_xdp_packets) (veth counts every frame its NAPI poll handles there, XDP program or
    not; frames that bypass NAPI (GRO off and no XDP) are not counted), and C(nf_conntrack_count) of the
    namespace in conntrack mode."
attributes:
  check_mode:
    support: full
    description: The module only reads counters; it runs unchanged in check mode and never reports a change.
  diff_mode:
    support: none
options:
  backend:
    description: The backend netfilter_drop used.
    type: str
    choices: [nftables, iptables]
    default: nftables
  mode:
    description:
      - The mode netfilter_drop used. Default what the rule set in place says. When given and the rule set
        in place is in the other mode, the module fails.
    type: str
    choices: [raw, conntrack]
  table:
    description: Name of the nftables table (family inet) or iptables user chain of netfilter_drop.
    type: str
    default: xdplab
  iptables_binary:
    description: The iptables command for O(backend=iptables).
    type: str
    default: iptables
  interface:
    description: Interface for RV(per_rxq). Default the input interface the drop rule matches.
    type: str
  interval:
    description: Seconds per sample.
    type: float
    default: 1.0
  samples:
    description: Number of samples.
    type: int
    default: 3
  warmup:
    description: Seconds to wait before the first read (lets the traffic generator ramp up).
    type: float
    default: 0.0
  ethtool:
    description: Read C(ethtool -S) of the interface for RV(per_rxq).
    type: bool
    default: true
requirements:
  - root in the DUT's network namespace
  - Debian package C(nftables) or C(iptables); C(ethtool) when O(ethtool=true)
seealso:
  - module: xdplab.testbed.netfilter_drop
  - module: xdplab.testbed.cpu_usage
"""

EXAMPLES = r"""
- name: Drop rate over 5 s after 2 s of warm-up
  xdplab.testbed.netfilter_stats:
    warmup: 2
    interval: 1
    samples: 5
  register: nf

- name: Show it
  ansible.builtin.debug:
    msg: "{{ nf.pps | int }} pps dropped by the stack ({{ nf.mode }}), conntrack entries {{ nf.conntrack_count }}"
"""

RETURN = r"""
pps:
  description: Packets per second the drop rule(s) counted over the window.
  returned: always
  type: float
  sample: 1251234.5
packets:
  description: Packets the drop rule(s) counted in the window.
  returned: always
  type: int
  sample: 3753703
bytes_per_second:
  description: Bytes per second (IP length, as netfilter counts) dropped.
  returned: always
  type: float
  sample: 57556787.0
seconds:
  description: Length of the window (monotonic clock).
  returned: always
  type: float
  sample: 3.0001
window:
  description: Start and end of the window on the host's CLOCK_MONOTONIC (seconds), to cut the generator's load to it.
  returned: always
  type: dict
  sample: {start: 18342.501, end: 18345.502}
samples:
  description: Per-sample drop rates; C(t) is the end of the sample relative to the window start.
  returned: always
  type: list
  elements: dict
  sample: [{t: 1.0, seconds: 1.0, packets: 1251234, pps: 1251234.0}]
per_cpu:
  description:
    - Per CPU, from /proc/net/softnet_stat over the window, CPUs that processed packets only. C(pps) is the
      C(processed) column (packets handed to the stack by NAPI on that CPU, all protocols and interfaces);
      C(dropped_pps) backlog drops, C(time_squeeze) times the NET_RX softirq ran out of budget or time.
  returned: always
  type: list
  elements: dict
  sample: [{cpu: 1, pps: 1251300.0, dropped_pps: 0.0, time_squeeze: 120}]
per_rxq:
  description: Per RX queue packets per second from C(ethtool -S), with the counter used; empty when the driver has none.
  returned: always
  type: list
  elements: dict
  sample: [{queue: 0, pps: 1251300.0, counter: rx_queue_0_xdp_packets}]
conntrack_count:
  description:
    - C(/proc/sys/net/netfilter/nf_conntrack_count) of the namespace at the end of the window in conntrack mode
      (null in raw mode). Dropped packets never confirm their entry, so it stays near 0 with only test traffic.
  returned: always
  type: int
  sample: 0
mode:
  description: Mode of the rule set measured.
  returned: always
  type: str
  sample: conntrack
backend:
  description: Backend read.
  returned: always
  type: str
  sample: nftables
interface:
  description: Interface the rule matches (or O(interface)).
  returned: always
  type: str
  sample: dut0
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool, _netfilter as netfilter

SOFTNET = "/proc/net/softnet_stat"
CONNTRACK_COUNT = "/proc/sys/net/netfilter/nf_conntrack_count"


def read_file(path):
    with open(path, encoding="ascii") as f:
        return f.read()


def per_rxq_rates(before, after, seconds):
    """Per-queue rates from two ethtool -S dicts: rx_queue_N_packets, else veth's rx_queue_N_xdp_packets."""
    for pattern in ("rx_queue_{}_packets", "rx{}_packets", "rx_queue_{}_xdp_packets"):
        rows = []
        q = 0
        while pattern.format(q) in after:
            name = pattern.format(q)
            delta = after[name] - before.get(name, 0)
            rows.append({"queue": q, "pps": max(delta, 0) / seconds, "counter": name})
            q += 1
        if rows:
            return rows
    return []


class NetfilterStats:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "backend": self.p["backend"], "per_rxq": [], "per_cpu": [],
                       "conntrack_count": None}
        for key, low in (("interval", 0.0), ("warmup", -1e-9)):
            if self.p[key] <= low:
                self.fail(f"{key} must be {'positive' if key == 'interval' else 'zero or more'}, got {self.p[key]}")
        if self.p["samples"] < 1:
            self.fail(f"samples must be at least 1, got {self.p['samples']}")
        self.backend = netfilter.backend_for(module, self.p["backend"], self.p["iptables_binary"])

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def read(self):
        t0 = time.monotonic()
        packets, nbytes, mode, iif = self.backend.counters(self.p["table"])
        t1 = time.monotonic()
        return (t0 + t1) / 2, packets, nbytes, mode, iif

    def ethtool_read(self, interface):
        if not self.p["ethtool"] or not interface:
            return None
        binary = self.module.get_bin_path("ethtool")
        if not binary:
            self.fail("ethtool is not installed on the target; install it (apt-get install ethtool) or set ethtool: false")
        try:
            return time.monotonic(), ethtool.stats(self.module.run_command, interface, ethtool=binary)
        except ethtool.EthtoolError as exc:
            self.module.warn(f"ethtool counters unavailable: {exc}")
            return None

    def run(self):
        try:
            first = self.read()
            mode, iif = first[3], first[4]
            if self.p["mode"] and mode and self.p["mode"] != mode:
                self.fail(f"the {self.p['backend']} rule set {self.p['table']} is in {mode} mode, not {self.p['mode']}; "
                          f"put it in place with netfilter_drop mode: {self.p['mode']}")
            mode = mode or self.p["mode"]
            interface = self.p["interface"] or iif
            self.result.update(mode=mode, interface=interface)
            if self.p["warmup"] > 0:
                time.sleep(self.p["warmup"])
            eth0 = self.ethtool_read(interface)
            soft0 = netfilter.parse_softnet_stat(read_file(SOFTNET))
            reads = [self.read()]
            start = reads[0][0]
            for i in range(1, self.p["samples"] + 1):
                delay = start + i * self.p["interval"] - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                reads.append(self.read())
            soft1 = netfilter.parse_softnet_stat(read_file(SOFTNET))
            eth1 = self.ethtool_read(interface)
            if mode == "conntrack":
                try:
                    self.result["conntrack_count"] = int(read_file(CONNTRACK_COUNT).strip())
                except OSError as exc:
                    self.module.warn(f"{CONNTRACK_COUNT} unreadable ({exc}): is nf_conntrack active in this namespace?")
        except netfilter.NetfilterError as exc:
            self.fail(str(exc))
        except OSError as exc:
            self.fail(f"reading counters failed: {exc}")
        end = reads[-1][0]
        seconds = end - start
        packets = reads[-1][1] - reads[0][1]
        self.result.update(
            packets=packets,
            seconds=round(seconds, 6),
            pps=packets / seconds,
            bytes_per_second=(reads[-1][2] - reads[0][2]) / seconds,
            window={"start": start, "end": end},
            samples=[{"t": round(b[0] - start, 6), "seconds": round(b[0] - a[0], 6), "packets": b[1] - a[1],
                      "pps": (b[1] - a[1]) / (b[0] - a[0])} for a, b in zip(reads, reads[1:])],
        )
        self.result["per_cpu"] = [
            {"cpu": cpu, "pps": d["processed"] / seconds, "dropped_pps": d["dropped"] / seconds,
             "time_squeeze": d["time_squeeze"]}
            for cpu, d in sorted(netfilter.softnet_delta(soft0, soft1).items()) if d["processed"]
        ]
        if eth0 and eth1:
            self.result["per_rxq"] = per_rxq_rates(eth0[1], eth1[1], eth1[0] - eth0[0])
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "backend": {"type": "str", "choices": list(netfilter.BACKENDS), "default": "nftables"},
            "mode": {"type": "str", "choices": list(netfilter.MODES)},
            "table": {"type": "str", "default": "xdplab"},
            "iptables_binary": {"type": "str", "default": "iptables"},
            "interface": {"type": "str"},
            "interval": {"type": "float", "default": 1.0},
            "samples": {"type": "int", "default": 3},
            "warmup": {"type": "float", "default": 0.0},
            "ethtool": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**NetfilterStats(module).run())


if __name__ == "__main__":
    main()
