# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""CPU time accounting from /proc/stat, as ``mpstat -P ALL`` computes it (sysstat 12).

Pure functions (parse, snapshot, usage between two snapshots) plus thin readers of /proc and /sys, so unit tests
can feed real captured /proc/stat text. Used by the module cpu_usage.

/proc/stat cpu lines hold cumulative USER_HZ ticks: user nice system idle iowait irq softirq steal guest
guest_nice. The kernel counts guest time in user as well (and guest_nice in nice), so like mpstat user and nice
are reported without the guest part and the total leaves guest out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
REPORTED = ("busy", "idle", "user", "nice", "system", "irq", "softirq", "iowait", "steal", "guest", "guest_nice")
SNAPSHOT_VERSION = 1


class CpuStatError(Exception):
    pass


def parse_proc_stat(text):
    """/proc/stat text -> {"all": [10 ints], "cpus": {cpu: [10 ints]}, "btime": int or None}.

    Older kernels print fewer columns; missing ones are 0.
    """
    out = {"all": None, "cpus": {}, "btime": None}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        if key == "btime" and len(parts) > 1:
            out["btime"] = int(parts[1])
        if not key.startswith("cpu"):
            continue
        values = [int(v) for v in parts[1 : 1 + len(FIELDS)]]
        values += [0] * (len(FIELDS) - len(values))
        if key == "cpu":
            out["all"] = values
        else:
            out["cpus"][int(key[3:])] = values
    if out["all"] is None or not out["cpus"]:
        raise CpuStatError("no cpu lines in /proc/stat text")
    return out


def make_snapshot(stat, mono, ticks_per_second, boot_id=None):
    """A JSON-safe snapshot (what ``snapshot_only`` returns and ``since`` takes back)."""
    return {
        "version": SNAPSHOT_VERSION,
        "time": mono,
        "btime": stat["btime"],
        "boot_id": boot_id,
        "ticks_per_second": ticks_per_second,
        "all": list(stat["all"]),
        "cpus": {str(cpu): list(values) for cpu, values in sorted(stat["cpus"].items())},
    }


def check_snapshot(snap):
    """Validate a snapshot handed back through ``since``; returns it with int CPU keys. Raises CpuStatError."""
    if not isinstance(snap, dict):
        raise CpuStatError(
            f"since must be the snapshot dict returned by cpu_usage with snapshot_only: true, got {type(snap).__name__}"
        )
    missing = [k for k in ("version", "time", "btime", "all", "cpus") if k not in snap]
    if missing:
        raise CpuStatError(
            f"since is not a cpu_usage snapshot (missing {', '.join(missing)}); pass the `snapshot` value returned by "
            f"cpu_usage with snapshot_only: true"
        )
    if snap["version"] != SNAPSHOT_VERSION:
        raise CpuStatError(f"since has snapshot version {snap['version']}, this module reads version {SNAPSHOT_VERSION}")
    try:
        cpus = {int(k): [int(x) for x in v] for k, v in snap["cpus"].items()}
        return {
            "time": float(snap["time"]),
            "btime": None if snap["btime"] is None else int(snap["btime"]),
            "boot_id": snap.get("boot_id"),
            "all": [int(x) for x in snap["all"]],
            "cpus": cpus,
        }
    except (TypeError, ValueError, AttributeError) as exc:
        raise CpuStatError(f"since holds malformed counters: {exc}") from exc


def same_boot(before, now_btime, now_boot_id=None):
    """Raise CpuStatError when the snapshot comes from another boot (or another host).

    boot_id (/proc/sys/kernel/random/boot_id) decides when both sides have it; otherwise btime, which the kernel
    derives from the wall clock and may move by a second, so a difference of up to 2 s is tolerated.
    """
    if before.get("boot_id") and now_boot_id:
        if before["boot_id"] != now_boot_id:
            raise CpuStatError(
                f"since comes from another boot or host (boot_id {before['boot_id']}, now {now_boot_id}); "
                f"take a new snapshot with snapshot_only: true on this host after it booted"
            )
        return
    if before.get("btime") is not None and now_btime is not None and abs(before["btime"] - now_btime) > 2:
        raise CpuStatError(
            f"since comes from another boot (btime {before['btime']}, now {now_btime}); take a new snapshot with "
            f"snapshot_only: true after the reboot"
        )


