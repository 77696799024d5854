#!/usr/bin/python
# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: vlab_topology
short_description: Converge the virtual lab (network namespaces joined by veth pairs) from data
version_added: 0.1.0
description:
  - Creates (O(state=present)) or removes (O(state=absent)) named network namespaces and the veth
    pairs between them, on the machine the module runs on (the controller, for the virtual lab).
  - For each end of a veth pair it converges the interface name, MAC address, IPv4 address and prefix,
    RX/TX queue count, MTU, administrative state, GRO, threaded NAPI and the CPU of each RX queue's
    NAPI kernel thread, and adds permanent neighbour entries so the generator needs no ARP.
  - All input is validated (with netaddr) before anything is changed; a malformed MAC, address,
    prefix, queue count, MTU or a CPU that is not online fails the task and names the culprit.
  - Idempotent (a second run with the same data reports no change); supports check mode and diff mode.
author:
  - xdplab.testbed developers (!UNKNOWN)
requirements:
  - Linux with named network namespaces (C(/run/netns)), iproute2 C(ip), C(ethtool).
  - Linux 6.10 or newer for O(links[].ends[].napi_cpus) (the netdev netlink family reports the NAPI
    instance of each RX queue and the pid of its kernel thread).
  - netaddr (Python library) on the host that runs the module.
  - root.
options:
  state:
    description:
      - V(present) creates and converges everything described.
      - V(absent) deletes the namespaces in O(namespaces) and those the ends of O(links) live in; deleting
        a namespace deletes the veth ends inside it and therefore their peers.
    type: str
    choices: [present, absent]
    default: present
  namespaces:
    description:
      - Names of the network namespaces (as C(ip netns add) creates them).
      - Namespaces used by O(links[].ends[].namespace) are added automatically.
    type: list
    elements: str
    default: []
  links:
    description:
      - veth pairs; each has exactly two ends, each end in a namespace.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Label of the pair, used in results and messages. Default C(END1-END2).
        type: str
      queues:
        description:
          - Default RX and TX queue count of both ends (C(numrxqueues)/C(numtxqueues) at creation).
          - A pair whose ends were created with fewer queues is re-created; a lower count is set with
            C(ethtool -L IF rx N tx N).
        type: int
        default: 1
      mtu:
        description: Default MTU of both ends. Left alone when not set.
        type: int
      up:
        description: Default administrative state of both ends.
        type: bool
        default: true
      static_neighbors:
        description:
          - Add a permanent neighbour entry on each end for the peer end's IPv4 address and MAC
            (both ends need O(links[].ends[].address)).
        type: bool
        default: true
      ends:
        description: The two ends of the pair.
        type: list
        elements: dict
        required: true
        suboptions:
          namespace:
            description: Network namespace of this end.
            type: str
            required: true
          interface:
            description: Interface name (at most 15 characters).
            type: str
            required: true
          mac:
            description: MAC address, for example C(02:58:44:50:00:01) (locally administered). Random when not set.
            type: str
          address:
            description:
              - IPv4 address with prefix length, for example C(198.18.0.1/30). Other IPv4 addresses on the
                interface are removed. Left alone when not set.
            type: str
          queues:
            description: RX and TX queue count of this end. Default O(links[].queues).
            type: int
          mtu:
            description: MTU of this end. Default O(links[].mtu).
            type: int
          up:
            description: Administrative state of this end. Default O(links[].up).
            type: bool
          gro:
            description:
              - Generic receive offload. On veth, GRO on makes the device create one NAPI instance per RX
                queue without an XDP program attached. Left alone when not set, unless
                O(links[].ends[].threaded_napi) or O(links[].ends[].napi_cpus) need it (then turned on).
            type: bool
          threaded_napi:
            description:
              - Run the NAPI poll of this end in kernel threads C(napi/IF-NAPIID) (C(/sys/class/net/IF/threaded)
                inside the namespace). Implied by O(links[].ends[].napi_cpus).
            type: bool
          napi_cpus:
            description:
              - CPUs the NAPI kernel threads are pinned to, round-robin by RX queue (queue q runs on
                C(napi_cpus[q % len(napi_cpus)])). Every CPU must be online.
            type: list
            elements: int
  neighbors:
    description: Extra permanent neighbour (ARP) entries.
    type: list
    elements: dict
    default: []
    suboptions:
      namespace:
        description: Namespace of the interface.
        type: str
        required: true
      interface:
        description: Interface the entry belongs to.
        type: str
        required: true
      address:
        description: IPv4 address of the neighbour.
        type: str
        required: true
      mac:
        description: MAC address of the neighbour.
        type: str
        required: true
