#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xdp_stats
short_description: Measure packet rates per CPU and per RX queue of the XDP program on an interface
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - "With O(count=program): finds the XDP program attached to O(interface), follows its map ids to the map named
    O(map_name) (a per-CPU array keyed by RX queue, see Contract 1 of docs/ARCHITECTURE.md) and samples it with the
    one sampler of the collection (O(warmup), then O(samples) + 1 snapshots every O(interval) seconds on
    CLOCK_MONOTONIC). It returns what the kernel sample C(xdp_rxq_info) shows (packets per second per CPU, per RX
    queue, per queue and CPU) and a verdict on whether the load is spread evenly over the active queues and CPUs."
  - "With O(count=driver): reads the driver's own per-queue XDP counters from C(ethtool -S) instead (veth
    C(rx_queue_N_xdp_drops), mlx5 C(chN_xdp_drop); plugins/module_utils/_driver_counters.py knows which driver has
    which), so the program need not count (a bare C(return XDP_DROP) has no map and costs less per packet). The
    driver counts per RX queue only: RV(per_cpu) is empty and the verdict is on the queues alone. A driver without
    such counters fails with a message saying to use O(count=program)."
  - No bpffs pin is needed, so it works inside a network namespace (C(ip netns exec), the
    C(xdplab.testbed.netns) connection).
  - With O(ethtool=true) it also returns the per-second rates of the interface's C(ethtool -S) counters that
    changed over the same window.
  - RV(measurement) is the one measurement shape (doc fragment xdplab.testbed.measurement); its C(source) says
    C(kind) (C(program_map) or C(driver_counters)), C(at=dut) and C(count_mode).
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
  - xdplab.testbed.sampling
  - xdplab.testbed.sampling.cpu_window
  - xdplab.testbed.measurement
options:
  interface:
    description: Name of the interface with the XDP program, in the module's network namespace.
    type: str
    required: true
  count:
    description:
      - V(program) reads the counter map O(map_name) of the attached program (per CPU and per RX queue).
      - V(driver) reads the driver's per-queue XDP counters of action O(action) (C(ethtool -S)); the program needs
        no map. Drivers without per-queue XDP counters are refused.
    type: str
    choices: [program, driver]
    default: program
  action:
    description:
      - With O(count=driver), the XDP action whose driver counters are read (V(drop) counts XDP_DROP). veth has no
        XDP_PASS counter; V(pass) is derived there (frames handled less those dropped, sent back, redirected or lost).
    type: str
    choices: [drop, pass, tx, redirect]
    default: drop
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
    description: With O(count=program), the name of the counter map of the attached program.
    type: str
    default: rxq_stats
requirements:
  - libbpf.so.1 on the target, root
  - ethtool when O(ethtool=true) or O(count=driver)
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

- name: Count with the driver's own counters (veth rx_queue_N_xdp_drops) under a bare XDP_DROP program
  xdplab.testbed.xdp_stats:
    interface: dut0
    count: driver
    warmup: 2
    samples: 5
  register: bare

- name: The rate, whichever mode counted
  ansible.builtin.debug:
    msg: "{{ bare.measurement.pps | int }} pps counted by {{ bare.measurement.source.count_mode }}"
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
    - "C(source) is C({kind: program_map, at: dut, count_mode: program, interface, program, map, map_id}) or
      C({kind: driver_counters, at: dut, count_mode: driver, interface, driver, action, counter, program}), where
      C(counter) is the driver's per-queue counter (C({queue}) stands for the queue number)."
  returned: always
  type: dict
  sample:
    pps: 1000000.0
    packets: 3000000
    ns_per_packet: 1000.0
    per_cpu: [{cpu: 1, pps: 1000000.0}]
    per_rxq: [{queue: 0, pps: 1000000.0, cpus: [1]}]
    samples: [{t: 1.0, seconds: 1.0, packets: 1000000, pps: 1000000.0}]
    spread: {min_pps: 1000000.0, max_pps: 1000000.0, stdev_pps: 0.0, cv: 0.0}
    queue_spread: 1.0
    imbalance: {imbalanced: false, reason: "balanced: a single active CPU (CPU 1)"}
    window: {start: 18342.501, end: 18345.502, seconds: 3.001, clock: CLOCK_MONOTONIC}
    source: {kind: program_map, at: dut, count_mode: program, interface: dut0, program: xdp_bench_drop,
             map: rxq_stats, map_id: 31}
    details: {bytes_per_second: 64000000.0, errors_per_second: 0.0}
