# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The routing experiment's route table (issue 27, playbooks/paper_routing.yml): pure functions that the module
xdplab.testbed.fib_routes and the trial's provider share. Reading a prefix file (plain or gzip, one IPv4 prefix a
line), parsing /proc/net/fib_triestat, the names of bpf/xdp_router's per-fib-return-code counters, and the
per-trial ``routing`` section of the record.

No Ansible import: tests/unit/test_fib_routes.py tests it.
"""

from __future__ import annotations

import gzip
import re

from ansible_collections.xdplab.testbed.plugins.module_utils._addresses import MARTIAN_NETS

try:
    import netaddr
except ImportError:  # pragma: no cover - the module says so
    netaddr = None

# the route protocol number the module installs its routes with (`ip route ... proto 211`): what it removes and
# counts is exactly that, in the main table (bpf_fib_lookup looks up the main table unless told otherwise);
# /etc/iproute2/rt_protos leaves 0-4 and a few others to the kernel and daemons, 211 to nobody
DEFAULT_PROTO = 211

# bpf/xdp_router.h: fib_counts slots (0..9 the kernel's BPF_FIB_LKUP_RET_* codes, then the program's own)
FIB_COUNTER_NAMES = {
    0: "success",
    1: "blackhole",
    2: "unreachable",
    3: "prohibit",
    4: "not_fwded",
    5: "fwd_disabled",
    6: "unsupp_lwt",
    7: "no_neigh",
    8: "frag_needed",
    9: "no_src_addr",
    11: "other",
    12: "not_ipv4",
    13: "ttl_expired",
    14: "no_tx_port",
    15: "redirected",
}

# what no destination may be in: the one list of martian space (module_utils/_addresses.py MARTIAN_NETS)
MARTIAN = tuple(net for net, _why in MARTIAN_NETS)

# the single table: the next hop's connected net (already there) plus two halves of the address space
SINGLE_PREFIXES = ("0.0.0.0/1", "128.0.0.0/1")


class FibRoutesError(ValueError):
    """Bad input; the message names the file and line or the field, and says what to do."""


def _open(path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="ascii", errors="replace")
    return open(path, encoding="ascii", errors="replace")


def read_prefixes(path, limit=0, max_errors=5):
    """The prefixes of ``path`` (plain or .gz; one IPv4 prefix a line, blank lines and ``#`` comments skipped), in
    file order, each once, as canonical strings (``a.b.c.d/len``); the first ``limit`` of them when ``limit`` > 0.
    Every line is parsed before anything is returned: FibRoutesError names up to ``max_errors`` bad lines (file,
    line number, text, why)."""
    if netaddr is None:
        raise FibRoutesError("the Python library netaddr is missing on the DUT; install python3-netaddr")
    out, seen, errors = [], set(), []
    try:
        handle = _open(path)
    except OSError as exc:
        raise FibRoutesError(f"prefix file {path}: {exc.strerror}; give a readable file on the DUT") from None
    with handle:
        for number, raw in enumerate(handle, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            why = None
            try:
                net = netaddr.IPNetwork(text, version=4)
            except (netaddr.AddrFormatError, ValueError, TypeError):
                why = "not an IPv4 prefix"
            else:
                if "/" not in text:
                    why = "no prefix length (write a.b.c.d/len)"
                elif net.ip != net.network:
                    why = f"host bits set (the prefix is {net.cidr})"
            if why:
                errors.append(f"{path} line {number}: {text!r}: {why}")
                if len(errors) >= max_errors:
                    break
                continue
            key = str(net.cidr)
            if key not in seen:
                seen.add(key)
                out.append(key)
                if limit and len(out) >= limit and not errors:
                    break
    if errors:
        raise FibRoutesError(
            "the prefix file has lines that are not IPv4 prefixes; fix or remove them (nothing was changed): "
            + "; ".join(errors)
        )
    if not out:
        raise FibRoutesError(f"prefix file {path} has no prefix; give one IPv4 prefix a line")
    return out


def route_key(dst):
    """`ip -j route` writes a host route without its /32 and the default route as 'default'."""
    if dst == "default":
        return "0.0.0.0/0"
    return dst if "/" in dst else f"{dst}/32"


_TABLE_RE = re.compile(r"^(\S[^:]*):\s*$")
_FIELDS = {
    "Aver depth": ("avg_depth", float),
    "Max depth": ("max_depth", int),
    "Leaves": ("leaves", int),
    "Prefixes": ("prefixes", int),
    "Internal nodes": ("internal_nodes", int),
    "Pointers": ("pointers", int),
    "Null ptrs": ("null_pointers", int),
}


def parse_triestat(text):
    """/proc/net/fib_triestat as {leaf_size, tnode_size, tables: {name: {avg_depth, max_depth, leaves, prefixes,
    internal_nodes, node_sizes {bits: count}, pointers, null_pointers, total_kb}}} (names lower case: main, local).
    The kernel writes 'Null ptrs' and 'Total size' without indentation, after 'Pointers'; both belong to the table
    above them."""
    out = {"leaf_size": None, "tnode_size": None, "tables": {}}
    m = re.search(r"size of leaf:\s*(\d+) bytes, size of tnode:\s*(\d+) bytes", text)
    if m:
        out["leaf_size"], out["tnode_size"] = int(m.group(1)), int(m.group(2))
    table = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("Basic info"):
            continue
        m = _TABLE_RE.match(line)
        if m and not line.startswith((" ", "\t")):
            table = out["tables"].setdefault(m.group(1).strip().lower(), {})
            continue
        if table is None:
            continue
        if ":" in stripped and re.match(r"^\d+:", stripped):
            # the internal nodes by their number of child bits: '1: 37  2: 92783 ...'
            table["node_sizes"] = {int(b): int(n) for b, n in re.findall(r"(\d+):\s*(\d+)", stripped)}
            continue
        name, _sep, value = stripped.partition(":")
        name, value = name.strip(), value.strip()
        if name in _FIELDS:
            key, kind = _FIELDS[name]
            try:
                table[key] = kind(value.split()[0])
            except (ValueError, IndexError):
                table[key] = None
        elif name == "Total size":
            m = re.match(r"(\d+)\s*kB", value)
            table["total_kb"] = int(m.group(1)) if m else None
    return out


def fib_counts(values_by_slot):
    """bpf/xdp_router's fib_counts (summed over CPUs, {slot: count}) by name; slots without a name are kept as
    ``slot_N``."""
    out = {}
    for slot, value in sorted((int(k), int(v)) for k, v in (values_by_slot or {}).items()):
        out[FIB_COUNTER_NAMES.get(slot, f"slot_{slot}")] = value
    return out


def counts_delta(after, before):
    """What moved between two fib_counts reads (names -> count)."""
    before = before or {}
    return {k: int(v) - int(before.get(k, 0)) for k, v in (after or {}).items()}


def draw_in_table(prefixes, count, seed, exclude=()):
    """``count`` unique addresses drawn with random.Random(seed) from the table's prefixes: a prefix picked uniformly,
    then an address in it (not its network or broadcast address when it has them), never in ``exclude`` (CIDRs: the
    martian space, the lab's connected nets). Every address has a covering route of the table by construction; the
    same table, count and seed give the same list (single and full share it)."""
    import random

    if count < 1:
        raise FibRoutesError(f"destinations {count}: give at least 1")
    nets = [netaddr.IPNetwork(p) for p in prefixes]
    excluded = netaddr.IPSet(exclude)
    if not nets:
        raise FibRoutesError("the table has no prefix to draw destinations in")
    rng = random.Random(seed)
    out, seen = [], set()
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > count * 50:
            raise FibRoutesError(
                f"could draw only {len(out)} of {count} distinct destinations in the table; give fewer destinations"
            )
        net = nets[rng.randrange(len(nets))]
        size = net.size
        first, span = (1, size - 2) if size > 2 else (0, size)
        addr = netaddr.IPAddress(int(net.first) + first + rng.randrange(span))
        if addr in excluded or int(addr) in seen:
            continue
        seen.add(int(addr))
        out.append(str(addr))
    return out


def _median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def routing_markdown(records):
    """The report's "Route tables" section, from the records' result.details.routing (the routing experiment, issue
    27): per table, its routes, the install time (the trial that installed it) and the trie (fib_triestat); per
    system and table, what the router's lookups returned (bpf/xdp_router's counts, summed over the trials). Empty
    when no record has a routing section, so that other experiments' reports do not change."""
    routing = [
        (rec, rec["result"]["details"]["routing"])
        for rec in records
        if rec.get("status") == "ok" and isinstance(((rec.get("result") or {}).get("details") or {}).get("routing"), dict)
    ]
    if not routing:
        return ""
    tables = {}
    for _rec, sec in routing:
        entry = tables.setdefault(sec.get("table"), {"routes": set(), "install_s": [], "read_s": [], "trie": None})
        if sec.get("routes") is not None:
            entry["routes"].add(sec["routes"])
        if sec.get("installed_now"):
            entry["install_s"].append(sec.get("install_s"))
        entry["read_s"].append(sec.get("read_s"))
        entry["trie"] = sec.get("trie") or entry["trie"]
    lines = [
        "## Route tables",
        "",
        "Installed by the module fib_routes via the generator's receive address (route protocol 211, main table), once "
        "per table and kept for the trials that share it; install s: the routes' `ip -batch` time of the trial that "
        "installed them (the median where several did); the trie: /proc/net/fib_triestat's main table on the DUT.",
        "",
        "| table | routes | install s | check s (median) | trie depth (avg / max) | leaves | prefixes | internal nodes "
        "| trie kB |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name in sorted(tables, key=str):
        entry = tables[name]
        trie = entry["trie"] or {}
        install = _median(entry["install_s"])
        check = _median(entry["read_s"])
        lines.append(
            "| %s | %s | %s | %s | %s / %s | %s | %s | %s | %s |"
            % (
                name,
                ", ".join(str(r) for r in sorted(entry["routes"])) or "-",
                "-" if install is None else "%.2f" % install,
                "-" if check is None else "%.2f" % check,
                trie.get("avg_depth", "-"),
                trie.get("max_depth", "-"),
                trie.get("leaves", "-"),
                trie.get("prefixes", "-"),
                trie.get("internal_nodes", "-"),
                trie.get("total_kb", "-"),
            )
        )
    counted = {}
    for rec, sec in routing:
        if not sec.get("fib_counts"):
            continue
        key = (rec["point"].get("system"), sec.get("table"), rec["point"].get("destinations"))
        total = counted.setdefault(key, {})
        for name, value in sec["fib_counts"].items():
            total[name] = total.get(name, 0) + int(value)
    if counted:
        names = [n for n in FIB_COUNTER_NAMES.values() if any(c.get(n) for c in counted.values())]
        lines += [
            "",
            "What bpf/xdp_router's lookups returned (its per-CPU counts by bpf_fib_lookup return code, summed over the "
            "trials, from the measure's start to its collect); every code that never occurred is left out.",
            "",
            "| system | table | destinations | " + " | ".join(names) + " |",
            "|---|---|---:|" + "---:|" * len(names),
        ]
        for (system, table, dests), total in sorted(counted.items(), key=lambda item: [str(x) for x in item[0]]):
            lines.append("| %s | %s | %s | " % (system, table, dests) + " | ".join(str(total.get(n, 0)) for n in names) + " |")
    dests = {json_key(sec.get("destinations")) for _rec, sec in routing if sec.get("destinations")}
    if dests:
        listed = "; ".join(sorted(dests))
        lines += ["", "Destinations (drawn in the table's prefixes; count, seed, sha256 of the list): %s." % listed]
    return "\n".join(lines) + "\n"


def json_key(destinations):
    """One destination list as the report names it."""
    return "%s, seed %s, sha256 %s" % (destinations.get("count"), destinations.get("seed"), str(destinations.get("sha256"))[:12])