def usage(before, after):
    """Percentages between two counter lists (10 fields each) the way mpstat computes them.

    Returns {busy, idle, user, nice, system, irq, softirq, iowait, steal, guest, guest_nice, ticks};
    busy = 100 - idle - iowait. A CPU whose counters went backwards (hot-unplugged and back) or did not move
    (no ticks) reports all zeros and ticks 0.
    """
    d = dict(zip(FIELDS, (a - b for a, b in zip(after, before))))
    # the kernel counts guest in user and guest_nice in nice; mpstat reports them apart
    user = d["user"] - d["guest"]
    nice = d["nice"] - d["guest_nice"]
    total = user + nice + d["system"] + d["idle"] + d["iowait"] + d["irq"] + d["softirq"] + d["steal"] \
        + d["guest"] + d["guest_nice"]
    if total <= 0 or any(v < 0 for v in d.values()):
        return dict.fromkeys(REPORTED, 0.0) | {"ticks": 0}

    def pct(v):
        return round(100.0 * max(v, 0) / total, 2)

    out = {
        "idle": pct(d["idle"]),
        "user": pct(user),
        "nice": pct(nice),
        "system": pct(d["system"]),
        "irq": pct(d["irq"]),
        "softirq": pct(d["softirq"]),
        "iowait": pct(d["iowait"]),
        "steal": pct(d["steal"]),
        "guest": pct(d["guest"]),
        "guest_nice": pct(d["guest_nice"]),
        "ticks": total,
    }
    out["busy"] = round(max(0.0, 100.0 - 100.0 * (d["idle"] + d["iowait"]) / total), 2)
    return {k: out[k] for k in (*REPORTED, "ticks")}


def usage_between(before, after, cpus):
    """per_cpu list and the aggregate between two snapshots (dicts with "all" and int-keyed "cpus")."""
    per_cpu = []
    for cpu in cpus:
        if cpu not in before["cpus"]:
            raise CpuStatError(f"CPU {cpu} is not in the earlier snapshot (it was offline then)")
        if cpu not in after["cpus"]:
            raise CpuStatError(f"CPU {cpu} went offline since the snapshot")
        per_cpu.append({"cpu": cpu} | usage(before["cpus"][cpu], after["cpus"][cpu]))
    return per_cpu, usage(before["all"], after["all"])


# ---- readers -------------------------------------------------------------------------------------------------

def read_text(path):
    with open(path, encoding="ascii") as f:
        return f.read()


def boot_id(path="/proc/sys/kernel/random/boot_id"):
    try:
        return read_text(path).strip()
    except OSError:
        return None


def ticks_per_second():
    return os.sysconf("SC_CLK_TCK")


def take(path="/proc/stat"):
    """Read /proc/stat now: (parsed, monotonic time)."""
    text = read_text(path)
    mono = time.monotonic()
    return parse_proc_stat(text), mono


# ---- precise sources: thread run time (schedstat), foreign threads, BPF run time --------------------------------
#
# /proc/stat is tick-sampled: a CPU is charged a whole tick (USER_HZ) for whatever runs when the tick fires, so
# work that comes in short bursts between ticks (a paced NAPI thread) is under-reported, up to 5x on this VM.
# /proc/<pid>/task/<tid>/schedstat (CONFIG_SCHED_INFO) carries each thread's run time in nanoseconds, exact.
# A thread's run time is not split by CPU in procfs: a thread is attributed to a CPU exactly when its affinity
# allows that CPU only (the DUT's NAPI kthreads, testpmd lcores, pinned bench threads), otherwise by the CPU it
# last ran on (field 39 of its stat) -- an estimate, labelled as such.

PF_KTHREAD = 0x00200000
THREADS_VERSION = 1
ATTRIBUTION_AFFINITY = "affinity"  # the thread may run on this CPU only: exact
ATTRIBUTION_LAST_CPU = "last_cpu"  # the CPU the thread last ran on: an estimate
SOURCE_PROC_STAT = "proc_stat"
SOURCE_SCHEDSTAT = "schedstat"
SOURCE_BPF_STATS = "bpf_stats"
BPF_STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"