attributes:
  check_mode:
    support: full
    description: Reports what would be created, changed or removed without touching the host.
  diff_mode:
    support: full
    description: Before and after of the namespaces and each veth end (MAC, MTU, state, addresses, queues, GRO, threaded NAPI).
notes:
  - "Verified on Linux 6.18 (veth):"
  - "GRO on a veth end makes its NAPI instances exist (one per RX queue) without any XDP program; with
    GRO off there is no NAPI, and writing C(1) to C(/sys/class/net/IF/threaded) fails with
    C(Operation not supported)."
  - "NAPI exists only while the device is up; with threaded NAPI on, one kernel thread per RX queue is named
    C(napi/IF-NAPIID) (truncated to 15 characters in C(comm)). This module finds them through the netdev
    netlink family (queue -> NAPI id -> thread pid), not by name."
  - "With GRO on, attaching and detaching an XDP program (native C(xdpdrv) or generic C(xdpgeneric)) keeps
    the same NAPI instances and kernel threads: same pids, CPU affinity preserved."
  - "With GRO off, attaching a native XDP program creates new NAPI instances and new kernel threads (new ids,
    new pids, affinity all CPUs) and detaching destroys them. Turning GRO off and on again also re-creates them.
    Setting the device down and up keeps the NAPI ids but starts new kernel threads (new pids, affinity all
    CPUs). Lowering the queue count (C(ethtool -L)) removes the threads of the dropped queues and keeps the others;
    raising it adds new NAPI instances and threads for the new queues. The threaded setting is remembered, the CPU
    pinning of a new thread is not: run this module again after such a change (it reports the re-pinned threads)."
  - "veth does not report which NAPI instance serves an RX queue through netlink (queue-get has no napi-id);
    it creates one NAPI per RX queue in queue order, so the q-th smallest NAPI id is RX queue q. Verified by
    sending traffic into each queue and watching the per-queue counters (C(ethtool -S)) and the run time of
    each kernel thread."
  - "C(ip netns delete) only removes the name; a namespace still used by a process (for example a running
    generator) lives on until that process exits."
  - "The spec validation lives in C(module_utils/_vlab_spec.py) (pure, unit tested), the netdev generic-netlink
    client in C(module_utils/_vlab_netlink.py); this file only converges."
  - "Why a hand-written netlink client and not pyroute2 (tried: pyroute2 0.9.7 on Linux 6.18, creating namespaces,
    a veth pair with 2 RX/TX queues, threaded NAPI, dumping queues and NAPI instances): pyroute2 creates namespaces
    and veth pairs with queue counts well, but it has no netdev family, so queue-get/napi-get still need hand-written
    message definitions (the same constants), threaded NAPI is still a sysfs write and GRO and channels are still
    ethtool. The links are converged with iproute2, which the netns connection needs anyway. The client also serves
    xdplab.testbed.host_preflight on lab hosts under their system Python, where pyroute2 is not installed; the
    standard library client travels inside the module and needs nothing there."
seealso:
  - plugin: xdplab.testbed.netns
    plugin_type: connection
"""

EXAMPLES = r"""
- name: Build the virtual lab (tg <-> dut)
  xdplab.testbed.vlab_topology:
    state: present
    namespaces: [xdplab-tg, xdplab-dut]
    links:
      - name: tg-dut
        queues: 2
        mtu: 1500
        ends:
          - namespace: xdplab-tg
            interface: veth-tg0
            mac: "02:58:44:50:00:01"
            address: 198.18.0.1/30
            gro: true
            napi_cpus: [0]
          - namespace: xdplab-dut
            interface: veth-dut0
            mac: "02:58:44:50:00:02"
            address: 198.18.0.2/30
            gro: true
            threaded_napi: true
            napi_cpus: [0, 1]   # rx-0 -> CPU 0, rx-1 -> CPU 1

