#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xdp_lb_config
short_description: Fill and read the maps of the load balancer bpf/xdp_lb (or of its far-side check xdp_lb_check)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Finds the XDP program attached to O(interface) (attached first by M(xdplab.testbed.xdp_program)) and, with
    O(state=present), writes the load balancer's plan into its maps - one VIP per O(vips) (the address O(vip_ip),
    port O(port_base) + i, O(proto)), O(reals_per_vip) reals each with consecutive addresses in O(reals_net), each
    VIP's consistent-hash ring of 65,537 slots filled with Maglev's permutation (as Katran fills its rings), and the
    outer header's source address O(outer_src).
  - O(role=balancer) fills xdp_lb's vip_map, reals, ch_rings and lb_ctl; O(role=check) fills xdp_lb_check's
    check_vips, check_reals (each real's address and its VIP) and check_ctl, on the generator's port where the
    encapsulated frames come back.
  - O(state=read) changes nothing and returns the program's counters summed over the CPUs (O(role=balancer) LRU hits
    and misses, what was not balanced, per-VIP packets and bytes; O(role=check) the outer destinations' verdicts).
  - Idempotent; the plan's digest is kept in the control map and a plan already there is not written again.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Says whether the maps would change (the plan's digest), writes nothing.
  diff_mode:
    support: none
    description: No diff.
options:
  interface:
    description: The interface whose attached XDP program (xdp_lb or xdp_lb_check) holds the maps.
    type: str
    required: true
  role:
    description: C(balancer) (bpf/xdp_lb.bpf.c) or C(check) (bpf/xdp_lb_check.bpf.c).
    type: str
    choices: [balancer, check]
    default: balancer
  state:
    description: C(present) writes the plan; C(read) returns the counters.
    type: str
    choices: [present, read]
    default: present
  vip_ip:
    description: The VIPs' address (the DUT's address the generator sends to). Required with O(state=present).
    type: str
  port_base:
    description: VIP i's port is O(port_base) + i (the generator's flow i).
    type: int
    default: 12
  vips:
    description: How many VIPs (the experiment - one per DUT core). At most 16 (bpf/xdp_lb.h LB_MAX_VIPS).
    type: int
    default: 1
  reals_per_vip:
    description: Reals of each VIP; all reals together at most 4,096 (the reals map, LB_MAX_REALS), refused with the number.
    type: int
    default: 100
  reals_net:
    description: The net the reals' addresses are taken from, consecutively (VIP 0's first).
    type: str
    default: 10.200.0.0/16
  proto:
    description: The VIPs' protocol.
    type: str
    choices: [udp, tcp]
    default: udp
  outer_src:
    description: The outer IPv4 header's source address (default O(vip_ip)).
    type: str
  hash_src_only:
    description: Hash the source address only into the ring (no ports), instead of the 5-tuple.
    type: bool
    default: false
requirements:
  - libbpf 1.x (libbpf.so.1), loaded with ctypes
  - root (CAP_BPF, CAP_NET_ADMIN)
notes:
  - The ring fill is plugins/module_utils/_lb.py maglev_ring; every real gets 655 or 656 of the 65,537 slots with
    100 reals.
"""

EXAMPLES = r"""
- name: The balancer's maps, one VIP per core
  xdplab.testbed.xdp_lb_config:
    interface: veth-dut0
    vip_ip: 198.18.0.2
    vips: 2
    reals_per_vip: 100

- name: Its counters
  xdplab.testbed.xdp_lb_config:
    interface: veth-dut0
    state: read
  register: lb
"""

RETURN = r"""
plan:
  description: What the maps hold (C(state=present)) - VIPs, reals, ring size, the outer source, the digest.
  returned: state=present
  type: dict
prog_id:
  description: The attached program's id.
  returned: always
  type: int
counters:
  description: >-
    The counters summed over the CPUs; balancer - lru_hit, lru_miss, not_vip, not_lb, no_real, encap_fail, tx and
    per_vip (a list of packets, bytes); check - real_ok, other_vip, not_real, bad_csum, bad_src, not_ipip.
  returned: state=read
  type: dict