count_mode:
  description: Which counted, V(program) (the program's map) or V(driver) (the driver's per-queue XDP counters).
  returned: always
  type: str
  sample: program
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
  description: Bytes per second (frame length as the XDP program sees it); null with O(count=driver).
  returned: always
  type: float
  sample: 1535000000.0
errors_per_second:
  description: Frames per second too short for the program's touch mode; null with O(count=driver).
  returned: always
  type: float
  sample: 0.0
per_cpu:
  description: Packets per second per CPU (CPUs with traffic only); empty with O(count=driver).
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
  description: Packets per second per (RX queue, CPU) pair, non-zero pairs only; empty with O(count=driver).
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
  description: The attached program (C(map_id) null with O(count=driver)).
  returned: always
  type: dict
  sample: {id: 139, name: xdp_bench_drop, tag: 78fa086e301da3eb, mode: native, map_id: 31}
driver:
  description: With O(count=driver), the driver whose counters were read (C(ethtool -i)); else null.
  returned: always
  type: str
  sample: veth
interface:
  description: Interface name.
  returned: always
  type: str
  sample: dut0
"""


import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _driver_counters as driver_counters
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement
from ansible_collections.xdplab.testbed.plugins.module_utils import _xdp_counters as xdp_counters

COUNT_MODES = ("program", "driver")


class XdpStats:
    """Does the work; main() only wires it."""

    def __init__(self, module, clock=None, sleep=None):
        self.module = module
        self.p = module.params
        self.interface = self.p["interface"]
        self.clock = clock = clock or time.monotonic
        sleep = sleep or time.sleep
        self.result = {"changed": False, "interface": self.interface, "count_mode": self.p["count"], "driver": None}
        try:
            self.sampler = measurement.Sampler.from_params(self.p, clock=clock, sleep=sleep)
        except measurement.SamplingError as exc:
            self.fail(str(exc))
        if self.p["imbalance_threshold"] <= 1:
            self.fail(f"imbalance_threshold must be greater than 1, got {self.p['imbalance_threshold']}")

    def fail(self, msg, **kw):
        self.module.fail_json(msg=msg, **dict(self.result, **kw))

    # ------------------------------------------------------------------------------------------ what is attached

    def find_program(self):
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
        self.result["program"] = {"id": prog_id, "name": info["name"], "tag": info["tag"], "mode": mode, "map_id": None}
        return info

    def find_map(self, info):
        maps = [libbpf.map_info(m) for m in info["map_ids"]]
        found = [m for m in maps if m["name"] == self.p["map_name"]]
        if not found:
            self.fail(
                f"attached program {info['name']} (id {info['id']}) on {self.interface} has no {self.p['map_name']} "
                f"map (its maps: {', '.join(m['name'] for m in maps) or 'none'}); attach a program of "
                f"xdp_bench.bpf.o with xdplab.testbed.xdp_program, or count with the driver's counters (count: driver)"
            )
        stats_map = found[0]
        if stats_map["type"] != libbpf.BPF_MAP_TYPE_PERCPU_ARRAY or stats_map["value_size"] < 8:
            self.fail(f"map {stats_map['name']} (id {stats_map['id']}) is {stats_map['type_name']}, not percpu_array")
        self.result["program"]["map_id"] = stats_map["id"]
        return stats_map["id"]

    def ethtool_binary(self, why):
        binary = self.module.get_bin_path("ethtool")
        if not binary:
            self.fail(f"ethtool is not installed on the target; install it (apt-get install ethtool) or {why}")
        return binary

    def ethtool_read(self, binary):
        """(monotonic midpoint of the read, ethtool -S counters)."""
        t0 = self.clock()
        stats = ethtool.stats(self.module.run_command, self.interface, ethtool=binary)
        return (t0 + self.clock()) / 2.0, stats

    def driver_name(self, binary):
        try:
            return ethtool.driver_info(self.module.run_command, self.interface, ethtool=binary).get("driver")
        except ethtool.EthtoolError as exc:
            self.fail(f"ethtool -i {self.interface} failed ({exc}): count: driver needs the driver's name; "
                      f"use count: program")

    # ------------------------------------------------------------------------------------------ the two count modes

    def count_program(self, info):
        map_id = self.find_map(info)
        binary = self.ethtool_binary("set ethtool: false") if self.p["ethtool"] else None
        eth = []

        def ethtool_snapshot():
            if binary is None:
                return
            try:
                eth.append(self.ethtool_read(binary))
            except ethtool.EthtoolError as exc:
                self.module.warn(f"ethtool counters unavailable: {exc}")

        def read():
            t0 = self.clock()
            snap = xdp_counters.decode_rxq_stats(libbpf.read_percpu_array(map_id))
            return (t0 + self.clock()) / 2.0, snap

        try:
            snaps = [snap for _t, snap in self.sampler.run(read, before_window=ethtool_snapshot)]
        except libbpf.LibbpfError as exc:
            self.fail(f"reading XDP counters of {self.interface} failed: {exc}")
        if eth:
            ethtool_snapshot()
        summary = xdp_counters.summarize(snaps, self.p["imbalance_threshold"])
        source = {"kind": "program_map", "at": measurement.AT_DUT, "count_mode": "program", "interface": self.interface,
                  "program": info["name"], "map": self.p["map_name"], "map_id": map_id}
        return snaps, summary, source, eth

    def count_driver(self, info):
        binary = self.ethtool_binary("use count: program")
        driver = self.driver_name(binary)
        self.result["driver"] = driver
        names = driver_counters.xdp_counter_names(driver)
        if names is None:
            self.fail(f"driver {driver or 'unknown'} of {self.interface} has no per-queue XDP counters in ethtool -S; "
                      f"use count: program (with a program of xdp_bench.bpf.o that counts in its rxq_stats map)")

        def read():
            try:
                return self.ethtool_read(binary)
            except ethtool.EthtoolError as exc:
                self.fail(f"reading the driver counters of {self.interface} failed: {exc}; use count: program")

        raw = [snap for _t, snap in self.sampler.run(read)]
        try:
            snaps = [(t, driver_counters.per_queue_xdp_packets(stats, driver, action=self.p["action"])) for t, stats in raw]
        except (KeyError, ValueError) as exc:
            self.fail(f"driver {driver} of {self.interface}: {exc}; use count: program")
        summary = xdp_counters.summarize_queues(snaps, self.p["imbalance_threshold"])
        source = {"kind": "driver_counters", "at": measurement.AT_DUT, "count_mode": "driver", "interface": self.interface,
                  "driver": driver, "action": self.p["action"], "counter": names[self.p["action"]], "program": info["name"]}
        return snaps, summary, source, (raw if self.p["ethtool"] else [])

    def run(self):
        info = self.find_program()
        count = self.count_program if self.p["count"] == "program" else self.count_driver
        snaps, summary, source, eth = count(info)
        self.result.update(summary)
        window = measurement.window_of(snaps[0][0], snaps[-1][0])
        self.result["window"] = {"start": window["start"], "end": window["end"]}
        if self.sampler.cpu_window is not None:
            self.result["cpu_window"] = self.sampler.cpu_window
        self.result["ethtool"] = {}
        if len(eth) >= 2:
            self.result["ethtool"] = ethtool.counter_rates(eth[0][1], eth[-1][1], eth[-1][0] - eth[0][0])
        self.result["measurement"] = measurement.measurement(
            summary["total_pps"],
            window,
            source,
            packets=summary["packets"],
            per_cpu=summary["per_cpu"],
            per_rxq=summary["per_rxq"],
            samples=summary["samples"],
            imbalance=summary["imbalance"],
            details={"bytes_per_second": summary["bytes_per_second"], "errors_per_second": summary["errors_per_second"],
                     "rxq_cpu": summary["rxq_cpu"]},
        )
        return self.result


def argument_spec():
    return dict(
        measurement.SAMPLING_ARGUMENT_SPEC,
        **measurement.CPU_WINDOW_ARGUMENT_SPEC,
        interface={"type": "str", "required": True},
        count={"type": "str", "choices": list(COUNT_MODES), "default": "program"},
        action={"type": "str", "choices": list(driver_counters.XDP_ACTIONS), "default": "drop"},
        imbalance_threshold={"type": "float", "default": 1.25},
        ethtool={"type": "bool", "default": True},
        map_name={"type": "str", "default": "rxq_stats"},
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**XdpStats(module).run())


if __name__ == "__main__":
    main()