def parse_task_stat(text):
    """/proc/<pid>/task/<tid>/stat -> {comm, state, ppid, flags, starttime, cpu, kthread}.

    comm sits in parentheses and may hold spaces or parentheses itself, so the fields are counted from the last ')'.
    """
    lpar, rpar = text.index("("), text.rindex(")")
    rest = text[rpar + 2 :].split()
    # rest[0] is field 3 (state): field n is rest[n - 3]
    flags = int(rest[6])
    return {
        "comm": text[lpar + 1 : rpar],
        "state": rest[0],
        "ppid": int(rest[1]),
        "flags": flags,
        "starttime": int(rest[19]),
        "cpu": int(rest[36]),
        "kthread": bool(flags & PF_KTHREAD),
    }


def parse_schedstat(text):
    """/proc/<pid>/schedstat: 'run_ns wait_ns timeslices' -> run time in ns."""
    return int(text.split()[0])


def allowed_cpus(status_text):
    """Cpus_allowed_list of /proc/<pid>/task/<tid>/status -> list of CPUs (None if absent)."""
    for line in status_text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return _cpus.parse_cpu_list(line.split(":", 1)[1])
    return None


def read_task(pid, tid, proc="/proc"):
    """One thread's counters {pid, tid, comm, cpu, runtime_ns, kthread, allowed}; None when it ended meanwhile."""
    base = f"{proc}/{pid}/task/{tid}"
    try:
        allowed = allowed_cpus(read_text(f"{base}/status"))
        stat = parse_task_stat(read_text(f"{base}/stat"))
        runtime = parse_schedstat(read_text(f"{base}/schedstat"))
    except (OSError, ValueError, IndexError):
        return None
    return {"pid": int(pid), "tid": int(tid), "comm": stat["comm"], "cpu": stat["cpu"], "runtime_ns": runtime,
            "kthread": stat["kthread"], "allowed": allowed}


def read_threads(cpus, proc="/proc"):
    """Every thread that may run on one of `cpus`: {tid: {pid, tid, comm, cpu, runtime_ns, kthread, allowed}}.

    Live threads only: a thread that ended before this read is not here (see ended_reading for a process that
    ends inside a window). Threads that end while they are read are skipped.
    """
    wanted = set(cpus)
    out = {}
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            thread = read_task(pid, tid, proc)
            if thread is None or (thread["allowed"] is not None and not wanted.intersection(thread["allowed"])):
                continue
            out[thread["tid"]] = thread
    return out


def read_process_threads(pid, proc="/proc"):
    """Every thread of one process, as read_threads() gives them ({} when the process is gone)."""
    try:
        tids = os.listdir(f"{proc}/{int(pid)}/task")
    except OSError:
        return {}
    threads = (read_task(pid, tid, proc) for tid in tids)
    return {t["tid"]: t for t in threads if t is not None}


def ended_reading(pid, proc="/proc", clock=time.monotonic):
    """The thread counters of a process about to end, for a window that closes after it is gone.

    A module that runs a process for its measurement (testpmd, the AF_XDP bench) and stops it before returning
    reads this just before the stop and returns it; cpu_usage's closing read (O(ended_threads)) counts these
    threads as if they were still alive, since read_threads() no longer lists them. Returns {pid, time
    (CLOCK_MONOTONIC of the read), threads (threads_snapshot form)}, or None when the process is already gone.
    """
    threads = read_process_threads(pid, proc)
    if not threads:
        return None
    return {"version": THREADS_VERSION, "pid": int(pid), "time": clock(), "threads": threads_snapshot(threads)}


def threads_snapshot(threads):
    """Compact, JSON-safe form of read_threads() for a snapshot: {tid: [pid, runtime_ns, cpu, kthread, comm, allowed]}."""
    return {str(t["tid"]): [t["pid"], t["runtime_ns"], t["cpu"], int(t["kthread"]), t["comm"],
                            _cpus.format_cpu_list(t["allowed"]) if t["allowed"] is not None else None]
            for t in threads.values()}


def threads_from_snapshot(snap):
    """Inverse of threads_snapshot (raises CpuStatError on malformed input)."""
    try:
        return {int(tid): {"pid": int(v[0]), "tid": int(tid), "runtime_ns": int(v[1]), "cpu": int(v[2]),
                           "kthread": bool(v[3]), "comm": str(v[4]),
                           "allowed": _cpus.parse_cpu_list(v[5]) if v[5] is not None else None}
                for tid, v in snap.items()}
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CpuStatError(f"since holds malformed thread counters: {exc}") from exc