- name: Tear the virtual lab down
  xdplab.testbed.vlab_topology:
    state: absent
    namespaces: [xdplab-tg, xdplab-dut]
"""

RETURN = r"""
namespaces:
  description: Namespaces created or removed by this run.
  returned: always
  type: dict
  contains:
    created:
      description: Namespaces created.
      type: list
      elements: str
      returned: always
      sample: [xdplab-tg, xdplab-dut]
    removed:
      description: Namespaces deleted.
      type: list
      elements: str
      returned: always
      sample: []
links:
  description: veth pairs created, re-created (wrong peer or too few queues) or removed.
  returned: always
  type: dict
  contains:
    created:
      description: Labels of pairs created.
      type: list
      elements: str
      returned: always
      sample: [tg-dut]
    recreated:
      description: Labels of pairs deleted and created again.
      type: list
      elements: str
      returned: always
      sample: []
    removed:
      description: Labels of pairs that existed and were removed with their namespace.
      type: list
      elements: str
      returned: always
      sample: []
interfaces:
  description: Per veth end, the settings this run changed.
  returned: always
  type: list
  elements: dict
  sample: [{namespace: xdplab-dut, interface: veth-dut0, changed: [queues 2 -> 1, gro on]}]
napi_threads:
  description: NAPI kernel threads of the ends with O(links[].ends[].napi_cpus), after the run.
  returned: when state is present
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the interface.
      type: str
      returned: always
    interface:
      description: Interface name.
      type: str
      returned: always
    queue:
      description: RX queue index.
      type: int
      returned: always
    napi_id:
      description: NAPI instance id.
      type: int
      returned: always
    pid:
      description: pid of the kernel thread.
      type: int
      returned: always
    name:
      description: Thread name C(napi/IF-NAPIID).
      type: str
      returned: always
    cpu:
      description: CPU the thread is pinned to.
      type: int
      returned: always
    changed:
      description: Whether this run changed the thread's affinity.
      type: bool
      returned: always
  sample: [{namespace: xdplab-dut, interface: veth-dut0, queue: 0, napi_id: 8193, pid: 4321,
            name: napi/veth-dut0-8193, cpu: 1, changed: true}]
pinned:
  description: Threads whose affinity this run changed, pid -> CPU.
  returned: always
  type: dict
  sample: {"4321": 1}
neighbors:
  description: Permanent neighbour entries added or replaced.
  returned: always
  type: list
  elements: dict
  sample: [{namespace: xdplab-tg, interface: veth-tg0, address: 198.18.0.2, mac: "02:58:44:50:00:02"}]
actions:
  description: What was done (or, in check mode, would be done), in order.
  returned: always
  type: list
  elements: str
  sample: ["create namespace xdplab-tg", "create veth pair tg-dut"]
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import online_cpus
from ansible_collections.xdplab.testbed.plugins.module_utils._vlab_netlink import NETNS_RUN_DIR, napi_threads
from ansible_collections.xdplab.testbed.plugins.module_utils._vlab_spec import (
    HAS_NETADDR,
    NETADDR_ERR,
    VlabError,
    napi_cpu_for_queue,
    normalize_spec,
)

# --------------------------------------------------------------------------------------------
# the work


