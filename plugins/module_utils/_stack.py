# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Linux stack's own counters, as nstat reads them (issue 28: where Linux forwarding's time and packets go).

- ``/proc/net/snmp`` and ``/proc/net/netstat``: pairs of lines ``Proto: Name1 Name2 ...`` / ``Proto: v1 v2 ...``
  (per network namespace), read as ``{"IpInReceives": n, "IpExtInNoECTPkts": n, ...}``, nstat's names;
- ``/proc/net/softnet_stat``: one line of hexadecimal columns per online CPU (not per namespace): processed,
  dropped (the backlog was full), time_squeeze (net_rx_action ran out of budget or time), ... and, since Linux 5.10,
  the CPU's number in column 13.

``delta(before, after)`` keeps what moved. Pure parsing: fixtures of real output drive the tests.
"""

from __future__ import annotations

PROC_SNMP = ("/proc/net/snmp", "/proc/net/netstat")
PROC_SOFTNET = "/proc/net/softnet_stat"
SOFTNET_COLUMNS = {0: "processed", 1: "dropped", 2: "time_squeeze", 9: "received_rps", 10: "flow_limit_count"}
SOFTNET_CPU_COLUMN = 12
# what the forwarding report names first: where a forwarded packet can be lost in the stack
FORWARDING_DROPS = (
    "IpInHdrErrors", "IpInAddrErrors", "IpInDiscards", "IpOutDiscards", "IpOutNoRoutes", "IpExtInNoRoutes",
    "IpExtInCsumErrors", "TcpExtIPReversePathFilter", "UdpNoPorts", "UdpInErrors", "UdpRcvbufErrors",
)  # fmt: skip


class StackError(ValueError):
    """Text that is not what the kernel writes there; the message says which line."""


def parse_snmp(text):
    """{ProtoName: value} of /proc/net/snmp or /proc/net/netstat text (nstat's names: IpInReceives, TcpExtTW...)."""
    out = {}
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) % 2:
        raise StackError(f"an odd number of lines ({len(lines)}): every header line needs its value line")
    for head, values in zip(lines[0::2], lines[1::2]):
        proto, _sep, names = head.partition(":")
        vproto, _sep2, nums = values.partition(":")
        if proto != vproto:
            raise StackError(f"header {proto!r} is followed by {vproto!r}")
        names, nums = names.split(), nums.split()
        if len(names) != len(nums):
            raise StackError(f"{proto}: {len(names)} names and {len(nums)} values")
        for name, num in zip(names, nums):
            try:
                out[proto + name] = int(num)
            except ValueError:
                raise StackError(f"{proto}{name}: {num!r} is not a number") from None
    return out


def parse_softnet(text):
    """{cpu: {processed, dropped, time_squeeze, received_rps, flow_limit_count}} of /proc/net/softnet_stat text.

    The CPU is column 13 where the kernel writes it (5.10+), else the line's index (older kernels skip offline CPUs,
    so there the index is only right when every CPU is online)."""
    out = {}
    for index, line in enumerate(text.splitlines()):
        cols = line.split()
        if not cols:
            continue
        try:
            values = [int(c, 16) for c in cols]
        except ValueError:
            raise StackError(f"softnet_stat line {index + 1} is not hexadecimal: {line!r}") from None
        cpu = values[SOFTNET_CPU_COLUMN] if len(values) > SOFTNET_CPU_COLUMN else index
        out[cpu] = {name: values[col] for col, name in SOFTNET_COLUMNS.items() if col < len(values)}
    return out


def read(snmp_paths=PROC_SNMP, softnet_path=PROC_SOFTNET):
    """{"snmp": {...}, "softnet": {cpu: {...}}} now (in the network namespace of this process)."""
    snmp = {}
    for path in snmp_paths:
        with open(path, encoding="ascii") as f:
            snmp.update(parse_snmp(f.read()))
    with open(softnet_path, encoding="ascii") as f:
        softnet = parse_softnet(f.read())
    return {"snmp": snmp, "softnet": softnet}


def _moved(before, after):
    out = {}
    for name, now in after.items():
        then = before.get(name)
        if isinstance(now, int) and isinstance(then, int) and now != then:
            out[name] = now - then
    return out


def delta(before, after, cpus=None):
    """What moved between two read()s: {"snmp": {name: delta}, "softnet": {cpu: {name: delta}}, "drops": {...}}.

    ``cpus``: keep only these CPUs' softnet lines (the DUT's). ``drops`` repeats the FORWARDING_DROPS that moved.
    Keys of softnet are strings (JSON)."""
    snmp = _moved(before.get("snmp") or {}, after.get("snmp") or {})
    keep = None if cpus is None else {int(c) for c in cpus}
    softnet = {}
    for cpu, now in (after.get("softnet") or {}).items():
        if keep is not None and int(cpu) not in keep:
            continue
        moved = _moved((before.get("softnet") or {}).get(cpu) or {}, now)
        if moved:
            softnet[str(cpu)] = moved
    return {"snmp": snmp, "softnet": softnet, "drops": {k: snmp[k] for k in FORWARDING_DROPS if snmp.get(k)}}
