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


# ---------------------------------------------------------------------------------------------------------------
# ethtool_stats.pl: rates of several devices against a monotonic clock, and its output lines
# ---------------------------------------------------------------------------------------------------------------

#: printf formats of ethtool_stats.pl's per-counter line. ``pl`` is the script as published today
#: (netoptimizer/network-testing bin/ethtool_stats.pl: ``stat: %12d (%15s)``); ``seed002`` is the older layout of
#: the lab notes in seeds/002 (``stat: %11d (%12s)``, e.g. ``Ethtool(mlx5p1  ) stat:     6653761 (   6,653,761)``).
LINE_STYLES = {
    "pl": "Ethtool(%-8s) stat: %12d (%15s) <= %s /sec",
    "seed002": "Ethtool(%-8s) stat: %11d (%12s) <= %s /sec",
}


def round_rate(value):
    """Round a rate as the script does (Perl ``sprintf("%.0f")``: the C library's round-half-to-even)."""
    return int(format(value, ".0f"))


def commify(value):
    """123456789 -> '123,456,789' (the script's thousands separators)."""
    return f"{int(value):,}"


def format_stats_line(device, counter, rate, style="pl"):
    """One ethtool_stats.pl line for ``rate`` (counter per second) of ``counter`` on ``device``."""
    try:
        fmt = LINE_STYLES[style]
    except KeyError:
        raise ValueError(f"unknown line style {style!r}; known: {', '.join(sorted(LINE_STYLES))}") from None
    value = round_rate(rate)
    return fmt % (device, value, commify(value), counter)


def format_stats_lines(rates, style="pl", devices=None):
    """{device: {counter: rate}} -> the script's lines, devices in the given order, counters sorted by name
    (the script sorts its keys). Counters whose rounded rate is 0 are printed too: filter before if needed."""
    lines = []
    for device in devices or list(rates):
        for counter in sorted(rates.get(device, {})):
            lines.append(format_stats_line(device, counter, rates[device][counter], style))
    return lines


def stats_header(devices):
    """The script's header before each round of lines."""
    return f"Show adapter {' '.join(devices)} statistics (ONLY that changed!)"


def select_counters(names, include=None, exclude=None):
    """Counter names kept by the ``include`` (any matches, empty: all) and ``exclude`` (none matches) regex lists
    (``re.search``)."""
    inc = [re.compile(p) for p in include or []]
    exc = [re.compile(p) for p in exclude or []]
    return [n for n in names if (not inc or any(p.search(n) for p in inc)) and not any(p.search(n) for p in exc)]


def device_rates(snapshots, changed_only=True, include=None, exclude=None):
    """Rates of several devices from two rounds of snapshots taken against a monotonic clock.

    ``snapshots`` is ``{device: (t_before, stats_before, t_after, stats_after)}`` where the stats are parse_stats()
    dicts and the times the monotonic instants of each device's reads. Each device's rate is its delta over its own
    elapsed time. Returns ``{device: {counter: rate}}`` and ``{device: seconds}``.
    """
    rates, seconds = {}, {}
    for device, (t0, s0, t1, s1) in snapshots.items():
        elapsed = t1 - t0
        r = counter_rates(s0, s1, elapsed, changed_only=changed_only)
        keep = select_counters(list(r), include, exclude)
        rates[device] = {k: r[k] for k in keep}
        seconds[device] = elapsed
    return rates, seconds


# ---------------------------------------------------------------------------------------------------------------
# NIC settings: rings, pause, private flags, features, n-tuple rules, IRQs
# ---------------------------------------------------------------------------------------------------------------

NOT_SUPPORTED = re.compile(r"Operation not supported|not supported|EOPNOTSUPP", re.IGNORECASE)


class EthtoolUnsupported(EthtoolError):
    """The driver does not implement this ethtool operation (EOPNOTSUPP)."""


def _sections(text, first, second="current hardware settings"):
    """Shared parser of ``-l`` / ``-g`` style output: 'Pre-set maximums' and 'Current hardware settings'."""
    out, section = {}, None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = out.setdefault("max", {})
            continue
        if low.startswith(second):
            section = out.setdefault("current", {})
            continue
        key, sep, value = low.partition(":")
        if section is None or not sep or key.startswith(first):
            continue
        value = value.strip()
        if not value:
            continue
        section[key.strip()] = int(value) if value.isdigit() else (None if value == "n/a" else value)
    return out


