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

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.module_utils import _housekeeping
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, online_cpus

FOREIGN_LISTED = 20
SOURCES = {"per_cpu.busy": cpustat.SOURCE_PROC_STAT, "per_cpu.user": cpustat.SOURCE_PROC_STAT,
           "per_cpu.system": cpustat.SOURCE_PROC_STAT, "per_cpu.softirq": cpustat.SOURCE_PROC_STAT,
           "all": cpustat.SOURCE_PROC_STAT}
THREAD_SOURCES = {"per_cpu.work_busy": cpustat.SOURCE_SCHEDSTAT, "per_cpu.foreign_busy": cpustat.SOURCE_SCHEDSTAT,
                  "work": cpustat.SOURCE_SCHEDSTAT, "foreign": cpustat.SOURCE_SCHEDSTAT,
                  "foreign_busy": cpustat.SOURCE_SCHEDSTAT}


class CpuUsage:
    """Does the work; main() only wires it."""

    def __init__(self, module, pinned=None):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "per_cpu": [], "all": {}, "ticks_per_second": cpustat.ticks_per_second(),
                       "sources": dict(SOURCES), "housekeeping": pinned}
        if self.p["snapshot_only"] and self.p["since"] is not None:
            self.fail("snapshot_only and since exclude each other: take the snapshot first, then pass it as since")
        if self.p["interval"] <= 0:
            self.fail(f"interval must be positive, got {self.p['interval']}")
        if self.p["samples"] < 1:
            self.fail(f"samples must be at least 1, got {self.p['samples']}")
        if self.p["ended_threads"] and self.p["since"] is None:
            self.fail("ended_threads needs since: they are the last readings of processes that ended inside the "
                      "window a snapshot_only call opened")
        try:
            self.matcher = cpustat.WorkMatcher(self.p["work_interfaces"], self.p["work_pids"], self.p["work_comms"])
        except Exception as exc:  # re.error: a bad pattern
            self.fail(f"work_comms: {exc}")
        self.want_bpf = bool(self.p["bpf_interfaces"] or self.p["bpf_prog_ids"])
        if self.p["until"] is not None and (self.p["since"] is None or self.want_bpf or self.p["ended_threads"]):
            self.fail("until ends a window opened by since (both snapshots of the same host), and takes neither "
                      "bpf_interfaces/bpf_prog_ids nor ended_threads: pass since and until only")
        if self.p["threads"]:
            self.result["sources"].update(THREAD_SOURCES)
        if self.want_bpf:
            self.result["sources"]["bpf"] = cpustat.SOURCE_BPF_STATS

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

    def snapshot_of(self, reading, threads=None, bpf=None, bpf_state=None):
        snap = cpustat.make_snapshot(reading, reading["time"], self.result["ticks_per_second"], cpustat.boot_id())
        if threads is not None:
            snap["threads"] = cpustat.threads_snapshot(threads)
        if bpf is not None:
            snap["bpf"] = {str(k): v for k, v in bpf.items()}
            snap["bpf_stats_set_by_module"] = bool(bpf_state and bpf_state.get("set_by_module"))
        return snap

    @staticmethod
    def report(before, after, cpus):
        return cpustat.usage_between(before, after, cpus)

    # -- BPF run-time statistics --
    def bpf_prog_ids(self):
        from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf

        ids = list(self.p["bpf_prog_ids"])
        for dev in self.p["bpf_interfaces"]:
            try:
                ifindex = socket.if_nametoindex(dev)
            except OSError:
                self.fail(f"bpf_interfaces: interface {dev} does not exist in this network namespace")
            try:
                prog_id, _mode = _libbpf.attached_program(ifindex)
            except _libbpf.LibbpfError as exc:
                self.fail(f"bpf_interfaces: cannot query the XDP program of {dev}: {exc}")
            if not prog_id:
                self.fail(f"bpf_interfaces: no XDP program is attached to {dev}")
            ids.append(prog_id)
        return sorted(set(ids))

    def bpf_on(self):
        """Turn kernel.bpf_stats_enabled on for the window (not in check mode); the state to hand on."""
        was = cpustat.read_bpf_stats_enabled()
        state = {"before": was, "set_by_module": False}
        if was == 0 and not self.module.check_mode:
            try:
                cpustat.write_bpf_stats_enabled(1)
                state["set_by_module"] = True
                cpustat.mark_bpf_stats_set()
            except OSError as exc:
                self.fail(f"cannot turn kernel.bpf_stats_enabled on ({exc}): run as root, or drop bpf_interfaces")
        state["during"] = cpustat.read_bpf_stats_enabled()
        return state

    def bpf_off(self, set_by_module):
        restored = False
        if set_by_module and not self.module.check_mode:
            try:
                cpustat.write_bpf_stats_enabled(0)
                restored = True
                cpustat.clear_bpf_stats_mark()
            except OSError as exc:
                self.module.warn(f"could not turn kernel.bpf_stats_enabled off again: {exc}")
        return restored

    def threads_report(self, before, after, cpus, seconds):
        work, foreign = cpustat.thread_usage(before, after, cpus, seconds, self.matcher)
        work_cpu = cpustat.per_cpu_runtime(work, cpus, seconds)
        user_foreign = [e for e in foreign if not e["kernel"]]
        foreign_cpu = cpustat.per_cpu_runtime(user_foreign, cpus, seconds)
        for entry in self.result["per_cpu"]:
            entry["work_busy"] = work_cpu[entry["cpu"]][1]
            entry["foreign_busy"] = foreign_cpu[entry["cpu"]][1]
        foreign_busy = round(sum(b for _ns, b in foreign_cpu.values()), 3)
        self.result.update(work=work, foreign=foreign[:FOREIGN_LISTED], foreign_count=len(foreign),
                           foreign_busy=foreign_busy, foreign_flag=foreign_busy > self.p["foreign_threshold"])
        if work:
            self.result["busy"] = round(sum(b for _ns, b in work_cpu.values()) / len(cpus), 3)
            self.result["busy_source"] = cpustat.SOURCE_SCHEDSTAT

    def restore_left_on(self):
        """A window that turned bpf_stats on and never ended (its trial failed in between): turn them off now."""
        if self.module.check_mode or not cpustat.bpf_stats_marked():
            return
        if self.want_bpf and self.p["since"] is not None:
            return  # the window's own end restores them
        try:
            cpustat.write_bpf_stats_enabled(0)
            cpustat.clear_bpf_stats_mark()
            self.module.warn("kernel.bpf_stats_enabled was left on by an earlier window that did not end: turned off")
        except OSError as exc:
            self.module.warn(f"kernel.bpf_stats_enabled was left on by an earlier window; turning it off failed: {exc}")

    def run(self):
        try:
            self.restore_left_on()
            threads_now = bpf_now = bpf_state = None
            prog_ids = self.bpf_prog_ids() if self.want_bpf else []
            if self.want_bpf and self.p["snapshot_only"]:
                bpf_state = self.bpf_on()
            until = self.p["until"]
            if until is not None:
                # the window's end was read by another module (its process's measurement window): nothing is read now
                now = cpustat.check_snapshot(until)
                cpustat.same_boot(now, cpustat.take()[0]["btime"], cpustat.boot_id())
            else:
                now = self.read()
            cpus = self.select_cpus(now)
            self.result["cpus"] = cpus
            if self.p["threads"] and until is not None:
                threads_now = cpustat.threads_from_snapshot(until["threads"]) if "threads" in until else None
                if threads_now is None:
                    self.module.warn("until has no thread counters: only /proc/stat")
                    self.p["threads"] = False
                    for key in THREAD_SOURCES:
                        self.result["sources"].pop(key, None)
            elif self.p["threads"]:
                threads_now = cpustat.read_threads(cpus)
            if self.want_bpf:
                bpf_now = cpustat.bpf_run_stats(prog_ids)
            if self.p["snapshot_only"]:
                self.result.update(window={"start": now["time"], "end": now["time"]}, seconds=0.0,
                                   snapshot=self.snapshot_of(now, threads_now, bpf_now, bpf_state))
                if bpf_state:
                    self.result["bpf_stats_enabled"] = {"during": bpf_state["during"],
                                                        "set_by_module": bpf_state["set_by_module"], "restored": False}
                return self.result
            threads_before = bpf_before = None
            set_by_module = False
            if self.p["since"] is not None:
                before = cpustat.check_snapshot(self.p["since"])
                cpustat.same_boot(before, now["btime"], cpustat.boot_id())
                if before["time"] > now["time"]:
                    self.fail("since was taken after now on the monotonic clock: it comes from another host or boot")
                if self.p["threads"] and "threads" not in self.p["since"]:
                    self.module.warn("since has no thread counters (taken with threads: false): only /proc/stat")
                    self.p["threads"] = False
                    for key in THREAD_SOURCES:
                        self.result["sources"].pop(key, None)
                if self.p["threads"]:
                    threads_before = cpustat.threads_from_snapshot(self.p["since"]["threads"])
                if self.want_bpf:
                    bpf_before = {int(k): v for k, v in (self.p["since"].get("bpf") or {}).items()}
                    set_by_module = bool(self.p["since"].get("bpf_stats_set_by_module"))
                readings = [before, now]
            else:
                if self.want_bpf:
                    bpf_state = self.bpf_on()
                    set_by_module = bpf_state["set_by_module"]
                    bpf_before = cpustat.bpf_run_stats(prog_ids)
                threads_before = threads_now
                readings = [now]
                start = now["time"]
                for i in range(1, self.p["samples"] + 1):
                    delay = start + i * self.p["interval"] - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    readings.append(self.read())
                if self.p["threads"]:
                    threads_now = cpustat.read_threads(cpus)
                if self.want_bpf:
                    bpf_now = cpustat.bpf_run_stats(prog_ids)
                if self.p["samples"] > 1:
                    self.result["samples"] = []
                    for a, b in zip(readings, readings[1:]):
                        per_cpu, agg = self.report(a, b, cpus)
                        self.result["samples"].append({"t": round(b["time"] - start, 6),
                                                       "seconds": round(b["time"] - a["time"], 6),
                                                       "per_cpu": per_cpu, "all": agg})
            first, last = readings[0], readings[-1]
            seconds = last["time"] - first["time"]
            self.result["per_cpu"], self.result["all"] = self.report(first, last, cpus)
            self.result["window"] = {"start": first["time"], "end": last["time"]}
            self.result["seconds"] = round(seconds, 6)
            busy = [c["busy"] for c in self.result["per_cpu"]]
            self.result["busy"] = round(sum(busy) / len(busy), 3) if busy else 0.0
            self.result["busy_source"] = cpustat.SOURCE_PROC_STAT
            if self.p["threads"]:
                threads_end = threads_now
                if self.p["ended_threads"]:
                    threads_end = cpustat.merge_ended(threads_now, self.p["ended_threads"], first["time"], last["time"])
                self.threads_report(threads_before, threads_end, cpus, seconds)
            if self.want_bpf:
                self.result["bpf"] = cpustat.bpf_usage(bpf_before or {}, bpf_now, seconds)
                self.result["bpf_stats_enabled"] = {"during": cpustat.read_bpf_stats_enabled(),
                                                    "set_by_module": set_by_module,
                                                    "restored": self.bpf_off(set_by_module)}
            self.result["snapshot"] = self.snapshot_of(last, threads_now, bpf_now)
        except cpustat.CpuStatError as exc:
            self.fail(str(exc))
        except OSError as exc:
            self.fail(f"reading CPU counters failed: {exc}")
        return self.result


ARGUMENT_SPEC = {
    "cpus": {"type": "list", "elements": "int"},
    "interval": {"type": "float", "default": 1.0},
    "samples": {"type": "int", "default": 1},
    "snapshot_only": {"type": "bool", "default": False},
    "since": {"type": "dict"},
    "until": {"type": "dict"},
    "threads": {"type": "bool", "default": True},
    "work_interfaces": {"type": "list", "elements": "str", "default": []},
    "work_pids": {"type": "list", "elements": "int", "default": []},
    "work_comms": {"type": "list", "elements": "str", "default": []},
    "ended_threads": {"type": "list", "elements": "dict", "default": []},
    "foreign_threshold": {"type": "float", "default": 0.5},
    "bpf_interfaces": {"type": "list", "elements": "str", "default": []},
    "bpf_prog_ids": {"type": "list", "elements": "int", "default": []},
}


def main():
    pinned = _housekeeping.pin_self()  # before anything else: never sample from the CPUs being measured
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**CpuUsage(module, pinned).run())


if __name__ == "__main__":
    main()