class VlabTopology:
    def __init__(self, module):
        self.module = module
        self.check_mode = module.check_mode
        self.ip = module.get_bin_path("ip", required=True)
        self.ethtool = None
        self.actions = []
        self.result = {
            "changed": False,
            "namespaces": {"created": [], "removed": []},
            "links": {"created": [], "recreated": [], "removed": []},
            "interfaces": [],
            "pinned": {},
            "neighbors": [],
            "actions": self.actions,
        }
        self._iface_changes = {}

    # ---- helpers
    def run(self, args, check=True, data=None):
        rc, out, err = self.module.run_command(args, data=data)
        if check and rc != 0:
            raise VlabError(f"command failed ({rc}): {' '.join(args)}: {(err or out).strip()}")
        return rc, out, err

    def change(self, description, args=None, func=None, iface=None):
        """Record a change; perform it unless in check mode."""
        self.result["changed"] = True
        self.actions.append(description)
        if iface is not None:
            self._iface_changes.setdefault(iface, []).append(description.split(": ", 1)[-1])
        if self.check_mode:
            return
        if args is not None:
            self.run(args)
        if func is not None:
            func()

    def nsexec(self, ns, *args):
        return [self.ip, "netns", "exec", ns, *args]

    def ethtool_bin(self):
        if self.ethtool is None:
            self.ethtool = self.module.get_bin_path("ethtool", required=False)
            if not self.ethtool:
                raise VlabError("ethtool not found; install it (apt-get install ethtool) or run role xdplab.testbed.vlab")
        return self.ethtool

    @staticmethod
    def existing_namespaces():
        try:
            return sorted(os.listdir(NETNS_RUN_DIR))
        except FileNotFoundError:
            return []

    def link_info(self, ns, ifname):
        if ns not in self.existing_namespaces():
            return None
        rc, out, _err = self.run([self.ip, "-n", ns, "-j", "-d", "link", "show", "dev", ifname], check=False)
        if rc != 0:
            return None
        data = json.loads(out)
        return data[0] if data else None

    def ipv4_addresses(self, ns, ifname):
        _rc, out, _err = self.run([self.ip, "-n", ns, "-j", "-4", "addr", "show", "dev", ifname])
        data = json.loads(out or "[]")
        return [(a["local"], int(a["prefixlen"])) for d in data for a in d.get("addr_info", []) if a.get("family") == "inet"]

    def channels(self, ns, ifname):
        _rc, out, _err = self.run(self.nsexec(ns, self.ethtool_bin(), "-l", ifname))
        current = out.split("Current hardware settings:", 1)[-1]
        values = dict(re.findall(r"^(RX|TX):\s+(\d+)", current, re.M))
        return int(values.get("RX", 0)), int(values.get("TX", 0))

    def gro(self, ns, ifname):
        _rc, out, _err = self.run(self.nsexec(ns, self.ethtool_bin(), "-k", ifname))
        m = re.search(r"^generic-receive-offload:\s+(on|off)", out, re.M)
        return m is not None and m.group(1) == "on"

    def threaded(self, ns, ifname):
        rc, out, _err = self.run(self.nsexec(ns, "cat", f"/sys/class/net/{ifname}/threaded"), check=False)
        return rc == 0 and out.strip() not in ("", "0", "disabled")

    # ---- state: absent
    def absent(self, namespaces, links):
        existing = self.existing_namespaces()
        for link in links:
            if any(end["namespace"] in existing and self.link_info(end["namespace"], end["interface"]) for end in link["ends"]):
                self.result["links"]["removed"].append(link["name"])
        for ns in namespaces:
            if ns in existing:
                self.change(f"delete namespace {ns}", [self.ip, "netns", "delete", ns])
                self.result["namespaces"]["removed"].append(ns)
        return {"namespaces": [n for n in namespaces if n in existing]}, {"namespaces": []}

    # ---- state: present
    def snapshot(self, namespaces, links):
        existing = self.existing_namespaces()
        snap = {"namespaces": [n for n in namespaces if n in existing], "links": {}}
        for link in links:
            ends = []
            for end in link["ends"]:
                info = self.link_info(end["namespace"], end["interface"])
                if info is None:
                    ends.append({"namespace": end["namespace"], "interface": end["interface"], "exists": False})
                    continue
                item = {
                    "namespace": end["namespace"],
                    "interface": end["interface"],
                    "exists": True,
                    "mac": info.get("address"),
                    "mtu": info.get("mtu"),
                    "up": "UP" in info.get("flags", []),
                    "addresses": [f"{a}/{p}" for a, p in self.ipv4_addresses(end["namespace"], end["interface"])],
                    "queues": list(self.channels(end["namespace"], end["interface"])),
                    "gro": self.gro(end["namespace"], end["interface"]),
                    "threaded": self.threaded(end["namespace"], end["interface"]),
                }
                ends.append(item)
            snap["links"][link["name"]] = ends
        return snap

    def ensure_namespaces(self, namespaces):
        existing = self.existing_namespaces()
        for ns in namespaces:
            if ns not in existing:
                self.change(f"create namespace {ns}", [self.ip, "netns", "add", ns])
                self.result["namespaces"]["created"].append(ns)
            if not self.check_mode:
                _rc, out, _err = self.run([self.ip, "-n", ns, "-j", "link", "show", "dev", "lo"])
                lo = json.loads(out)[0]
                if "UP" not in lo.get("flags", []):
                    self.change(f"{ns}: set lo up", [self.ip, "-n", ns, "link", "set", "dev", "lo", "up"])

    def pair_ok(self, link):
        """(ok, reason): do both ends exist as one veth pair with enough queues?"""
        a, b = link["ends"]
        ia = self.link_info(a["namespace"], a["interface"])
        ib = self.link_info(b["namespace"], b["interface"])
        if ia is None and ib is None:
            return None, "absent"
        for end, info in ((a, ia), (b, ib)):
            where = f"{end['interface']} in {end['namespace']}"
            if info is None:
                return False, f"{where} is missing"
            if (info.get("linkinfo") or {}).get("info_kind") != "veth":
                return False, f"{where} is not a veth"
            if int(info.get("num_rx_queues", 1)) < end["queues"] or int(info.get("num_tx_queues", 1)) < end["queues"]:
                return False, f"{where} was created with fewer than {end['queues']} queues"
        if ia.get("link_index") != ib.get("ifindex") or ib.get("link_index") != ia.get("ifindex"):
            return False, "the two ends are not peers of each other"
        return True, "ok"

    def create_pair(self, link):
        a, b = link["ends"]

        def end_args(end):
            args = [end["interface"]]
            if end["mac"]:
                args += ["address", end["mac"]]
            if end["mtu"]:
                args += ["mtu", str(end["mtu"])]
            return [*args, "numtxqueues", str(end["queues"]), "numrxqueues", str(end["queues"])]

        cmd = [self.ip, "-n", a["namespace"], "link", "add", *end_args(a), "type", "veth", "peer", "name"]
        cmd += [*end_args(b), "netns", b["namespace"]]
        return cmd

    def delete_end_args(self, end):
        return [self.ip, "-n", end["namespace"], "link", "delete", "dev", end["interface"]]

    def ensure_link(self, link):
        ok, reason = self.pair_ok(link)
        if ok:
            return True
        if ok is False:
            for end in link["ends"]:
                if self.link_info(end["namespace"], end["interface"]) is not None:
                    self.change(f"delete {end['interface']} in {end['namespace']} ({reason})", self.delete_end_args(end))
            self.result["links"]["recreated"].append(link["name"])
        else:
            self.result["links"]["created"].append(link["name"])
        self.change(f"create veth pair {link['name']}", self.create_pair(link))
        return not self.check_mode

    def ensure_end(self, end, peer_exists):
        ns, ifname = end["namespace"], end["interface"]
        tag = (ns, ifname)
        if not peer_exists:
            # created (check mode: would be created) with everything below set at creation or right after
            for what, wanted in (("gro", end["gro"]), ("threaded", end["threaded"]), ("address", end["address"])):
                if wanted:
                    self.change(f"{ns}/{ifname}: set {what}", iface=tag)
            if end["up"]:
                self.change(f"{ns}/{ifname}: set up", iface=tag)
            return
        info = self.link_info(ns, ifname)
        base = [self.ip, "-n", ns, "link", "set", "dev", ifname]
        rx, tx = self.channels(ns, ifname)
        if (rx, tx) != (end["queues"], end["queues"]):
            q = str(end["queues"])
            self.change(
                f"{ns}/{ifname}: queues rx {rx} tx {tx} -> {q}",
                self.nsexec(ns, self.ethtool_bin(), "-L", ifname, "rx", q, "tx", q),
                iface=tag,
            )
        if end["mtu"] and int(info.get("mtu", 0)) != end["mtu"]:
            self.change(f"{ns}/{ifname}: mtu {info.get('mtu')} -> {end['mtu']}", [*base, "mtu", str(end["mtu"])], iface=tag)
        if end["mac"] and (info.get("address") or "").lower() != end["mac"]:
            self.change(f"{ns}/{ifname}: mac {info.get('address')} -> {end['mac']}", [*base, "address", end["mac"]], iface=tag)
        is_up = "UP" in info.get("flags", [])
        if end["up"] != is_up:
            state = "up" if end["up"] else "down"
            self.change(f"{ns}/{ifname}: set {state}", [*base, state], iface=tag)
        if end["gro"] is not None and self.gro(ns, ifname) != end["gro"]:
            state = "on" if end["gro"] else "off"
            self.change(f"{ns}/{ifname}: gro {state}", self.nsexec(ns, self.ethtool_bin(), "-K", ifname, "gro", state), iface=tag)
        if end["threaded"] is not None and self.threaded(ns, ifname) != end["threaded"]:
            value = "1" if end["threaded"] else "0"
            self.change(
                f"{ns}/{ifname}: threaded napi {value}",
                self.nsexec(ns, "/bin/sh", "-c", f"echo {value} > /sys/class/net/{ifname}/threaded"),
                iface=tag,
            )
        if end["address"]:
            want = end["address"]
            have = self.ipv4_addresses(ns, ifname)
            for addr, prefix in have:
                if (addr, prefix) != want:
                    self.change(
                        f"{ns}/{ifname}: remove address {addr}/{prefix}",
                        [self.ip, "-n", ns, "addr", "del", f"{addr}/{prefix}", "dev", ifname],
                        iface=tag,
                    )
            if want not in have:
                cidr = f"{want[0]}/{want[1]}"
                self.change(
                    f"{ns}/{ifname}: address {cidr}", [self.ip, "-n", ns, "addr", "replace", cidr, "dev", ifname], iface=tag
                )

    def ensure_neighbor(self, nb):
        ns, ifname, addr = nb["namespace"], nb["interface"], nb["address"]
        mac = nb["mac"]
        if mac is None:
            peer = nb["peer"]
            info = self.link_info(peer["namespace"], peer["interface"])
            if info is None:  # check mode, pair not created yet
                self.change(f"{ns}/{ifname}: neighbour {addr} (peer MAC)")
                return
            mac = info["address"].lower()
        current = None
        if self.link_info(ns, ifname) is not None:
            _rc, out, _err = self.run([self.ip, "-n", ns, "-j", "-4", "neigh", "show", "dev", ifname, "to", addr])
            for entry in json.loads(out or "[]"):
                if entry.get("dst") == addr:
                    current = entry
        if current and (current.get("lladdr") or "").lower() == mac and "PERMANENT" in current.get("state", []):
            return
        self.change(
            f"{ns}/{ifname}: neighbour {addr} lladdr {mac} permanent",
            [self.ip, "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", ifname, "nud", "permanent"],
        )
        self.result["neighbors"].append({"namespace": ns, "interface": ifname, "address": addr, "mac": mac})

    def ensure_napi(self, end):
        ns, ifname = end["namespace"], end["interface"]
        info = self.link_info(ns, ifname)
        threads = []
        if info is None:
            for q in range(end["queues"]):
                cpu = napi_cpu_for_queue(q, end["napi_cpus"])
                self.change(f"{ns}/{ifname}: pin napi thread of rx-{q} to CPU {cpu}", iface=(ns, ifname))
            return threads
        try:
            queues = napi_threads(ns, int(info["ifindex"]))
        except OSError as exc:
            raise VlabError(
                f"{ns}/{ifname}: cannot read NAPI instances through the netdev netlink family ({exc}); "
                "napi_cpus needs Linux 6.10 or newer"
            ) from exc
        for item in queues:
            q = item["queue"]
            cpu = napi_cpu_for_queue(q, end["napi_cpus"])
            pid = item["pid"]
            if pid is None or not item["napi_id"]:
                if self.check_mode:
                    self.change(f"{ns}/{ifname}: pin napi thread of rx-{q} to CPU {cpu}", iface=(ns, ifname))
                    continue
                raise VlabError(
                    f"{ns}/{ifname}: RX queue {q} has no NAPI kernel thread (napi id {item['napi_id']}); "
                    "the interface needs to be up with gro: true and threaded_napi: true"
                )
            changed = os.sched_getaffinity(pid) != {cpu}
            if changed:
                self.change(
                    f"{ns}/{ifname}: pin napi/{ifname}-{item['napi_id']} (pid {pid}, rx-{q}) to CPU {cpu}",
                    func=lambda pid=pid, cpu=cpu: os.sched_setaffinity(pid, {cpu}),
                    iface=(ns, ifname),
                )
                self.result["pinned"][str(pid)] = cpu
            threads.append(
                {
                    "namespace": ns,
                    "interface": ifname,
                    "queue": q,
                    "napi_id": item["napi_id"],
                    "pid": pid,
                    "name": f"napi/{ifname}-{item['napi_id']}",
                    "cpu": cpu,
                    "changed": changed,
                }
            )
        return threads

    def present(self, namespaces, links, neighbors):
        before = self.snapshot(namespaces, links)
        self.ensure_namespaces(namespaces)
        napi = []
        for link in links:
            exists = self.ensure_link(link)
            for end in link["ends"]:
                self.ensure_end(end, exists)
        for nb in neighbors:
            self.ensure_neighbor(nb)
        for link in links:
            for end in link["ends"]:
                if end["napi_cpus"]:
                    napi.extend(self.ensure_napi(end))
        self.result["napi_threads"] = napi
        after = self.snapshot(namespaces, links) if not self.check_mode else self.desired(namespaces, links)
        return before, after

    @staticmethod
    def desired(namespaces, links):
        snap = {"namespaces": list(namespaces), "links": {}}
        for link in links:
            snap["links"][link["name"]] = [
                {
                    "namespace": e["namespace"],
                    "interface": e["interface"],
                    "exists": True,
                    "mac": e["mac"],
                    "mtu": e["mtu"],
                    "up": e["up"],
                    "addresses": [f"{e['address'][0]}/{e['address'][1]}"] if e["address"] else None,
                    "queues": [e["queues"], e["queues"]],
                    "gro": e["gro"],
                    "threaded": e["threaded"],
                }
                for e in link["ends"]
            ]
        return snap

    def run_state(self):
        params = self.module.params
        if os.geteuid() != 0:
            raise VlabError("vlab_topology must run as root (network namespaces, veth, NAPI threads); use become: true")
        namespaces, links, neighbors = normalize_spec(params, online_cpus())
        if params["state"] == "absent":
            before, after = self.absent(namespaces, links)
        else:
            before, after = self.present(namespaces, links, neighbors)
        self.result["interfaces"] = [
            {"namespace": ns, "interface": ifname, "changed": changes} for (ns, ifname), changes in self._iface_changes.items()
        ]
        if self.module._diff:
            self.result["diff"] = {"before": before, "after": after}
        return self.result