def window_snapshot(cpus, proc="/proc"):
    """A cpu_usage snapshot taken by another module (/proc/stat and the threads that may run on `cpus`), so that a
    module that runs its own process can bracket exactly its measurement window; cpu_usage takes a pair back as
    O(since) and O(until). The same form as cpu_usage's own snapshot."""
    stat, mono = take(f"{proc}/stat")
    snap = make_snapshot(stat, mono, ticks_per_second(), boot_id(f"{proc}/sys/kernel/random/boot_id"))
    snap["threads"] = threads_snapshot(read_threads(cpus, proc))
    return snap


def merge_ended(live, readings, start, end):
    """live (a read_threads() result at the window's end) plus the threads of `readings` (ended_reading() results
    of processes that ended inside the window), each marked ``ended: True``.

    A reading must fall inside the window [start, end] (CLOCK_MONOTONIC), else CpuStatError: it belongs to
    another window (or host). A thread still alive at the end is taken from the live read (it is later).
    """
    out = dict(live)
    for i, reading in enumerate(readings or ()):
        if not isinstance(reading, dict) or not {"pid", "time", "threads"} <= set(reading):
            raise CpuStatError(
                f"ended_threads[{i}] is not a thread reading of an ended process (keys pid, time, threads: the "
                f"`threads` value testpmd or xsk_bench returned), got {reading!r:.120}"
            )
        try:
            at = float(reading["time"])
        except (TypeError, ValueError) as exc:
            raise CpuStatError(f"ended_threads[{i}]: time is not a monotonic time: {exc}") from exc
        if not start - 1e-6 <= at <= end + 1e-6:
            raise CpuStatError(
                f"ended_threads[{i}] (pid {reading['pid']}) was read at {at:.3f}, outside this window "
                f"({start:.3f}..{end:.3f} on CLOCK_MONOTONIC): pass the reading of a process that ran inside "
                f"the window opened by `since`"
            )
        for tid, thread in threads_from_snapshot(reading["threads"]).items():
            if tid in out and out[tid]["pid"] == thread["pid"]:
                continue
            out.setdefault(tid, thread | {"ended": True})
    return out


class WorkMatcher:
    """Which threads do the DUT's work: NAPI kthreads of interfaces, every thread of some processes, comm patterns."""

    def __init__(self, interfaces=(), pids=(), comms=()):
        self.interfaces = list(interfaces or ())
        self.pids = {int(p) for p in pids or ()}
        self.comms = [re.compile(c) for c in comms or ()]
        # NAPI kthreads are named napi/<dev>-<napi id>; older kernels cut comm at 15 characters
        self.napi_prefixes = [f"napi/{dev}-" for dev in self.interfaces]

    def role(self, thread):
        """'napi', 'process' or 'comm' when the thread is the DUT's work, else None."""
        comm = thread["comm"]
        if thread["kthread"]:
            for prefix in self.napi_prefixes:
                if comm.startswith(prefix) or (len(comm) == 15 and prefix.startswith(comm)):
                    return "napi"
        if thread["pid"] in self.pids:
            return "process"
        if any(c.search(comm) for c in self.comms):
            return "comm"
        return None


def attribute_cpu(thread, before, cpus):
    """(cpu, attribution) a thread's run time in the window is charged to, or (None, None) when not one of `cpus`."""
    allowed = thread.get("allowed")
    if allowed is not None:
        on = [c for c in allowed if c in cpus]
        if len(allowed) == 1 and on:
            return on[0], ATTRIBUTION_AFFINITY
        if not on:
            return None, None
    for cpu in (thread["cpu"], before["cpu"] if before else None):
        if cpu is not None and cpu in cpus:
            return cpu, ATTRIBUTION_LAST_CPU
    return None, None