"""

import ctypes
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb, _libbpf

MAPS = {
    "balancer": {"program": "xdp_lb", "vips": "vip_map", "reals": "reals", "ctl": "lb_ctl", "ring": "ch_rings"},
    "check": {"program": "xdp_lb_check", "vips": "check_vips", "reals": "check_reals", "ctl": "check_ctl"},
}


def _update(fd, key, value):
    lib = _libbpf.load_library()
    k = ctypes.create_string_buffer(bytes(key), len(key))
    v = ctypes.create_string_buffer(bytes(value), len(value))
    ret = lib.bpf_map_update_elem(fd, k, v, 0)
    if ret < 0:
        raise _libbpf.LibbpfError(f"bpf_map_update_elem: {ctypes.get_errno()}", errno=ctypes.get_errno())


def _lookup(fd, key, value_size):
    lib = _libbpf.load_library()
    k = ctypes.create_string_buffer(bytes(key), len(key))
    buf = ctypes.create_string_buffer(value_size)
    return buf.raw if lib.bpf_map_lookup_elem(fd, k, buf) == 0 else None


class XdpLbConfig:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.names = MAPS[self.p["role"]]

    def fail(self, msg, **kw):
        self.module.fail_json(msg=msg, **kw)

    def prog(self):
        try:
            ifindex = socket.if_nametoindex(self.p["interface"])
        except OSError:
            self.fail(f"interface {self.p['interface']}: no such interface in this network namespace")
        prog_id, _mode = _libbpf.attached_program(ifindex)
        if not prog_id:
            self.fail(f"interface {self.p['interface']}: no XDP program attached; attach {self.names['program']} first "
                      "(xdplab.testbed.xdp_program)")  # fmt: skip
        maps = {}
        for mid in _libbpf.prog_info(prog_id)["map_ids"]:
            info = _libbpf.map_info(mid)
            maps[info["name"]] = info
        missing = [m for key, m in self.names.items() if key != "program" and m not in maps]
        if missing:
            self.fail(f"interface {self.p['interface']}: the attached program (id {prog_id}) has no map(s) "
                      f"{', '.join(missing)}: it is not {self.names['program']} (bpf/{self.names['program']}.bpf.c)")  # fmt: skip
        return prog_id, maps

    def run(self):
        prog_id, maps = self.prog()
        if self.p["state"] == "read":
            return {"changed": False, "prog_id": prog_id, "counters": self.counters(maps)}
        if not self.p.get("vip_ip"):
            self.fail("vip_ip: required with state present (the address the generator sends to)")
        try:
            p = self.p
            lb_plan = _lb.plan(p["vip_ip"], p["port_base"], p["vips"], p["reals_per_vip"], p["reals_net"], p["proto"],
                               p.get("outer_src"), p["hash_src_only"])  # fmt: skip
        except _lb.LbError as exc:
            self.fail(str(exc))
        digest = _lb.digest(lb_plan)
        marker = int(digest[:8], 16) | 1
        summary = {
            "vips": [dict({k: v[k] for k in ("index", "addr", "port", "proto")}, reals=len(v["reals"]),
                          first_real=v["reals"][0], last_real=v["reals"][-1]) for v in lb_plan["vips"]],
            "reals": len(lb_plan["reals"]),
            "reals_net": lb_plan["reals_net"],
            "ring_size": lb_plan["ring_size"],
            "outer_src": lb_plan["outer_src"],
            "hash": "source address" if lb_plan["flags"] else "5-tuple",
            "fill": "maglev",
            "digest": digest,
        }  # fmt: skip
        ctl_fd = _libbpf.map_fd_by_id(maps[self.names["ctl"]]["id"])
        try:
            raw = _lookup(ctl_fd, b"\0\0\0\0", 8)
            current = int.from_bytes(raw[4:8], "little") if raw else 0
            if current == marker:
                return {"changed": False, "prog_id": prog_id, "plan": summary}
            if self.module.check_mode:
                return {"changed": True, "prog_id": prog_id, "plan": summary}
            self.write(maps, lb_plan)
            _update(ctl_fd, b"\0\0\0\0", _lb.ctl_value(lb_plan["outer_src"])[:4] + marker.to_bytes(4, "little"))
        finally:
            _libbpf._close(ctl_fd)
        return {"changed": True, "prog_id": prog_id, "plan": summary}

    def write(self, maps, lb_plan):
        role = self.p["role"]
        fds = {}
        try:
            for key in ("vips", "reals", "ring"):
                if key in self.names:
                    fds[key] = _libbpf.map_fd_by_id(maps[self.names[key]]["id"])
            if role == "balancer":
                for index, addr in enumerate(lb_plan["reals"]):
                    _update(fds["reals"], index.to_bytes(4, "little"), _lb.real_value(addr))
                for start, slots in _lb.ring_values(lb_plan):
                    for offset, real in enumerate(slots):
                        _update(fds["ring"], (start + offset).to_bytes(4, "little"), real.to_bytes(4, "little"))
            else:
                for vip in lb_plan["vips"]:
                    for addr in vip["reals"]:
                        _update(fds["reals"], _lb.addr_key(addr), vip["index"].to_bytes(4, "little"))
            # the VIPs last: no packet is balanced before its ring and reals are there
            for vip in lb_plan["vips"]:
                _update(
                    fds["vips"], _lb.vip_key(vip["addr"], vip["port"], vip["proto"]), _lb.vip_meta(vip["index"], lb_plan["flags"])
                )
        except _libbpf.LibbpfError as exc:
            self.fail(f"cannot write the {role}'s maps: {exc}")
        finally:
            for fd in fds.values():
                _libbpf._close(fd)

    def counters(self, maps):
        role = self.p["role"]
        stats_map = "lb_stats" if role == "balancer" else "check_stats"
        names = _lb.STATS if role == "balancer" else _lb.CHECK_STATS
        if stats_map not in maps:
            self.fail(f"the attached program has no map {stats_map}")
        rows = _libbpf.read_percpu_array(maps[stats_map]["id"])
        out = {name: sum(int.from_bytes(v[:8], "little") for v in rows[i]) for i, name in enumerate(names)}
        if role == "balancer" and "vip_stats" in maps:
            per_vip = []
            for cpus in _libbpf.read_percpu_array(maps["vip_stats"]["id"]):
                per_vip.append({"packets": sum(int.from_bytes(v[:8], "little") for v in cpus),
                                "bytes": sum(int.from_bytes(v[8:16], "little") for v in cpus)})  # fmt: skip
            while per_vip and not per_vip[-1]["packets"]:
                per_vip.pop()
            out["per_vip"] = per_vip
        return out


def argument_spec():
    return {
        "interface": {"type": "str", "required": True},
        "role": {"type": "str", "choices": ["balancer", "check"], "default": "balancer"},
        "state": {"type": "str", "choices": ["present", "read"], "default": "present"},
        "vip_ip": {"type": "str"},
        "port_base": {"type": "int", "default": 12},
        "vips": {"type": "int", "default": 1},
        "reals_per_vip": {"type": "int", "default": 100},
        "reals_net": {"type": "str", "default": "10.200.0.0/16"},
        "proto": {"type": "str", "choices": ["udp", "tcp"], "default": "udp"},
        "outer_src": {"type": "str"},
        "hash_src_only": {"type": "bool", "default": False},
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        module.exit_json(**XdpLbConfig(module).run())
    except _libbpf.LibbpfError as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