def parse_rings(text):
    """``ethtool -g IFACE`` -> {'max': {'rx': n, 'rx mini': n, 'rx jumbo': n, 'tx': n}, 'current': {...}}.

    Newer ethtool adds lines such as 'RX Buf Len', 'TX Push' ('on'/'off' are kept as text)."""
    return _sections(text, "ring parameters")


def parse_onoff(text, header):
    """``ethtool -a`` / ``--show-priv-flags`` style ``key: on|off`` lines -> {key (lowercase): bool}."""
    out = {}
    for line in text.splitlines():
        if line.strip().lower().startswith(header) or ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        value = value.strip().lower()
        if value in ("on", "off"):
            out[key.strip().lower() if header == "pause parameters" else key.strip()] = value == "on"
    return out


def parse_pause(text):
    """``ethtool -a IFACE`` -> {'autonegotiate': bool, 'rx': bool, 'tx': bool}."""
    return parse_onoff(text, "pause parameters")


def parse_priv_flags(text):
    """``ethtool --show-priv-flags IFACE`` -> {flag: bool} (flag names as the driver spells them)."""
    return parse_onoff(text, "private flags")


def parse_features(text):
    """``ethtool -k IFACE`` -> {feature: {'on': bool, 'fixed': bool}}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\w-]+):\s+(on|off)(\s+\[(fixed|requested \w+)\])?", line)
        if m:
            out[m.group(1)] = {"on": m.group(2) == "on", "fixed": m.group(4) == "fixed"}
    return out


_FLOW_TYPES = {"UDP over IPv4": "udp4", "TCP over IPv4": "tcp4", "UDP over IPv6": "udp6", "TCP over IPv6": "tcp6"}


def parse_ntuple(text):
    """``ethtool -n IFACE`` (rxclass rules) -> list of {'loc', 'flow_type', 'dst_port', 'dst_port_mask', 'queue',
    'wildcard'}; ``wildcard`` is True when every other field (addresses, source port, TOS, VLAN, user data) is
    ignored, i.e. the rule is exactly ``flow-type T dst-port P action Q``. 'Action: Drop' gives queue -1."""
    rules, cur = [], None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r"^Filter:\s*(\d+)", line)
        if m:
            cur = {
                "loc": int(m.group(1)),
                "flow_type": None,
                "dst_port": None,
                "dst_port_mask": None,
                "queue": None,
                "wildcard": True,
            }
            rules.append(cur)
            continue
        if cur is None or ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Rule Type":
            cur["flow_type"] = _FLOW_TYPES.get(value, value)
        elif key == "Dest port":
            m = re.match(r"(\d+)\s+mask:\s*(0x[0-9a-fA-F]+)", value)
            if m:
                cur["dst_port"], cur["dst_port_mask"] = int(m.group(1)), int(m.group(2), 16)
        elif key == "Action":
            m = re.search(r"queue\s+(\d+)", value)
            cur["queue"] = int(m.group(1)) if m else (-1 if "Drop" in value else None)
        elif key in ("Src IP addr", "Dest IP addr"):
            m = re.search(r"mask:\s*(\S+)", value)
            if m and m.group(1) not in ("255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::"):
                cur["wildcard"] = False
        elif key in ("Src port", "TOS", "TCLASS"):
            m = re.search(r"mask:\s*(0x[0-9a-fA-F]+)", value)
            full = 0xFFFF if key == "Src port" else 0xFF
            if m and int(m.group(1), 16) != full:
                cur["wildcard"] = False
        elif key in ("VLAN EtherType", "VLAN", "User-defined"):
            m = re.search(r"mask:\s*(0x[0-9a-fA-F]+)", value)
            if m and int(m.group(1), 16) not in (0xFFFF, 0xFFFFFFFFFFFFFFFF):
                cur["wildcard"] = False
    return rules


def ntuple_rule_matches(rule, flow_type, dst_port, queue):
    """True when a parse_ntuple() rule is exactly ``flow-type flow_type dst-port dst_port action queue``."""
    return (
        rule["flow_type"] == flow_type
        and rule["dst_port"] == dst_port
        and rule["dst_port_mask"] == 0
        and rule["queue"] == queue
        and rule["wildcard"]
    )


def parse_interrupts(text):
    """``/proc/interrupts`` -> list of {'irq': int, 'name': str, 'counts': [per CPU], 'chip': str}.

    Only numbered IRQs; the name is the last field (``mlx5_comp3@pci:0000:03:00.0``, ``i40e-ens1f0-TxRx-3``)."""
    lines = text.splitlines()
    if not lines:
        return []
    ncpu = len(lines[0].split())
    out = []
    for line in lines[1:]:
        m = re.match(r"^\s*(\d+):\s+(.*)$", line)
        if not m:
            continue
        fields = m.group(2).split()
        counts = [int(f) for f in fields[:ncpu] if f.isdigit()]
        rest = fields[len(counts) :]
        out.append({"irq": int(m.group(1)), "counts": counts, "chip": " ".join(rest[:-1]), "name": rest[-1] if rest else ""})
    return out


#: IRQ names of a queue, by driver ({queue}, {interface}, {pci} are filled in); first match wins.
IRQ_NAME_PATTERNS = {
    "mlx5_core": ["mlx5_comp{queue}@pci:{pci}", "{interface}-{queue}"],
    "i40e": ["i40e-{interface}-TxRx-{queue}"],
    "ice": ["ice-{interface}-TxRx-{queue}"],
    "ixgbe": ["{interface}-TxRx-{queue}"],
    "igb": ["{interface}-TxRx-{queue}"],
    "bnxt_en": ["{interface}-TxRx-{queue}"],
    # {device}: the netdev's parent device (/sys/class/net/IF/device), virtioN for virtio-net; one MSI-X vector per
    # virtqueue when the device has enough (qemu's vectors= at least 2 x queues + 2)
    "virtio_net": ["{device}-input.{queue}"],
}
# why a driver that reads a setting refuses to change it, by (driver, setting)
UNSUPPORTED_HINTS = {
    ("virtio_net", "rings"): "virtio-net resizes its rings from Linux 6.0 on, and only when the device offers "
    "VIRTIO_F_RING_RESET (qemu 7.2 does); an older guest kernel or device keeps the size the device gave",
    ("virtio_net", "channels"): "virtio-net changes its queue pairs only when the device offers VIRTIO_NET_F_MQ "
    "(qemu: -device virtio-net-pci,mq=on on a multi-queue netdev)",
}
# a queue's further IRQs (drivers with separate RX and TX vectors), pinned to the same CPUs as its first
IRQ_EXTRA_NAME_PATTERNS = {
    "virtio_net": ["{device}-output.{queue}"],
}


def queue_irqs(interrupts, patterns, queues, interface="", pci="", device=""):
    """{queue: irq} for queues 0..queues-1 from parse_interrupts() entries and name patterns (str.format fields
    queue, interface, pci, device). Queues without a matching IRQ are left out."""
    by_name = {e["name"]: e["irq"] for e in interrupts}
    out = {}
    for q in range(queues):
        for pat in patterns:
            name = pat.format(queue=q, interface=interface, pci=pci, device=device)
            if name in by_name:
                out[q] = by_name[name]
                break
    return out


PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7]$")


def valid_pci(value):
    """True for a PCI address in domain:bus:device.function form (0000:03:00.0), as ethtool -i bus-info shows."""
    return isinstance(value, str) and bool(PCI_ADDRESS.match(value.strip()))


def run_ethtool(run_command, argv):
    """Run an ethtool command; EthtoolUnsupported when the driver answers EOPNOTSUPP."""
    rc, out, err = run_command(argv)
    if rc != 0:
        msg = (err or out).strip()
        if NOT_SUPPORTED.search(msg):
            raise EthtoolUnsupported(f"{' '.join(argv)}: {msg}")
        raise EthtoolError(f"{' '.join(argv)} failed (rc={rc}): {msg}")
    return out
