#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cpu_usage
short_description: Per-CPU busy, idle, softirq, irq, system, user time over an interval from /proc/stat
version_added: 0.2.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the cumulative per-CPU tick counters of C(/proc/stat) and returns the share of each kind of CPU time
    between two readings, computed as C(mpstat -P ALL) (sysstat 12) computes it, as data.
  - C(busy) is C(100 - idle - iowait). C(user) and C(nice) leave out guest time (the kernel counts it in both),
    which is reported in C(guest) and C(guest_nice) instead, as mpstat does.
  - "Two ways to use it: blocking, O(samples) x O(interval) seconds of sleeping, returning the average over the
    whole window plus each sample; or around another measurement: a first call with O(snapshot_only=true)
    returns RV(snapshot) (raw counters and the CLOCK_MONOTONIC time), a later call with O(since) set to that
    snapshot returns the usage between the two readings without sleeping."
  - /proc/stat is not namespaced, so the module gives the same answer inside a network namespace
    (C(ip netns exec), the C(xdplab.testbed.netns) connection).
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
options:
  cpus:
    description:
      - CPUs to report in RV(per_cpu). Default all online CPUs.
      - Every CPU must be online (C(/sys/devices/system/cpu/online)), else the module fails before measuring.
    type: list
    elements: int
  interval:
    description: Seconds per sample in blocking mode. Ignored with O(since) or O(snapshot_only).
    type: float
    default: 1.0
  samples:
    description: Number of samples in blocking mode.
    type: int
    default: 1
  snapshot_only:
    description: Only read the counters now and return them in RV(snapshot), for a later call with O(since).
    type: bool
    default: false
  since:
    description:
      - A RV(snapshot) returned earlier by this module with O(snapshot_only=true) on the same host. The usage is
        computed between that snapshot and now, without sleeping.
      - A snapshot from another boot (different C(boot_id), or C(btime) of /proc/stat) is refused.
    type: dict
notes:
  - The counters tick at RV(ticks_per_second) (USER_HZ, usually 100), so a window of one second has a
    resolution of 1% per CPU; use windows of several seconds for small differences.
requirements:
  - Linux /proc/stat
seealso:
  - module: xdplab.testbed.xdp_stats
  - module: xdplab.testbed.netfilter_stats
"""

EXAMPLES = r"""
- name: CPU counters before the measurement
  xdplab.testbed.cpu_usage:
    cpus: [1]
    snapshot_only: true
  register: cpu_before

- name: Measure the DUT (anything that takes a while)
  xdplab.testbed.xdp_stats:
    interface: dut0
    samples: 5

- name: CPU usage of CPU 1 while it was measured
  xdplab.testbed.cpu_usage:
    cpus: [1]
    since: "{{ cpu_before.snapshot }}"
  register: cpu

- name: Show it
  ansible.builtin.debug:
    msg: "CPU 1 busy {{ cpu.per_cpu[0].busy }} % ({{ cpu.per_cpu[0].softirq }} % softirq)"

- name: Blocking, like mpstat -P ALL 1 3
  xdplab.testbed.cpu_usage:
    interval: 1
    samples: 3
"""

RETURN = r"""
per_cpu:
  description:
    - Percentages per reported CPU over the whole window. C(busy) = 100 - C(idle) - C(iowait). C(ticks) is the
      number of USER_HZ ticks the CPU accounted in the window. Empty with O(snapshot_only).
  returned: always
  type: list
  elements: dict
  sample:
    - {cpu: 1, busy: 98.02, idle: 1.98, user: 0.0, nice: 0.0, system: 0.0, irq: 0.0, softirq: 98.02,
       iowait: 0.0, steal: 0.0, guest: 0.0, guest_nice: 0.0, ticks: 303}
all:
  description: The same percentages for the aggregate C(cpu) line (all online CPUs). Empty with O(snapshot_only).
  returned: always
  type: dict
  sample: {busy: 52.1, idle: 47.9, user: 2.3, nice: 0.0, system: 1.0, irq: 0.0, softirq: 48.8, iowait: 0.0,
           steal: 0.0, guest: 0.0, guest_nice: 0.0, ticks: 606}
window:
  description: Start and end of the window on the host's CLOCK_MONOTONIC (seconds), same clock as xdp_stats.
  returned: always
  type: dict
  sample: {start: 18342.501, end: 18345.502}
seconds:
  description: Length of the window (monotonic clock); 0 with O(snapshot_only).
  returned: always
  type: float
  sample: 3.0012
