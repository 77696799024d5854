#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fib_routes
short_description: Install a routing table (one IPv4 prefix a line, or a single route) via one next hop
version_added: 0.4.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Installs the routes of the routing experiment (issue 27, playbooks/paper_routing.yml) in the main table of the
    network namespace the module runs in, every one via O(next_hop), marked with the route protocol number O(proto)
    so that V(absent) removes exactly what this module installed and nothing else. The main table is what
    C(bpf_fib_lookup) (bpf/xdp_router.bpf.c) and the stack look up.
  - V(full) installs every prefix of O(src) (plain or gzip, one prefix a line; blank lines and C(#) comments
    skipped), or its first O(limit) prefixes; V(single) the next hop's connected net (already there) plus
    C(0.0.0.0/1) and C(128.0.0.0/1). A table of another kind already installed with O(proto) is replaced by the
    difference (the routes no longer wanted removed, the missing ones added).
  - "Checked before any change: every prefix parses (the bad lines are named, with their numbers), the next hop is on
    a connected net of this namespace and has a permanent neighbour entry, IPv4 forwarding is on. A prefix that is
    already in the main table with another protocol (a connected or local route) is left alone and counted in
    RV(skipped)."
  - "The routes go in with C(ip -batch) in chunks of O(chunk) lines (C(ip) keeps every command of a batch in memory:
    900,000 routes in one batch took 3.6 GB of resident memory here, 50,000 about 200 MB). The time the routes took
    is RV(install_s)."
  - Idempotent by counting and comparing the prefixes that carry O(proto); a second run with the same input reports
    C(changed=false).
  - "Fast path: after an install or a verified no-change the module writes a stamp in O(stamp_dir), one per network
    namespace and O(proto) (the request: table, the file's path, size, mtime_ns and sha256, limit, next hop,
    interface; the kernel's boot id, the namespace; the route count and RV(skipped)). A V(present) whose request
    matches the stamp, in a kernel that holds exactly the stamp's number of routes with O(proto) in the main table
    (one netlink dump that the kernel filters by table and protocol, counted), does not read the file or the
    kernel's routes: C(changed=false), RV(routes) and RV(skipped) from the stamp. The next hop and forwarding are
    checked on both paths, and O(destinations) against the kernel (C(ip route get fibmatch) of each, in one batch).
    V(absent), and any change of the routes, removes the stamp first; a stamp that does not match is ignored
    (RV(stamp.why) says why) and the slow path writes a new one."
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  state:
    description: V(present) installs the table, V(absent) removes every route with O(proto) from the main table.
    type: str
    choices: [present, absent]
    default: present
  table:
    description: V(full) the prefixes of O(src), V(single) the two halves of the address space.
    type: str
    choices: [full, single]
    default: full
  src:
    description: The prefix file on the host the module runs on (V(full) only). Plain text or gzip.
    type: path
  limit:
    description: Install only the first O(limit) prefixes of O(src) (after removing duplicates); 0 = all.
    type: int
    default: 0
  next_hop:
    description: The IPv4 next hop of every route. Required for V(present).
    type: str
  proto:
    description: The route protocol number that marks this module's routes (C(ip route ... proto N)).
    type: int
    default: 211
  require_forwarding:
    description: Refuse to install when C(net.ipv4.ip_forward) is 0 in this namespace.
    type: bool
    default: true
  chunk:
    description: Routes per C(ip -batch) call.
    type: int
    default: 25000
  destinations:
    description:
      - Addresses that traffic will be sent to; each must have a covering route once the table is in (a prefix of the
        table, or a route of the main table that is not this module's). Checked before any change.
    type: list
    elements: str
    default: []
  stamp_dir:
    description:
      - Where the fast path's stamps are (a run directory on the host the module runs on; created, mode 0700). A
        directory that cannot be written only costs the fast path.
    type: path
    default: /run/xdplab/fib_routes
"""

EXAMPLES = r"""
- name: The full BGP table via the generator's receive address
  xdplab.testbed.fib_routes:
    table: full
    src: /usr/local/lib/xdplab/share/bgp_table_ipv4.txt.gz
    next_hop: 198.18.0.6

- name: A small table for a test
  xdplab.testbed.fib_routes:
    table: full
    src: /tmp/bgp_table_ipv4.txt.gz
    limit: 20000
    next_hop: 198.18.0.6

- name: The machine as found
  xdplab.testbed.fib_routes:
    state: absent
"""

RETURN = r"""
table:
  description: What is installed after the run (V(none) after V(absent)).
  returned: always
  type: str
  sample: full
routes:
  description: Routes in the main table with O(proto) after the run (in check mode, as they would be).
  returned: always
  type: int
  sample: 901899
added:
  description: Routes added by this run.
  returned: always
  type: int
  sample: 901899
removed:
  description: Routes removed by this run.
  returned: always
  type: int
  sample: 0
skipped:
  description: Prefixes of the table left out because the main table has them with another protocol (connected).
  returned: always
  type: list
  elements: str
  sample: []
install_s:
  description: Seconds the routes took to add and remove (C(ip -batch)), 0 when nothing changed.
  returned: always
  type: float
  sample: 17.8
read_s:
  description: Seconds reading and checking the prefix file took.
  returned: always
  type: float
  sample: 2.5
stamp:
  description: The fast path (V(present) only).
  returned: when state is present
  type: dict
  contains:
    path: {description: "This namespace's stamp for O(proto).", type: str}
    fast: {description: Whether the stamp matched and the prefix file and the kernel's routes were not read., type: bool}
    why: {description: "Why the stamp was not used (no stamp, the key that differs, a route count that differs).", type: str}
    written: {description: Whether this run wrote a new stamp., type: bool}
  sample: {path: /run/xdplab/fib_routes/net-4-4026532309-proto211.json, fast: true, why: null, written: false}
device:
  description: The interface of the next hop's connected net.
  returned: when state is present
  type: str
  sample: veth-dut1
triestat:
  description: /proc/net/fib_triestat after the run, parsed (per table; sizes in bytes, total in kB).
  returned: always
  type: dict
  contains:
    leaf_size: {description: Bytes per leaf., type: int}
    tnode_size: {description: Bytes per internal node., type: int}
    tables:
      description: "Per table (main, local): avg_depth, max_depth, leaves, prefixes, internal_nodes, node_sizes
        (count by child bits), pointers, null_pointers, total_kb."
      type: dict
  sample: {leaf_size: 48, tnode_size: 40, tables: {main: {avg_depth: 2.22, max_depth: 7, leaves: 840393,
           prefixes: 901902, internal_nodes: 149110, node_sizes: {"1": 37, "2": 92783}, pointers: 1890534,
           null_pointers: 901032, total_kb: 109311}}}
"""

import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes as fr
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_stamp as fs

try:
    import netaddr
except ImportError:  # the checks say so
    netaddr = None

TRIESTAT = "/proc/net/fib_triestat"
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"


class FibRoutes:
    """Reads, checks and installs or removes the module's routes."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.proto = int(self.p["proto"])

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **extra)

    def ip(self, args, data=None, check=True):
        rc, out, err = self.module.run_command(["ip"] + args, data=data, binary_data=data is not None)
        if check and rc != 0:
            self.fail(f"ip {' '.join(args[:6])}: {err.strip() or out.strip()} (rc {rc})")
        return rc, out, err

    def json(self, args):
        _rc, out, _err = self.ip(["-j"] + args)
        return self.module.from_json(out or "[]")

    def routes(self):
        """The main table in one dump (ip's numeric text output: 900,000 routes as JSON take seconds more, and ip
        filters by proto only after dumping every route): ({our prefixes}, {other prefix: proto})."""
        _rc, out, _err = self.ip(["-N", "-4", "route", "show", "table", "main"])
        ours, others = set(), {}
        mine = str(self.proto)
        for line in out.splitlines():
            fields = line.split()
            if not fields:
                continue
            proto = fields[fields.index("proto") + 1] if "proto" in fields[:-1] else "boot"
            if fields[0] in ("broadcast", "local", "unicast", "blackhole", "unreachable", "prohibit", "throw"):
                key = fr.route_key(fields[1])
            else:
                key = fr.route_key(fields[0])
            if proto == mine:
                ours.add(key)
            else:
                others[key] = proto
        return ours, others

    def installed(self):
        """Prefixes in the main table with our proto."""
        return self.routes()[0]

    def triestat(self):
        try:
            with open(TRIESTAT) as handle:
                return fr.parse_triestat(handle.read())
        except OSError as exc:
            return {"error": f"{TRIESTAT}: {exc.strerror}"}

    def connected_device(self, hop):
        """The interface whose address's net holds the next hop."""
        for link in self.json(["-4", "addr", "show"]):
            for addr in link.get("addr_info", []):
                if addr.get("family") != "inet":
                    continue
                net = netaddr.IPNetwork(f"{addr['local']}/{addr['prefixlen']}")
                if hop in net and hop != net.ip:
                    return link["ifname"], str(net.cidr)
        return None, None

    def check_next_hop(self):
        raw = self.p["next_hop"]
        if not raw:
            self.fail("next_hop is required with state present: give the IPv4 address the routes go via")
        try:
            hop = netaddr.IPAddress(raw, version=4)
        except (netaddr.AddrFormatError, ValueError):
            self.fail(f"next_hop {raw!r} is not an IPv4 address")
        device, net = self.connected_device(hop)
        if not device:
            self.fail(
                f"next_hop {raw} is not on a connected net of this namespace: no interface has an address in its "
                "net; give the address of a neighbour on the egress port's net (xdplab_generator_rx_ip)"
            )
        neigh = self.json(["-4", "neigh", "show", "to", str(hop), "dev", device])
        states = [s for n in neigh for s in n.get("state", [])]
        if "PERMANENT" not in states:
            self.fail(
                f"next_hop {raw} has no permanent neighbour entry on {device} (states: {states or 'none'}): "
                f"add one first (ip neigh replace {raw} lladdr MAC dev {device} nud permanent); a lookup without a "
                "neighbour returns NO_NEIGH and XDP passes every frame to the stack"
            )
        return str(hop), device, net

    def check_forwarding(self):
        try:
            with open(IP_FORWARD) as handle:
                on = handle.read().strip() == "1"
        except OSError as exc:
            self.fail(f"{IP_FORWARD}: {exc.strerror}")
        if not on and self.p["require_forwarding"]:
            self.fail(
                "IPv4 forwarding is disabled in this namespace (net.ipv4.ip_forward = 0): enable it first "
                "(sysctl -w net.ipv4.ip_forward=1); bpf_fib_lookup returns FWD_DISABLED and the stack drops"
            )

    def check_request(self):
        """What the call alone can tell, before the file or the kernel is read."""
        if self.p["table"] == "full" and not self.p["src"]:
            self.fail("src is required with table full: give the prefix file (one IPv4 prefix a line, plain or .gz)")
        if self.p["table"] == "full" and self.p["limit"] < 0:
            self.fail(f"limit {self.p['limit']} is negative: give 0 (every prefix) or the number to install")
        bad = [d for d in self.p["destinations"] if not _valid_v4(d)]
        if bad:
            self.fail(f"destinations: {', '.join(bad[:5])} not IPv4 addresses")

    def wanted(self):
        if self.p["table"] == "single":
            return list(fr.SINGLE_PREFIXES)
        try:
            return fr.read_prefixes(self.p["src"], limit=self.p["limit"])
        except fr.FibRoutesError as exc:
            self.fail(str(exc))

    def check_destinations(self, wanted, others):
        """Each destination has a covering route: a wanted prefix or another route of the main table."""
        if not self.p["destinations"]:
            return
        table = sorted({int(netaddr.IPNetwork(p).prefixlen) for p in list(wanted) + list(others)}, reverse=True)
        nets = set(wanted) | set(others)
        missing = []
        for dst in self.p["destinations"]:
            addr = netaddr.IPAddress(dst)
            if not any(str(netaddr.IPNetwork(f"{addr}/{length}").cidr) in nets for length in table):
                missing.append(dst)
        self.fail_uncovered(missing)

    def fail_uncovered(self, missing):
        if missing:
            self.fail(
                f"{len(missing)} of {len(self.p['destinations'])} destinations have no covering route in the table "
                f"({self.p['table']}): {', '.join(missing[:5])}; draw them within the table's prefixes, or install a "
                "table that covers them (single covers every address)"
            )

    def check_destinations_in_kernel(self):
        """The fast path's check of the destinations: the kernel's own lookup of each (one `ip -batch` of `route get
        fibmatch`: the route that covers it, or 'Network is unreachable' for a destination without one). The batch is
        a file, not ip's stdin: run_command writes all of stdin before it reads, and ip's answers (a line per
        destination) would fill the stdout pipe first."""
        dests = self.p["destinations"]
        if not dests:
            return
        path = os.path.join(self.module.tmpdir, "fib_routes_destinations.batch")
        with open(path, "w") as handle:
            handle.write("".join(f"route get fibmatch {d}\n" for d in dests))
        rc, out, err = self.ip(["-4", "-force", "-batch", path], check=False)
        failed = sorted({int(n) for n in re.findall(r"Command failed " + re.escape(path) + r":(\d+)", err)})
        if rc != 0 and not failed:
            self.fail(f"ip -batch route get of {len(dests)} destinations: {err.strip() or out.strip()} (rc {rc})")
        self.fail_uncovered([dests[n - 1] for n in failed if 0 < n <= len(dests)])

    def batch(self, lines):
        for start in range(0, len(lines), self.p["chunk"]):
            data = "\n".join(lines[start : start + self.p["chunk"]]) + "\n"
            rc, out, err = self.ip(["-batch", "-"], data=data, check=False)
            if rc != 0:
                self.fail(
                    f"ip -batch failed after {start} of {len(lines)} route commands: {err.strip() or out.strip()}; "
                    "the routes added so far carry proto "
                    f"{self.proto}: state absent removes them"
                )

    def stamp_path(self):
        """This namespace's stamp for this protocol (None when the namespace cannot be named)."""
        netns = fs.netns_id()
        return fs.stamp_path(netns, self.proto, self.p["stamp_dir"]) if netns else None

    def drop_stamp(self, path):
        """No stamp at ``path`` (before any change of the routes: a failed change leaves no stamp that claims it)."""
        if not path or self.module.check_mode:
            return
        try:
            fs.remove_stamp(path)
        except OSError as exc:
            self.fail(f"stamp {path}: {exc.strerror}; remove it by hand (the next present then reads the table)")

    def request(self, hop, device):
        """This call in the stamp's keys, or None (the prefix file cannot be read: the slow path says why)."""
        try:
            return fs.request(self.p["table"], self.p["src"], self.p["limit"], hop, device, self.proto,
                              boot=fs.boot_id(), netns=fs.netns_id())  # fmt: skip
        except OSError:
            return None

    def fast(self, path, req, t0):
        """The result without reading the prefix file or the kernel's routes, when the stamp at ``path`` matches the
        request and the kernel holds its number of routes; else (None, why)."""
        if not path or req is None or not req["boot_id"]:
            return None, "no stamp: the namespace, the boot id or the prefix file cannot be read"
        stamp = fs.read_stamp(path)
        if stamp is None:
            return None, "no stamp"
        try:
            count = fs.count_routes(self.proto)
        except fs.StampError as exc:
            return None, f"the kernel's routes could not be counted ({exc.strerror})"
        why = fs.mismatch(stamp, req, count)
        if why:
            return None, why
        self.check_destinations_in_kernel()
        result = {"changed": False, "table": self.p["table"], "routes": stamp["routes"], "added": 0, "removed": 0,
                  "skipped": list(stamp.get("skipped") or []), "device": req["device"], "install_s": 0.0,
                  "read_s": round(time.monotonic() - t0, 3), "triestat": self.triestat(),
                  "stamp": {"path": path, "fast": True, "why": None, "written": False}}  # fmt: skip
        return result, None

    def absent(self):
        self.drop_stamp(self.stamp_path())
        before = self.installed()
        result = {"changed": bool(before), "table": "none", "routes": 0, "added": 0, "removed": len(before),
                  "skipped": [], "install_s": 0.0, "read_s": 0.0}  # fmt: skip
        if before and not self.module.check_mode:
            t0 = time.monotonic()
            self.ip(["-4", "route", "flush", "table", "main", "proto", str(self.proto)])
            result["install_s"] = round(time.monotonic() - t0, 3)
            result["routes"] = len(self.installed())
        elif before:
            result["routes"] = 0
        result["triestat"] = self.triestat()
        return result

    def present(self):
        if netaddr is None:
            self.fail("the Python library netaddr is missing on this host; install python3-netaddr")
        t0 = time.monotonic()
        self.check_request()
        hop, device, _net = self.check_next_hop()
        self.check_forwarding()
        path = self.stamp_path()
        # the file's identity before it is read: a file changed while it is read leaves a stamp that will not match
        req = self.request(hop, device)
        result, why = self.fast(path, req, t0)
        if result:
            return result
        wanted = self.wanted()
        current, others = self.routes()
        skipped = [p for p in wanted if p in others]
        wanted = [p for p in wanted if p not in others]
        self.check_destinations(wanted, others)
        read_s = round(time.monotonic() - t0, 3)
        wanted_set = set(wanted)
        remove = sorted(current - wanted_set)
        add = [p for p in wanted if p not in current]
        result = {"changed": bool(remove or add), "table": self.p["table"], "added": len(add), "removed": len(remove),
                  "skipped": skipped, "device": device, "install_s": 0.0, "read_s": read_s}  # fmt: skip
        stamp = {"path": path, "fast": False, "why": why, "written": False}
        if (remove or add) and not self.module.check_mode:
            self.drop_stamp(path)
            t1 = time.monotonic()
            lines = [f"route del {p} proto {self.proto}" for p in remove]
            lines += [f"route add {p} via {hop} dev {device} proto {self.proto}" for p in add]
            self.batch(lines)
            result["install_s"] = round(time.monotonic() - t1, 3)
            result["routes"] = len(self.installed())
            if result["routes"] != len(wanted):
                self.fail(f"after the install the main table has {result['routes']} routes with proto {self.proto}, "
                          f"{len(wanted)} were wanted", **result)  # fmt: skip
        else:
            result["routes"] = len(wanted) if self.module.check_mode else len(current)
        result["triestat"] = self.triestat()
        if path and req is not None and req["boot_id"] and not self.module.check_mode:
            # installed and counted, or verified unchanged: the next present with this request may skip the reading
            try:
                fs.write_stamp(path, req, result["routes"], skipped)
                stamp["written"] = True
            except OSError as exc:
                stamp["why"] = f"{why}; no stamp written ({path}: {exc.strerror})"
        result["stamp"] = stamp
        return result

    def run(self):
        if self.p["chunk"] < 1:
            self.fail(f"chunk {self.p['chunk']}: give at least 1")
        return self.absent() if self.p["state"] == "absent" else self.present()


def _valid_v4(text):
    try:
        netaddr.IPAddress(text, version=4)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return False
    return True


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "table": {"type": "str", "choices": ["full", "single"], "default": "full"},
            "src": {"type": "path"},
            "limit": {"type": "int", "default": 0},
            "next_hop": {"type": "str"},
            "proto": {"type": "int", "default": fr.DEFAULT_PROTO},
            "require_forwarding": {"type": "bool", "default": True},
            "chunk": {"type": "int", "default": 25000},
            "destinations": {"type": "list", "elements": "str", "default": []},
            "stamp_dir": {"type": "path", "default": fs.STAMP_DIR},
        },
        supports_check_mode=True,
    )
    if not os.path.exists(TRIESTAT):
        module.fail_json(msg=f"{TRIESTAT} is missing: this kernel has no IPv4 fib trie (CONFIG_IP_FIB_TRIE)")
    module.exit_json(**FibRoutes(module).run())


if __name__ == "__main__":
    main()