def main():
    end_spec = {
        "namespace": {"type": "str", "required": True},
        "interface": {"type": "str", "required": True},
        "mac": {"type": "str"},
        "address": {"type": "str"},
        "queues": {"type": "int"},
        "mtu": {"type": "int"},
        "up": {"type": "bool"},
        "gro": {"type": "bool"},
        "threaded_napi": {"type": "bool"},
        "napi_cpus": {"type": "list", "elements": "int"},
    }
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "namespaces": {"type": "list", "elements": "str", "default": []},
            "links": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "name": {"type": "str"},
                    "queues": {"type": "int", "default": 1},
                    "mtu": {"type": "int"},
                    "up": {"type": "bool", "default": True},
                    "static_neighbors": {"type": "bool", "default": True},
                    "ends": {"type": "list", "elements": "dict", "required": True, "options": end_spec},
                },
            },
            "neighbors": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "namespace": {"type": "str", "required": True},
                    "interface": {"type": "str", "required": True},
                    "address": {"type": "str", "required": True},
                    "mac": {"type": "str", "required": True},
                },
            },
        },
        supports_check_mode=True,
    )
    if not HAS_NETADDR:
        module.fail_json(msg=missing_required_lib("netaddr"), exception=str(NETADDR_ERR))
    try:
        result = VlabTopology(module).run_state()
    except VlabError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
