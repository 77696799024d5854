#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ethtool_stats
short_description: Per-second rates of the ethtool -S counters of several devices (what ethtool_stats.pl shows)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads C(ethtool -S) of every device in O(devices), waits O(interval) seconds, reads them again, and returns
    the per-second rate of each counter, like the script C(ethtool_stats.pl) of the XDP paper's lab notes. The reads
    follow the collection's one sampler (O(warmup), then rounds on an absolute schedule on CLOCK_MONOTONIC).
  - Each device's rate is its counter delta over the time between its own two reads on the monotonic clock
    (C(time.monotonic()), CLOCK_MONOTONIC), not over the nominal interval.
  - With O(samples) > 1 it takes O(samples) consecutive intervals and returns the average over the whole window
    (total delta over total time) and every sample.
  - With O(format_lines=true) it also returns the script's text lines, padded exactly like it (see RV(lines)).
  - A counter that went down between two reads (driver reset) counts from zero.
  - RV(measurement) is the one measurement shape (doc fragment xdplab.testbed.measurement), of the counter
    O(pps_counter); its C(source) is C(kind=ethtool), C(at=dut), with the counter and the devices.
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
  - xdplab.testbed.sampling
  - xdplab.testbed.sampling.cpu_window
  - xdplab.testbed.measurement
