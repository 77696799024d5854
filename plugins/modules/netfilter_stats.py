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
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the counter of the drop rule put in place by M(xdplab.testbed.netfilter_drop) (nftables
    C(nft -j list table); iptables C(-L -v -x -n), never zeroing) O(samples) + 1 times, every O(interval)
    seconds after O(warmup) seconds (the collection's one sampler, an absolute schedule on CLOCK_MONOTONIC), and
    returns the drop rate over that window. Timestamps are taken half way through each counter read.
  - "Over the same window: RV(per_cpu) from C(/proc/net/softnet_stat) (column C(processed): packets
    NAPI/netif_receive_skb handed to the stack on that CPU, all protocols and all interfaces, not only the test
    flows; the file is the same in every network namespace), RV(per_rxq) from C(ethtool -S) C(rx_queue_N_packets)
    or, on veth, C(rx_queue_N_xdp_packets) (veth counts every frame its NAPI poll handles there, XDP program or
    not; frames that bypass NAPI (GRO off and no XDP) are not counted), and C(nf_conntrack_count) of the
    namespace in conntrack mode."
  - RV(measurement) is the one measurement shape (doc fragment xdplab.testbed.measurement); its C(source) is
    C(kind=netfilter_rule), C(at=dut), with the backend, mode and table.
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
  - xdplab.testbed.sampling
  - xdplab.testbed.sampling.cpu_window
  - xdplab.testbed.measurement
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
      - C(ruleset) reads a user's ruleset (netfilter_drop O(xdplab.testbed.netfilter_drop#module:mode=ruleset)) in
        O(tables) instead of the module's own table; its count is the sum of every rule there that has a counter
        before its drop verdict.
    type: str
    choices: [raw, conntrack, ruleset]
  tables:
    description:
      - With O(mode=ruleset), the ruleset's tables as C(FAMILY NAME) (netfilter_drop's
        RV(xdplab.testbed.netfilter_drop#module:tables)).
    type: list
    elements: str
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
cpu_window:
  description:
    - "With O(cpu_window_cpus): two M(xdplab.testbed.cpu_usage) snapshots of those CPUs (C(cpus)), C(start) taken just
      after the window's first counter read and C(end) just after its last. Pass them as cpu_usage's
      O(xdplab.testbed.cpu_usage#module:since) and O(xdplab.testbed.cpu_usage#module:until)."
  returned: when O(cpu_window_cpus) is not empty
  type: dict
  sample: {cpus: [1], start: {version: 1, time: 6940.51}, end: {version: 1, time: 6942.52}}
measurement:
  description:
    - The one measurement shape (doc fragment xdplab.testbed.measurement, in the notes; docs/ARCHITECTURE.md).
    - "C(source) is C({kind: netfilter_rule, at: dut, backend, mode, table, interface}); C(per_cpu) and C(per_rxq)
      are RV(per_cpu) and RV(per_rxq); C(details) has C(bytes_per_second) and C(conntrack_count)."
  returned: always
  type: dict
  sample:
    pps: 1251234.5
    packets: 3753703
    ns_per_packet: 799.2
    per_cpu: [{cpu: 1, pps: 1251300.0, dropped_pps: 0.0, time_squeeze: 120}]
    per_rxq: [{queue: 0, pps: 1251300.0, counter: rx_queue_0_xdp_packets}]
    samples: [{t: 1.0, seconds: 1.0, packets: 1251234, pps: 1251234.0}]
    spread: {min_pps: 1251234.0, max_pps: 1251234.0, stdev_pps: 0.0, cv: 0.0}
    queue_spread: 1.0
    imbalance: null
    window: {start: 18342.501, end: 18345.502, seconds: 3.001, clock: CLOCK_MONOTONIC}
    source: {kind: netfilter_rule, at: dut, backend: nftables, mode: raw, table: xdplab, interface: dut0}
    details: {bytes_per_second: 57556787.0, conntrack_count: null}
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
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement
from ansible_collections.xdplab.testbed.plugins.module_utils import _netfilter as netfilter

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

    def __init__(self, module, clock=None, sleep=None):
        self.module = module
        self.p = module.params
        self.clock = clock or time.monotonic
        self.result = {"changed": False, "backend": self.p["backend"], "per_rxq": [], "per_cpu": [],
                       "conntrack_count": None}
        try:
            self.sampler = measurement.Sampler.from_params(self.p, clock=self.clock, sleep=sleep or time.sleep)
        except measurement.SamplingError as exc:
            self.fail(str(exc))
        # what is counted: the module's own table (netfilter_drop raw/conntrack) or a user's ruleset's tables (an
        # nftables ruleset whatever backend says)
        self.what = self.p["table"]
        if self.p["mode"] == netfilter.RULESET_MODE:
            if not self.p["tables"]:
                self.fail("mode ruleset reads a user's nftables ruleset: give its tables (FAMILY NAME each)")
            self.result["backend"] = "nftables"
            self.backend = netfilter.NftRuleset(module.run_command, netfilter.backend_for(module, "nftables").nft)
            self.what = list(self.p["tables"])
        else:
            self.backend = netfilter.backend_for(module, self.p["backend"], self.p["iptables_binary"])

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def read(self):
        t0 = self.clock()
        packets, nbytes, mode, iif = self.backend.counters(self.what)
        t1 = self.clock()
        return (t0 + t1) / 2, packets, nbytes, mode, iif

    def ethtool_read(self, interface):
        if not self.p["ethtool"] or not interface:
            return None
        binary = self.module.get_bin_path("ethtool")
        if not binary:
            self.fail("ethtool is not installed on the target; install it (apt-get install ethtool) or set ethtool: false")
        try:
            return self.clock(), ethtool.stats(self.module.run_command, interface, ethtool=binary)
        except ethtool.EthtoolError as exc:
            self.module.warn(f"ethtool counters unavailable: {exc}")
            return None

    def run(self):
        before = {}

        def before_window():
            before["eth"] = self.ethtool_read(interface)
            before["soft"] = netfilter.parse_softnet_stat(read_file(SOFTNET))

        try:
            first = self.read()
            mode, iif = first[3], first[4]
            if self.p["mode"] and mode and self.p["mode"] != mode:
                self.fail(f"the {self.p['backend']} rule set {self.p['table']} is in {mode} mode, not {self.p['mode']}; "
                          f"put it in place with netfilter_drop mode: {self.p['mode']}")
            mode = mode or self.p["mode"]
            interface = self.p["interface"] or iif
            self.result.update(mode=mode, interface=interface)
            reads = [r for _t, r in self.sampler.run(self.read, before_window=before_window)]
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
        start, end = reads[0][0], reads[-1][0]
        seconds = end - start
        packets = reads[-1][1] - reads[0][1]
        window = measurement.window_of(start, end)
        samples = measurement.samples_from_counts([(r[0], r) for r in reads], lambda r: r[1])
        self.result.update(
            packets=packets,
            seconds=round(seconds, 6),
            pps=packets / seconds,
            bytes_per_second=(reads[-1][2] - reads[0][2]) / seconds,
            window={"start": start, "end": end},
            samples=samples,
        )
        self.result["per_cpu"] = [
            {"cpu": cpu, "pps": d["processed"] / seconds, "dropped_pps": d["dropped"] / seconds,
             "time_squeeze": d["time_squeeze"]}
            for cpu, d in sorted(netfilter.softnet_delta(before["soft"], soft1).items()) if d["processed"]
        ]
        eth0 = before.get("eth")
        if eth0 and eth1:
            self.result["per_rxq"] = per_rxq_rates(eth0[1], eth1[1], eth1[0] - eth0[0])
        if self.sampler.cpu_window is not None:
            self.result["cpu_window"] = self.sampler.cpu_window
        table = ", ".join(self.what) if isinstance(self.what, list) else self.what
        source = {"kind": "netfilter_rule", "at": measurement.AT_DUT, "backend": self.result["backend"], "mode": mode,
                  "table": table, "interface": interface}
        self.result["measurement"] = measurement.measurement(
            self.result["pps"], window, source, packets=packets, per_cpu=self.result["per_cpu"],
            per_rxq=self.result["per_rxq"], samples=samples,
            details={"bytes_per_second": self.result["bytes_per_second"],
                     "conntrack_count": self.result["conntrack_count"]},
        )
        return self.result


def argument_spec():
    return dict(
        measurement.SAMPLING_ARGUMENT_SPEC,
        **measurement.CPU_WINDOW_ARGUMENT_SPEC,
        backend={"type": "str", "choices": list(netfilter.BACKENDS), "default": "nftables"},
        mode={"type": "str", "choices": [*netfilter.MODES, netfilter.RULESET_MODE]},
        tables={"type": "list", "elements": "str"},
        table={"type": "str", "default": "xdplab"},
        iptables_binary={"type": "str", "default": "iptables"},
        interface={"type": "str"},
        ethtool={"type": "bool", "default": True},
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**NetfilterStats(module).run())


if __name__ == "__main__":
    main()
