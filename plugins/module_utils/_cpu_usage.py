# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The work of the module cpu_usage (the DUT's CPU usage over a window, from /proc/stat and schedstat snapshots):
class CpuUsage and its argument spec, here so that the trial runner's phases (plugin_utils/_trial.py) and the action
plugin cpu_usage run it in the controller's worker without the module file."""

from __future__ import annotations

import socket
import time

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
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