options:
  devices:
    description: Interfaces to read, in the module's network namespace (one or more).
    type: list
    elements: str
    required: true
  samples:
    default: 1
  pps_counter:
    description:
      - The counter whose rate is RV(measurement)'s C(pps), summed over O(devices). A counter name (C(rx_packets)),
        or a name with C({queue}) for a per-queue counter (C(rx_queue_{queue}_xdp_drops)), summed over the queues
        with one C(per_rxq) entry per device and queue.
      - Default the first of C(rx_queue_{queue}_packets), C(rx{queue}_packets), C(rx_queue_{queue}_xdp_packets)
        (on veth, every frame its NAPI poll handled), C(rx_packets) that the first device has.
      - Read from the raw counters, whatever O(include), O(exclude) and O(changed_only) leave in RV(rates).
    type: str
  include:
    description: Keep only counters matching at least one of these regular expressions (Python C(re.search)).
    type: list
    elements: str
    default: []
  exclude:
    description: Drop counters matching any of these regular expressions.
    type: list
    elements: str
    default: []
  changed_only:
    description: Leave out counters that did not change in the window (the script's default; C(--all) is false).
    type: bool
    default: true
  format_lines:
    description: Also return the script's text lines in RV(lines) (for the averages) and per sample.
    type: bool
    default: false
  line_style:
    description:
      - Column widths of RV(lines). V(pl) is the script as published, C(printf) widths 12 and 15 for the two numbers;
        V(seed002) is the older layout seen in the lab notes of seeds/002, widths 11 and 12.
    type: str
    choices: [pl, seed002]
    default: pl
  ethtool:
    description: Path or name of the ethtool binary.
    type: str
    default: ethtool
requirements:
  - ethtool on the target
seealso:
  - module: xdplab.testbed.xdp_stats
notes:
  - Rates are floats; RV(lines) rounds them like the script (C(%.0f)).
"""

EXAMPLES = r"""
- name: Counters of both DUT ports that changed during 3 seconds, as ethtool_stats.pl prints them
  xdplab.testbed.ethtool_stats:
    devices: [mlx5p1, mlx5p2]
    interval: 1
    samples: 3
    format_lines: true
  register: nic

- name: Show the lines
  ansible.builtin.debug:
    var: nic.lines

- name: Only the XDP drop counters of the veth end, no matter whether they changed
  xdplab.testbed.ethtool_stats:
    devices: [veth-dut0]
    include: ['^rx_queue_\d+_xdp_drops$']
    changed_only: false
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
    - The one measurement shape (doc fragment xdplab.testbed.measurement, in the notes; docs/ARCHITECTURE.md), of
      the counter O(pps_counter) summed over O(devices). C(per_cpu) is empty (ethtool counters are not per CPU).
    - "C(source) is C({kind: ethtool, at: dut, counter, devices}); C(per_rxq) entries carry C(device) and C(counter);
      C(details.per_device) the rate of each device. Each round of reads is timed at the mean of its devices' read
      midpoints."
  returned: always
  type: dict
  sample:
    pps: 22528.0
    packets: 22528
    ns_per_packet: 44389.2
    per_cpu: []
    per_rxq: [{queue: 1, pps: 22528.0, device: veth-dut0, counter: rx_queue_1_xdp_packets}]
    samples: [{t: 1.0, seconds: 1.0, packets: 22528, pps: 22528.0}]
    spread: {min_pps: 22528.0, max_pps: 22528.0, stdev_pps: 0.0, cv: 0.0}
    queue_spread: 1.0
    imbalance: null
    window: {start: 18342.501, end: 18343.501, seconds: 1.0, clock: CLOCK_MONOTONIC}
    source: {kind: ethtool, at: dut, counter: "rx_queue_{queue}_xdp_packets", devices: [veth-dut0]}
    details: {per_device: {veth-dut0: 22528.0}}
rates:
  description: Average per-second rate of each counter over the whole window, per device.
  returned: always
  type: dict
  sample: {mlx5p1: {rx_vport_unicast_packets: 31064392.4, rx_xdp_drop: 31064390.0}}
seconds:
  description: Elapsed monotonic seconds between each device's first and last read.
  returned: always
  type: dict
  sample: {mlx5p1: 3.0012}
window:
  description: First and last read of all devices on the host's monotonic clock (CLOCK_MONOTONIC, seconds).
  returned: always
  type: dict
  contains:
    start:
      description: Monotonic time of the first read.
      type: float
    end:
      description: Monotonic time of the last read.
      type: float
  sample: {start: 18342.501, end: 18345.502}
samples:
  description: Per-sample rates; C(t) is the end of the sample relative to the window start.
  returned: always
  type: list
  elements: dict
  sample: [{t: 1.0, seconds: {mlx5p1: 1.0003}, rates: {mlx5p1: {rx_xdp_drop: 31064392.0}}, lines: []}]
lines:
  description: The script's lines for RV(rates) (empty unless O(format_lines=true)); devices in O(devices) order,
    counters sorted by name.
  returned: always
  type: list
  elements: str
  sample: ["Ethtool(mlx5p1  ) stat:     31064392 (     31,064,392) <= rx_vport_unicast_packets /sec"]
header:
  description: The script's header line (C(Show adapter DEV.. statistics (ONLY that changed!\))).
  returned: always
  type: str
  sample: Show adapter mlx5p1 mlx5p2 statistics (ONLY that changed!)
devices:
  description: The devices read, in order.
  returned: always
  type: list
  elements: str
  sample: [mlx5p1, mlx5p2]
"""

import re
from time import monotonic, sleep

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement

#: RV(measurement)'s counter when pps_counter is not given: the first of these the first device has
DEFAULT_PPS_COUNTERS = ("rx_queue_{queue}_packets", "rx{queue}_packets", "rx_queue_{queue}_xdp_packets", "rx_packets")


def counter_matcher(pattern):
    """{name -> queue or None} for the counters ``pattern`` names in a snapshot (``{queue}``: a queue number)."""
    if "{queue}" not in pattern:
        return lambda stats: {pattern: None} if pattern in stats else {}
    head, _sep, tail = pattern.partition("{queue}")
    rx = re.compile("^" + re.escape(head) + r"(\d+)" + re.escape(tail) + "$")
    return lambda stats: {name: int(m.group(1)) for name, m in ((n, rx.match(n)) for n in stats) if m}


def _monotonic():
    """time.monotonic, looked up at call time so tests can replace the module's monotonic."""
    return monotonic()


def _sleep(seconds):
    """time.sleep, looked up at call time so tests can replace the module's sleep."""
    sleep(seconds)


class EthtoolStats:
    """Does the work; main() only wires it."""

    def __init__(self, module, clock=None, wait=None):
        self.module = module
        self.p = module.params
        self.clock = clock or _monotonic
        self.sleep = wait or _sleep
        self.devices = list(dict.fromkeys(self.p["devices"]))
        self.result = {"changed": False, "devices": self.devices}

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def validate(self):
        if not self.devices:
            self.fail("devices must name at least one interface")
        bad = [d for d in self.devices if not re.match(r"^[A-Za-z0-9_.:@+-]{1,15}$", str(d))]
        if bad:
            self.fail(f"invalid interface name(s) {bad}: at most 15 characters, letters, digits and _.:@+-")
        try:
            self.sampler = measurement.Sampler.from_params(self.p, clock=self.clock, sleep=self.sleep)
        except measurement.SamplingError as exc:
            self.fail(str(exc))
        for key in ("include", "exclude"):
            for pattern in self.p[key]:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    self.fail(f"{key}: {pattern!r} is not a valid regular expression ({exc})")

    def read(self, device):
        """(monotonic midpoint of the read, counters)."""
        t0 = self.clock()
        try:
            stats = ethtool.stats(self.module.run_command, device, ethtool=self.p["ethtool"])
        except ethtool.EthtoolError as exc:
            self.fail(f"cannot read the counters of {device}: {exc}; does the interface exist in this network "
                      f"namespace and does its driver report statistics (ethtool -i {device}: supports-statistics)?")
        t1 = self.clock()
        return (t0 + t1) / 2.0, stats

    def read_all(self):
        return {d: self.read(d) for d in self.devices}

    def lines(self, rates):
        if not self.p["format_lines"]:
            return []
        return ethtool.format_stats_lines(rates, style=self.p["line_style"], devices=self.devices)

    def pps_counter(self, first_round):
        if self.p["pps_counter"]:
            pattern = self.p["pps_counter"]
            if not any(counter_matcher(pattern)(first_round[d][1]) for d in self.devices):
                self.fail(f"pps_counter {pattern!r} names no counter of {', '.join(self.devices)} (ethtool -S); "
                          f"name one of theirs, with {{queue}} for a per-queue counter")
            return pattern
        stats = first_round[self.devices[0]][1]
        for pattern in DEFAULT_PPS_COUNTERS:
            if counter_matcher(pattern)(stats):
                return pattern
        return None

    def measure(self, rounds, pattern):
        """RV(measurement) of ``pattern`` summed over the devices, from the rounds of reads."""
        match = counter_matcher(pattern) if pattern else (lambda stats: {})
        times = [sum(r[d][0] for d in self.devices) / len(self.devices) for r in rounds]
        per_queue, per_interval = {}, []
        for prev, cur in zip(rounds, rounds[1:]):
            packets = 0
            for d in self.devices:
                for name, queue in match(cur[d][1]).items():
                    before, now = prev[d][1].get(name, 0), cur[d][1][name]
                    delta = now - before if now >= before else now  # a reset counts from zero
                    key = (d, queue, name)
                    per_queue[key] = per_queue.get(key, 0) + delta
                    packets += delta
            per_interval.append(packets)
        window = measurement.window_of(times[0], times[-1])
        seconds = times[-1] - times[0]
        samples = [{"t": round(tb - times[0], 6), "seconds": round(tb - ta, 6), "packets": n, "pps": n / (tb - ta)}
                   for ta, tb, n in zip(times, times[1:], per_interval)]
        per_rxq = [{"queue": queue, "pps": n / seconds, "device": d, "counter": name}
                   for (d, queue, name), n in sorted(per_queue.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))
                   if queue is not None]
        per_device = {d: sum(n for (dev, _q, _name), n in per_queue.items() if dev == d) / seconds for d in self.devices}
        total = sum(per_interval)
        return measurement.measurement(
            total / seconds, window, {"kind": "ethtool", "at": measurement.AT_DUT, "counter": pattern,
                                      "devices": self.devices},
            packets=total, per_rxq=per_rxq, samples=samples, details={"per_device": per_device})

    def run(self):
        self.validate()
        if not self.module.get_bin_path(self.p["ethtool"]) and "/" not in self.p["ethtool"]:
            self.fail(f"{self.p['ethtool']} not found on the target: install the Debian package ethtool")
        opts = {"changed_only": self.p["changed_only"], "include": self.p["include"], "exclude": self.p["exclude"]}
        rounds = [r for _t, r in self.sampler.run(self.read_all)]
        if self.sampler.cpu_window is not None:
            self.result["cpu_window"] = self.sampler.cpu_window

        samples = []
        for prev, cur in zip(rounds, rounds[1:]):
            rates, seconds = ethtool.device_rates(
                {d: (prev[d][0], prev[d][1], cur[d][0], cur[d][1]) for d in self.devices}, **opts)
            samples.append({"t": max(cur[d][0] for d in self.devices) - rounds[0][self.devices[0]][0],
                            "seconds": seconds, "rates": rates, "lines": self.lines(rates)})
        first, last = rounds[0], rounds[-1]
        # average over the window: sum of the per-sample deltas (each reset-corrected) over the total time
        totals = {}
        for d in self.devices:
            acc = {}
            for prev, cur in zip(rounds, rounds[1:]):
                for k, v in ethtool.counter_rates(prev[d][1], cur[d][1], 1.0, changed_only=False).items():
                    acc[k] = acc.get(k, 0.0) + v
            elapsed = last[d][0] - first[d][0]
            keep = ethtool.select_counters(list(acc), self.p["include"], self.p["exclude"])
            totals[d] = {k: acc[k] / elapsed for k in keep if acc[k] or not self.p["changed_only"]}
        self.result.update(
            rates=totals,
            seconds={d: last[d][0] - first[d][0] for d in self.devices},
            window={"start": min(first[d][0] for d in self.devices), "end": max(last[d][0] for d in self.devices)},
            samples=samples,
            lines=self.lines(totals),
            header=ethtool.stats_header(self.devices),
        )
        self.result["measurement"] = self.measure(rounds, self.pps_counter(first))
        return self.result


def argument_spec():
    return dict(
        measurement.SAMPLING_ARGUMENT_SPEC,
        **measurement.CPU_WINDOW_ARGUMENT_SPEC,
        devices=dict(type="list", elements="str", required=True),
        samples=dict(type="int", default=1),
        pps_counter=dict(type="str"),
        include=dict(type="list", elements="str", default=[]),
        exclude=dict(type="list", elements="str", default=[]),
        changed_only=dict(type="bool", default=True),
        format_lines=dict(type="bool", default=False),
        line_style=dict(type="str", choices=list(ethtool.LINE_STYLES), default="pl"),
        ethtool=dict(type="str", default="ethtool"),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**EthtoolStats(module).run())


if __name__ == "__main__":
    main()
