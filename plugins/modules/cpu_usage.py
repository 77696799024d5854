#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cpu_usage
short_description: Per-CPU busy time from /proc/stat, the run time of the DUT's threads, BPF run time and foreign processes
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
  - "/proc/stat is tick-sampled: a CPU is charged a whole tick for whatever runs when the tick fires, so work that
    comes in short bursts between ticks is under-reported (up to 5x for a paced NAPI thread on a VM). Beside it the
    module reads precise sources and labels every number with its source (RV(sources)): the run time in
    nanoseconds of every thread that may run on the reported CPUs (C(/proc/<pid>/task/<tid>/schedstat),
    source C(schedstat)), split into the DUT's work (O(work_interfaces), O(work_pids), O(work_comms):
    RV(work)) and everything else (RV(foreign)); and the run time of BPF programs (O(bpf_interfaces),
    O(bpf_prog_ids): RV(bpf), source C(bpf_stats), with C(kernel.bpf_stats_enabled) on during the window)."
  - RV(busy) is the trial's DUT CPU figure from the most precise source available, and RV(busy_source) says which.
  - The module process pins itself to the host's housekeeping CPUs (M(xdplab.testbed.housekeeping)) before it
    reads anything, so that it does not run on the CPUs it measures.
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
  threads:
    description:
      - Read the run time of the threads that may run on the reported CPUs (schedstat), for RV(work), RV(foreign)
        and RV(busy). Off, only /proc/stat is read.
    type: bool
    default: true
  work_interfaces:
    description:
      - Interfaces whose NAPI kernel threads (C(napi/<interface>-<napi id>), threaded NAPI) do the DUT's work.
    type: list
    elements: str
    default: []
  work_pids:
    description: Processes all of whose threads do the DUT's work (testpmd, the AF_XDP bench).
    type: list
    elements: int
    default: []
  work_comms:
    description: Regular expressions (Python C(re.search)) on thread names (C(comm)) of the DUT's work threads.
    type: list
    elements: str
    default: []
  until:
    description:
      - With O(since) only. A second snapshot, taken later, that ends the window instead of reading now; the usage
        is computed between O(since) and O(until) (the snapshots are checked as O(since) is). A module that runs its
        own process takes both at its measurement window's edges (RV(xdplab.testbed.testpmd#module:cpu_window)), so
        the CPU figures cover exactly the window that was measured, while that process was alive.
      - Not with O(bpf_interfaces), O(bpf_prog_ids) or O(ended_threads).
    type: dict
  ended_threads:
    description:
      - With O(since) only. Thread readings of processes that ran inside the window and ended before its end, each
        taken by the process's own module just before it stopped the process (RV(xdplab.testbed.testpmd#module:threads),
        RV(xdplab.testbed.xsk_bench#module:threads)).
        The closing read lists live threads only, so without them a process that starts, measures and exits
        between the two readings (testpmd's lcores) is in neither RV(work) nor RV(foreign).
      - Their threads count as if read at the window's end (their run time after the reading, the process's last
        milliseconds, is not seen); a thread still alive at the end is taken from the live read. Entries that come
        from here carry C(ended=true). A reading taken outside the window is refused.
    type: list
    elements: dict
    default: []
  foreign_threshold:
    description:
      - RV(foreign_flag) is true when user-space threads that are not the DUT's work ran on a reported CPU for more
        than this share of one CPU over the window, in percent. Kernel threads are listed but do not count.
      - The default 0.5 sits above the ~0.1 % that system daemons take of an idle CPU on the virtual lab, which
        flagged nearly every trial at 0.1.
    type: float
    default: 0.5
  bpf_interfaces:
    description:
      - Interfaces (in the module's network namespace) whose attached XDP program's run time is read. With
        O(snapshot_only) the module turns C(kernel.bpf_stats_enabled) on if it is off; the later call with O(since)
        turns it back off. Not in check mode, where the statistics are read as they are. When that later call
        never comes (the trial failed in between), the next call of this module on the host turns them off
        (C(/run/xdplab/bpf_stats_enabled_by_cpu_usage) marks that it turned them on).
      - The statistics cost two clock reads per program run (about 20 ns per packet here), so use them for CPU
        measurements, not for peak rates.
    type: list
    elements: str
    default: []
  bpf_prog_ids:
    description: BPF program ids whose run time is read, as O(bpf_interfaces).
    type: list
    elements: int
    default: []
notes:
  - The counters tick at RV(ticks_per_second) (USER_HZ, usually 100), so a window of one second has a
    resolution of 1% per CPU; use windows of several seconds for small differences.
  - A thread's run time is not split by CPU in procfs. A thread is charged to a CPU exactly when its affinity
    allows that CPU only (C(attribution=affinity)), as NAPI kthreads, testpmd lcores and the pinned bench threads do;
    otherwise to the CPU it last ran on (C(attribution=last_cpu)), an estimate. Threads that started and ended
    between the two readings are not seen, unless their module handed their last reading in through O(ended_threads).
requirements:
  - Linux /proc/stat, /proc/<pid>/task/<tid>/schedstat (CONFIG_SCHED_INFO) for the thread sources
  - bpftool for O(bpf_interfaces) and O(bpf_prog_ids)
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
busy:
  description:
    - Mean busy % of the reported CPUs from the most precise source, the DUT's work threads' run time
      (RV(busy_source)=C(schedstat)) when any work thread was found, else /proc/stat (C(proc_stat)).
  returned: unless snapshot_only
  type: float
  sample: 8.31
busy_source:
  description: Source of RV(busy), C(schedstat) or C(proc_stat).
  returned: unless snapshot_only
  type: str
  sample: schedstat
sources:
  description: The source of each figure, by return key (C(per_cpu.busy) etc.).
  returned: always
  type: dict
  sample: {per_cpu.busy: proc_stat, per_cpu.user: proc_stat, per_cpu.work_busy: schedstat, work: schedstat,
           foreign: schedstat, bpf: bpf_stats}
work:
  description:
    - The DUT's work threads that ran on the reported CPUs in the window, biggest first. C(busy) is % of one CPU,
      C(role) why the thread counts as work (C(napi), C(process), C(comm)), C(attribution) how it was charged to
      C(cpu) (C(affinity) exact, C(last_cpu) an estimate), C(ended=true) when its counters came from
      O(ended_threads) (its process ended inside the window).
  returned: with threads, unless snapshot_only
  type: list
  elements: dict
  sample: [{pid: 812, tid: 812, comm: napi/veth-dut0-259, cpu: 1, runtime_ns: 249304112, busy: 8.31,
            attribution: affinity, kernel: true, role: napi}]
foreign:
  description:
    - Threads that are not the DUT's work and ran on a reported CPU in the window (at most 20, biggest first),
      same keys as RV(work) without C(role). C(kernel) tells kernel threads (kworker, ksoftirqd, ...) apart.
  returned: with threads, unless snapshot_only
  type: list
  elements: dict
  sample: [{pid: 4711, tid: 4711, comm: python3, cpu: 1, runtime_ns: 30114000, busy: 1.0, attribution: last_cpu,
            kernel: false}]
foreign_count:
  description: Number of foreign threads (RV(foreign) holds the first 20).
  returned: with threads, unless snapshot_only
  type: int
  sample: 1
foreign_busy:
  description: Run time of the foreign user-space threads on the reported CPUs, % of one CPU.
  returned: with threads, unless snapshot_only
  type: float
  sample: 1.0
foreign_flag:
  description: True when RV(foreign_busy) is above O(foreign_threshold), that is processes that are not under test ran on
    the DUT's CPUs, and the CPU figures include them.
  returned: with threads, unless snapshot_only
  type: bool
  sample: false
bpf:
  description:
    - Per BPF program, its run time and runs in the window, ns per run and C(busy) (% of one CPU), source
      C(bpf_stats). C(run_time_ns) is 0 when the statistics were off.
  returned: with bpf_interfaces or bpf_prog_ids, unless snapshot_only
  type: list
  elements: dict
  sample: [{id: 241, name: xdp_bench_drop, run_time_ns: 61000000, run_cnt: 2625000, ns_per_run: 23.2, busy: 2.03,
            source: bpf_stats}]
bpf_stats_enabled:
  description: C(kernel.bpf_stats_enabled) during the window, and whether this module turned it on (and off again).
  returned: with bpf_interfaces or bpf_prog_ids
  type: dict
  sample: {during: 1, set_by_module: true, restored: true}
housekeeping:
  description: The CPUs this module process pinned itself to (M(xdplab.testbed.housekeeping)), null when none set.
  returned: always
  type: list
  elements: int
  sample: [0]
per_cpu:
  description:
    - Percentages per reported CPU over the whole window. C(busy) = 100 - C(idle) - C(iowait). C(ticks) is the
      number of USER_HZ ticks the CPU accounted in the window. Empty with O(snapshot_only).
    - With O(threads), also C(work_busy) and C(foreign_busy) (run time of the DUT's work threads and of the
      foreign user-space threads charged to the CPU, % of the window, source C(schedstat)).
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _housekeeping
from ansible_collections.xdplab.testbed.plugins.module_utils._cpu_usage import ARGUMENT_SPEC, CpuUsage


def main():
    pinned = _housekeeping.pin_self()  # before anything else: never sample from the CPUs being measured
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**CpuUsage(module, pinned).run())


if __name__ == "__main__":
    main()