def thread_usage(before, after, cpus, seconds, matcher):
    """Run time of the threads on `cpus` between two read_threads() results.

    Returns (work, foreign): lists of {pid, tid, comm, cpu, runtime_ns, busy, attribution, kernel[, role]}, busy in
    % of one CPU over `seconds`, biggest first. A thread born in the window counts from 0.
    """
    cpus = set(cpus)
    work, foreign = [], []
    for tid, now in after.items():
        then = before.get(tid)
        if then is not None and then["pid"] != now["pid"]:
            then = None  # tid reused by another process
        delta = now["runtime_ns"] - (then["runtime_ns"] if then else 0)
        if delta <= 0:
            continue
        cpu, how = attribute_cpu(now, then, cpus)
        if cpu is None:
            continue
        entry = {"pid": now["pid"], "tid": tid, "comm": now["comm"], "cpu": cpu, "runtime_ns": delta,
                 "busy": cpu_share(delta, seconds),
                 "attribution": how, "kernel": now["kthread"]}
        if now.get("ended"):
            entry["ended"] = True  # read by its own module just before its process ended (merge_ended)
        role = matcher.role(now)
        if role:
            work.append(entry | {"role": role})
        else:
            foreign.append(entry)
    work.sort(key=lambda e: -e["runtime_ns"])
    foreign.sort(key=lambda e: -e["runtime_ns"])
    return work, foreign


def cpu_share(ns, seconds):
    """Busy % of one CPU for ``ns`` of run time in a window of ``seconds``, at most 100: the threads' schedstat
    runtimes and the window's clock are read one after the other, not at one instant, so a CPU busy all the window can
    sum to a few hundredths over it (100.06 % seen); the runtime_ns beside it stays as read."""
    return min(100.0, round(100.0 * ns / (seconds * 1e9), 3)) if seconds > 0 else 0.0


def per_cpu_runtime(entries, cpus, seconds):
    """{cpu: (runtime_ns, busy %)} summed over thread entries (cpu_share)."""
    out = {}
    for cpu in cpus:
        ns = sum(e["runtime_ns"] for e in entries if e["cpu"] == cpu)
        out[cpu] = (ns, cpu_share(ns, seconds))
    return out


# -- BPF run-time statistics (kernel.bpf_stats_enabled) --

def read_bpf_stats_enabled(path=BPF_STATS_SYSCTL):
    try:
        return int(read_text(path).strip())
    except (OSError, ValueError):
        return None


def write_bpf_stats_enabled(value, path=BPF_STATS_SYSCTL):
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{int(value)}\n")


BPF_STATS_MARK = "/run/xdplab/bpf_stats_enabled_by_cpu_usage"


def mark_bpf_stats_set(path=BPF_STATS_MARK):
    """Remember that cpu_usage turned the statistics on (a window whose end never came is restored later)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")


def bpf_stats_marked(path=BPF_STATS_MARK):
    return os.path.exists(path)


def clear_bpf_stats_mark(path=BPF_STATS_MARK):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def bpf_run_stats(prog_ids, runner=None):
    """{prog_id: {id, name, run_time_ns, run_cnt}} from ``bpftool -j prog show id N`` (0 when stats were off)."""
    run = runner or (lambda argv: subprocess.run(argv, capture_output=True, text=True, check=False))
    out = {}
    for pid in prog_ids:
        proc = run(["bpftool", "-j", "prog", "show", "id", str(pid)])
        if proc.returncode != 0:
            raise CpuStatError(f"bpftool prog show id {pid} failed: {(proc.stderr or proc.stdout).strip()[:300]}")
        info = json.loads(proc.stdout)
        out[int(pid)] = {"id": int(pid), "name": info.get("name", ""), "run_time_ns": int(info.get("run_time_ns", 0)),
                         "run_cnt": int(info.get("run_cnt", 0))}
    return out


def bpf_usage(before, after, seconds):
    """Per program between two bpf_run_stats(): run time, runs, ns per run, busy % of one CPU."""
    out = []
    for pid, now in sorted(after.items()):
        then = before.get(pid, {"run_time_ns": 0, "run_cnt": 0})
        ns, cnt = now["run_time_ns"] - then["run_time_ns"], now["run_cnt"] - then["run_cnt"]
        out.append({"id": pid, "name": now["name"], "run_time_ns": ns, "run_cnt": cnt,
                    "ns_per_run": round(ns / cnt, 2) if cnt > 0 else None,
                    "busy": round(100.0 * ns / (seconds * 1e9), 3) if seconds > 0 else 0.0,
                    "source": SOURCE_BPF_STATS})
    return out
