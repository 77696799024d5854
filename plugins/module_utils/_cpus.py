# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one CPU-list helper: the kernel's list format ('0-3,5'), the online CPUs, where a thread ran."""

from __future__ import annotations

CPU_ONLINE = "/sys/devices/system/cpu/online"


class CpuListError(ValueError):
    """Text that is not a CPU list; the message quotes it."""


def parse_cpu_list(text):
    """'0-3,5' -> [0, 1, 2, 3, 5] (sysfs/procfs CPU list format, also kernel command line values)."""
    cpus = []
    for part in str(text).strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError as exc:
            raise CpuListError(f"{text!r} is not a CPU list (expected e.g. 0-3,5)") from exc
        if first < 0 or last < first:
            raise CpuListError(f"{text!r} is not a CPU list: range {part} runs backwards or below 0")
        cpus.extend(range(first, last + 1))
    return sorted(set(cpus))


def format_cpu_list(cpus):
    """[0, 1, 2, 3, 5] -> '0-3,5'."""
    cpus = sorted(set(int(c) for c in cpus))
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def online_cpus(path=CPU_ONLINE):
    """The online CPUs of this host, as a sorted list."""
    with open(path, encoding="ascii") as f:
        return parse_cpu_list(f.read())