samples:
  description: Blocking mode with O(samples) > 1 only, each sample's window and per-CPU percentages.
  returned: when samples > 1 and not since/snapshot_only
  type: list
  elements: dict
  sample: [{t: 1.0, seconds: 1.0, per_cpu: [{cpu: 1, busy: 97.0}], all: {busy: 49.5}}]
snapshot:
  description:
    - Raw counters of this reading (the end of the window), to hand to a later call as O(since).
    - "Keys: C(version), C(time) (CLOCK_MONOTONIC), C(btime), C(boot_id), C(ticks_per_second), C(all) and
      C(cpus) (cpu number as a string -> the ten /proc/stat counters)."
  returned: always
  type: dict
  sample: {version: 1, time: 18345.502, btime: 1796056658, boot_id: 6b1f..., ticks_per_second: 100,
           all: [354879, 0, 131843, 900994, 3276, 0, 10001, 9857, 0, 0],
           cpus: {"0": [143448, 0, 68932, 480472, 220, 0, 7002, 5045, 0, 0]}}
ticks_per_second:
  description: USER_HZ, the unit of the /proc/stat counters (C(os.sysconf('SC_CLK_TCK'))).
  returned: always
  type: int
  sample: 100
cpus:
  description: The CPUs reported.
  returned: always
  type: list
  elements: int
  sample: [0, 1]
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, online_cpus


class CpuUsage:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "per_cpu": [], "all": {}, "ticks_per_second": cpustat.ticks_per_second()}
        if self.p["snapshot_only"] and self.p["since"] is not None:
            self.fail("snapshot_only and since exclude each other: take the snapshot first, then pass it as since")
        if self.p["interval"] <= 0:
            self.fail(f"interval must be positive, got {self.p['interval']}")
        if self.p["samples"] < 1:
            self.fail(f"samples must be at least 1, got {self.p['samples']}")

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def select_cpus(self, stat):
        try:
            online = online_cpus()
        except (OSError, CpuListError):
            online = sorted(stat["cpus"])
        online = [c for c in online if c in stat["cpus"]]
        wanted = self.p["cpus"]
        if wanted is None:
            return online
        bad = [c for c in wanted if c not in online]
        if bad:
            self.fail(f"CPU(s) {', '.join(map(str, bad))} not online here; online CPUs: {', '.join(map(str, online))}")
        return sorted(set(wanted))

    def read(self):
        stat, mono = cpustat.take()
        return {"all": stat["all"], "cpus": stat["cpus"], "btime": stat["btime"], "time": mono}

    def snapshot_of(self, reading):
        return cpustat.make_snapshot(reading, reading["time"], self.result["ticks_per_second"], cpustat.boot_id())

    @staticmethod
    def report(before, after, cpus):
        return cpustat.usage_between(before, after, cpus)

    def run(self):
        try:
            now = self.read()
            cpus = self.select_cpus(now)
            self.result["cpus"] = cpus
            if self.p["snapshot_only"]:
                self.result.update(window={"start": now["time"], "end": now["time"]}, seconds=0.0,
                                   snapshot=self.snapshot_of(now))
                return self.result
            if self.p["since"] is not None:
                before = cpustat.check_snapshot(self.p["since"])
                cpustat.same_boot(before, now["btime"], cpustat.boot_id())
                if before["time"] > now["time"]:
                    self.fail("since was taken after now on the monotonic clock: it comes from another host or boot")
                readings = [before, now]
            else:
                readings = [now]
                start = now["time"]
                for i in range(1, self.p["samples"] + 1):
                    delay = start + i * self.p["interval"] - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    readings.append(self.read())
                if self.p["samples"] > 1:
                    self.result["samples"] = []
                    for a, b in zip(readings, readings[1:]):
                        per_cpu, agg = self.report(a, b, cpus)
                        self.result["samples"].append({"t": round(b["time"] - start, 6),
                                                       "seconds": round(b["time"] - a["time"], 6),
                                                       "per_cpu": per_cpu, "all": agg})
            first, last = readings[0], readings[-1]
            self.result["per_cpu"], self.result["all"] = self.report(first, last, cpus)
            self.result["window"] = {"start": first["time"], "end": last["time"]}
            self.result["seconds"] = round(last["time"] - first["time"], 6)
            self.result["snapshot"] = self.snapshot_of(last)
        except cpustat.CpuStatError as exc:
            self.fail(str(exc))
        except OSError as exc:
            self.fail(f"reading CPU counters failed: {exc}")
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "cpus": {"type": "list", "elements": "int"},
            "interval": {"type": "float", "default": 1.0},
            "samples": {"type": "int", "default": 1},
            "snapshot_only": {"type": "bool", "default": False},
            "since": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**CpuUsage(module).run())


if __name__ == "__main__":
    main()
