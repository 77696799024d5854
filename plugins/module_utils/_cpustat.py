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

import os
import time

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
