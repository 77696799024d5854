#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xdp_stats
short_description: Measure packet rates per CPU and per RX queue from the attached XDP program
version_added: 0.1.0
author:
  - xdplab.testbed developers
description:
  - Finds the XDP program attached to O(interface), follows its map ids to the map named C(rxq_stats)
    (a per-CPU array keyed by RX queue, see Contract 1 of docs/ARCHITECTURE.md) and samples it O(samples)
    times every O(interval) seconds after O(warmup) seconds. Timestamps come from C(time.monotonic()).
  - Returns what the kernel sample C(xdp_rxq_info) shows (packets per second per CPU, per RX queue, per
    queue and CPU) and a verdict on whether the load is spread evenly over the active queues and CPUs.
  - No bpffs pin is needed, so it works inside a network namespace (C(ip netns exec), the
    C(xdplab.testbed.netns) connection).
  - With O(ethtool=true) it also returns the per-second rates of the interface's C(ethtool -S) counters that
    changed over the same window.
attributes:
  check_mode:
    support: full
    description: The module only reads counters; it runs unchanged in check mode and never reports a change.
  diff_mode:
    support: none
options:
  interface:
    description: Name of the interface with the XDP program, in the module's network namespace.
    type: str
    required: true
  interval:
    description: Seconds per sample.
    type: float
    default: 1.0
  samples:
    description: Number of samples.
    type: int
    default: 3
  warmup:
    description: Seconds to wait before the first snapshot (lets the traffic generator ramp up).
    type: float
    default: 0.0
  imbalance_threshold:
    description:
      - Flag an imbalance when the busiest active CPU or RX queue carries more than this multiple of the mean
        of the active ones. A CPU or queue is active when it carries at least 1% of the busiest.
    type: float
    default: 1.25
  ethtool:
    description: Also return per-second rates of the C(ethtool -S) counters that changed.
    type: bool
    default: true
  map_name:
    description: Name of the counter map of the attached program.
    type: str
    default: rxq_stats
requirements:
  - libbpf.so.1 on the target, root
  - ethtool when O(ethtool=true)
seealso:
  - module: xdplab.testbed.xdp_program
"""

EXAMPLES = r"""
- name: Measure the DUT for 5 seconds after 2 seconds of warm-up
  xdplab.testbed.xdp_stats:
    interface: dut0
    warmup: 2
    interval: 1
    samples: 5
  register: dut

- name: Fail when the flows do not spread evenly
  ansible.builtin.assert:
    that: not dut.imbalance.imbalanced
    fail_msg: "{{ dut.imbalance.reason }}"
"""

RETURN = r"""
total_pps:
  description: Packets per second over the whole window, all queues and CPUs.
  returned: always
  type: float
  sample: 25583300.0
ns_per_packet:
  description: 1e9 / total_pps (null without traffic).
  returned: always
  type: float
  sample: 39.09
packets:
  description: Packets counted in the window.
  returned: always
  type: int
  sample: 76749900
seconds:
  description: Length of the measurement window (monotonic clock).
  returned: always
  type: float
  sample: 3.0001
