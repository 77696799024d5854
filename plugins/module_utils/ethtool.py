# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Parsers for ethtool's text output and counter rates (shared by xdp_stats, testbed_facts and an ethtool_stats
module). Pure functions, plus thin runners that take a ``run_command(argv) -> (rc, out, err)`` callable,
normally AnsibleModule.run_command."""

from __future__ import annotations

import re


class EthtoolError(Exception):
    pass


def parse_stats(text):
    """``ethtool -S IFACE`` -> {counter: int}. Non-numeric values are skipped."""
    stats = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.endswith("statistics:") or ":" not in line:
            continue
        name, _sep, value = line.rpartition(":")
        try:
            stats[name.strip()] = int(value.strip())
        except ValueError:
            continue
    return stats


_STATS_PL = re.compile(r"Ethtool\((\S+)\s*\) stat:\s+(\d+)\s+\(\s*[\d,]+\)\s+<=\s+(\S+)\s+/sec")


def parse_ethtool_stats_pl(text):
    """The per-second lines of ethtool_stats.pl (as in the XDP paper's lab notes):
    ``Ethtool(mlx5p1 ) stat: 34585 ( 34,585) <= ch0_arm /sec`` -> {interface: {counter: rate}}."""
    out = {}
    for m in _STATS_PL.finditer(text):
        out.setdefault(m.group(1), {})[m.group(3)] = int(m.group(2))
    return out


def counter_rates(before, after, seconds, changed_only=True):
    """Per-second rates of counters between two parse_stats() snapshots.

    Counters that went down (reset) count from zero. With ``changed_only`` unchanged counters are left out.
    """
    if seconds <= 0:
        raise ValueError(f"interval must be positive, got {seconds}")
    out = {}
    for name, now in after.items():
        if name not in before:
            continue
        then = before[name]
        delta = now - then if now >= then else now
        if delta or not changed_only:
            out[name] = delta / seconds
    return out


def parse_driver_info(text):
    """``ethtool -i IFACE`` -> {'driver': .., 'version': .., 'firmware-version': .., 'bus-info': .., ...}."""
    info = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def parse_channels(text):
    """``ethtool -l IFACE`` -> {'max': {'rx': n, 'tx': n, 'other': n, 'combined': n}, 'current': {...}}.

    ``n/a`` becomes None.
    """
    out, section = {}, None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = out.setdefault("max", {})
            continue
        if low.startswith("current hardware settings"):
            section = out.setdefault("current", {})
            continue
        key, sep, value = low.partition(":")
        if section is None or not sep or key.startswith("channel parameters"):
            continue
        value = value.strip()
        if not value:
            continue
        section[key.strip()] = int(value) if value.isdigit() else None
    return out


def _run(run_command, argv):
    rc, out, err = run_command(argv)
    if rc != 0:
        raise EthtoolError(f"{' '.join(argv)} failed (rc={rc}): {(err or out).strip()}")
    return out


def stats(run_command, interface, ethtool="ethtool"):
    return parse_stats(_run(run_command, [ethtool, "-S", interface]))


def driver_info(run_command, interface, ethtool="ethtool"):
    return parse_driver_info(_run(run_command, [ethtool, "-i", interface]))


def channels(run_command, interface, ethtool="ethtool"):
    return parse_channels(_run(run_command, [ethtool, "-l", interface]))