window:
  description:
    - Start and end of the measurement window on the host's monotonic clock (CLOCK_MONOTONIC, seconds),
      so other measurements of the same host (a generator's per-second records) can be cut to the same window.
  returned: always
  type: dict
  sample: {start: 18342.501, end: 18345.502}
bytes_per_second:
  description: Bytes per second (frame length as the XDP program sees it).
  returned: always
  type: float
  sample: 1535000000.0
errors_per_second:
  description: Frames per second too short for the program's touch mode.
  returned: always
  type: float
  sample: 0.0
per_cpu:
  description: Packets per second per CPU (CPUs with traffic only).
  returned: always
  type: list
  elements: dict
  sample: [{cpu: 0, pps: 25583300.0}]
per_rxq:
  description: Packets per second per RX queue and the CPUs that processed it (queue 64 counts queues >= 64).
  returned: always
  type: list
  elements: dict
  sample: [{queue: 4, pps: 25583300.0, cpus: [0]}]
rxq_cpu:
  description: Packets per second per (RX queue, CPU) pair, non-zero pairs only.
  returned: always
  type: list
  elements: dict
  sample: [{queue: 4, cpu: 0, pps: 25583300.0}]
samples:
  description: Per-sample totals; C(t) is the end of the sample relative to the first snapshot.
  returned: always
  type: list
  elements: dict
  sample: [{t: 1.0, seconds: 1.0, packets: 25583300, pps: 25583300.0}]
imbalance:
  description: Verdict on how evenly the active CPUs and RX queues share the load.
  returned: always
  type: dict
  contains:
    imbalanced:
      description: True when the busiest active CPU or queue exceeds O(imbalance_threshold) x the mean.
      type: bool
    max_over_mean:
      description: Busiest / mean of the worse dimension (CPUs or queues).
      type: float
    min_over_mean:
      description: Least busy / mean of the same dimension.
      type: float
    cpu_max_over_mean:
      description: Busiest / mean over the active CPUs.
      type: float
    queue_max_over_mean:
      description: Busiest / mean over the active RX queues.
      type: float
    busiest_queue:
      description: RX queue with the most packets.
      type: int
    busiest_cpu:
      description: CPU with the most packets.
      type: int
    active_queues:
      description: RX queues carrying at least 1% of the busiest.
      type: list
      elements: int
    active_cpus:
      description: CPUs carrying at least 1% of the busiest.
      type: list
      elements: int
    threshold:
      description: The threshold used.
      type: float
    reason:
      description: One sentence for humans.
      type: str
  sample:
    imbalanced: true
    max_over_mean: 1.7144
    busiest_cpu: 2
    busiest_queue: 2
    reason: "imbalanced: CPU 2 handles 24,313,750 pps, 1.71x the mean of the 6 active CPUs (14,182,623 pps)..."
ethtool:
  description: Per-second rates of the C(ethtool -S) counters that changed in the window (empty if disabled).
  returned: always
  type: dict
  sample: {rx_queue_1_xdp_packets: 1000.0, rx_queue_1_xdp_drops: 1000.0}
program:
  description: The attached program that was read.
  returned: always
  type: dict
  sample: {id: 139, name: xdp_bench_drop, tag: 78fa086e301da3eb, mode: native, map_id: 31}
interface:
  description: Interface name.
  returned: always
  type: str
  sample: dut0
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool, _libbpf as libbpf, _xdp_counters as xdp_counters


class XdpStats:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.interface = self.p["interface"]
        self.result = {"changed": False, "interface": self.interface}
        for key, low in (("interval", 0.0), ("warmup", -1e-9)):
            if self.p[key] <= low:
                self.fail(f"{key} must be {'positive' if key == 'interval' else 'zero or more'}, got {self.p[key]}")
        if self.p["samples"] < 1:
            self.fail(f"samples must be at least 1, got {self.p['samples']}")
        if self.p["imbalance_threshold"] <= 1:
            self.fail(f"imbalance_threshold must be greater than 1, got {self.p['imbalance_threshold']}")

    def fail(self, msg, **kw):
        self.module.fail_json(msg=msg, **dict(self.result, **kw))

    def find_map(self):
        try:
            ifindex = socket.if_nametoindex(self.interface)
        except OSError:
            names = ", ".join(n for _i, n in socket.if_nameindex())
            self.fail(
                f"interface {self.interface} does not exist in this network namespace; interfaces here: {names}"
            )
        prog_id, mode = libbpf.attached_program(ifindex)
        if not prog_id:
            self.fail(
                f"no XDP program attached on {self.interface}; attach one with xdplab.testbed.xdp_program "
                f"(object xdp_bench.bpf.o)"
            )
        info = libbpf.prog_info(prog_id)
        maps = [libbpf.map_info(m) for m in info["map_ids"]]
        found = [m for m in maps if m["name"] == self.p["map_name"]]
        if not found:
            self.fail(
                f"attached program {info['name']} (id {prog_id}) on {self.interface} has no {self.p['map_name']} "
                f"map (its maps: {', '.join(m['name'] for m in maps) or 'none'}); attach a program of "
                f"xdp_bench.bpf.o with xdplab.testbed.xdp_program"
            )
        stats_map = found[0]
        if stats_map["type"] != libbpf.BPF_MAP_TYPE_PERCPU_ARRAY or stats_map["value_size"] < 8:
            self.fail(f"map {stats_map['name']} (id {stats_map['id']}) is {stats_map['type_name']}, not percpu_array")
        self.result["program"] = {
            "id": prog_id,
            "name": info["name"],
            "tag": info["tag"],
            "mode": mode,
            "map_id": stats_map["id"],
        }
        return stats_map["id"]

    def snapshot(self, map_id):
        values = libbpf.read_percpu_array(map_id)
        return time.monotonic(), xdp_counters.decode_rxq_stats(values)

    def ethtool_snapshot(self):
        if not self.p["ethtool"]:
            return None
        binary = self.module.get_bin_path("ethtool")
        if not binary:
            self.fail("ethtool is not installed on the target; install it (apt-get install ethtool) or set ethtool: false")
        try:
            return time.monotonic(), ethtool.stats(self.module.run_command, self.interface, ethtool=binary)
        except ethtool.EthtoolError as exc:
            self.module.warn(f"ethtool counters unavailable: {exc}")
            self.p["ethtool"] = False
            return None

    def run(self):
        try:
            map_id = self.find_map()
            if self.p["warmup"] > 0:
                time.sleep(self.p["warmup"])
            eth0 = self.ethtool_snapshot()
            snaps = [self.snapshot(map_id)]
            start = snaps[0][0]
            for i in range(1, self.p["samples"] + 1):
                # sleep to an absolute schedule so the sampling does not drift
                delay = start + i * self.p["interval"] - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                snaps.append(self.snapshot(map_id))
            eth1 = self.ethtool_snapshot()
        except libbpf.LibbpfError as exc:
            self.fail(f"reading XDP counters of {self.interface} failed: {exc}")
        self.result.update(xdp_counters.summarize(snaps, self.p["imbalance_threshold"]))
        self.result["window"] = {"start": snaps[0][0], "end": snaps[-1][0]}
        self.result["ethtool"] = {}
        if eth0 and eth1:
            self.result["ethtool"] = ethtool.counter_rates(eth0[1], eth1[1], eth1[0] - eth0[0])
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "interval": {"type": "float", "default": 1.0},
            "samples": {"type": "int", "default": 3},
            "warmup": {"type": "float", "default": 0.0},
            "imbalance_threshold": {"type": "float", "default": 1.25},
            "ethtool": {"type": "bool", "default": True},
            "map_name": {"type": "str", "default": "rxq_stats"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**XdpStats(module).run())


if __name__ == "__main__":
    main()
