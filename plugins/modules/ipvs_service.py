#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ipvs_service
short_description: IPVS virtual services of the load-balancer experiment (ipvsadm -s sh, tunnel mode)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - The Linux kernel's load balancer as the paper ran it against Katran - one virtual service per VIP (O(vip_ip), port
    O(port_base) + i, UDP) with the source-hashing scheduler and its sh-port flag (C(-s sh -b sh-port)), each of its
    O(reals_per_vip) reals in tunnel mode (C(-i), IPIP), reverse-path filtering off (C(rp_filter) 0 on C(all),
    C(default) and O(interfaces)). The plan is M(xdplab.testbed.xdp_lb_config)'s (plugins/module_utils/_lb.py).
  - O(state=probe) reads whether the kernel has IPVS (/proc/net/ip_vs, C(CONFIG_IP_VS) in the kernel's config, the
    ip_vs module) and where ipvsadm is, and changes nothing; O(state=present) fails with that reason before any
    change on a kernel without IPVS.
  - O(state=stats) returns C(ipvsadm -Ln --stats --exact) parsed (each service and real, and the totals).
  - O(state=absent) removes the plan's services (only those) and puts rp_filter back as O(state=present) found it.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Says whether the services or rp_filter would change; runs nothing that changes them.
  diff_mode:
    support: none
    description: No diff.
options:
  state:
    description: C(present), C(absent), C(stats) or C(probe).
    type: str
    choices: [present, absent, stats, probe]
    default: present
  vip_ip:
    description: The VIPs' address. Required with O(state=present) and O(state=absent).
    type: str
  port_base:
    description: VIP i's port is O(port_base) + i.
    type: int
    default: 12
  vips:
    description: How many VIPs.
    type: int
    default: 1
  reals_per_vip:
    description: Reals of each VIP.
    type: int
    default: 100
  reals_net:
    description: The net the reals' addresses are taken from.
    type: str
    default: 10.200.0.0/16
  interfaces:
    description: Interfaces whose rp_filter is set to 0 besides C(all) and C(default).
    type: list
    elements: str
    default: []
  state_file:
    description: Where O(state=present) keeps the rp_filter values it found, for O(state=absent).
    type: path
    default: /run/xdplab/ipvs_rp_filter.json
requirements:
  - ipvsadm (Debian package ipvsadm), a kernel with CONFIG_IP_VS (y, or m with the module)
"""

EXAMPLES = r"""
- name: Does the DUT's kernel have IPVS?
  xdplab.testbed.ipvs_service:
    state: probe
  register: ipvs

- name: One sh service per VIP, 100 reals each in tunnel mode
  xdplab.testbed.ipvs_service:
    vip_ip: 198.18.0.2
    vips: 2
    interfaces: [veth-dut0, veth-dut1]
"""

RETURN = r"""
support:
  description: The kernel's IPVS (supported, release, proc_ip_vs, config, module, reason) and C(ipvsadm), its path.
  returned: always
  type: dict
stats:
  description: ipvsadm -Ln --stats --exact parsed (kind, columns, services) and C(totals) (Conns, InPkts, ... summed).
  returned: state=stats
  type: dict
commands:
  description: The ipvsadm commands run (or that would run).
  returned: state=present or absent
  type: list
  elements: str
"""

import json
import os
import shlex
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb

SYSCTL = "/proc/sys/net/ipv4/conf/{}/rp_filter"


class IpvsService:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.ipvsadm = shutil.which("ipvsadm") or next(
            (p for p in ("/usr/sbin/ipvsadm", "/sbin/ipvsadm") if os.path.exists(p)), None
        )

    def support(self):
        return dict(_lb.ipvs_support(), ipvsadm=self.ipvsadm)

    def need(self, support):
        if not support["supported"]:
            self.module.fail_json(msg=f"ipvs: {support['reason']}", support=support)
        if not self.ipvsadm:
            self.module.fail_json(msg="ipvs: ipvsadm is not installed: apt-get install ipvsadm (Debian main)", support=support)

    def run_ipvsadm(self, argv, check=True):
        rc, out, err = self.module.run_command([self.ipvsadm] + argv[1:])
        if check and rc != 0:
            self.module.fail_json(msg=f"ipvs: {shlex.join(argv)} failed (rc {rc}): {err.strip() or out.strip()}")
        return rc, out

    def plan(self):
        if not self.p.get("vip_ip"):
            self.module.fail_json(msg="ipvs: vip_ip is required (the address the generator sends to)")
        try:
            return _lb.plan(self.p["vip_ip"], self.p["port_base"], self.p["vips"], self.p["reals_per_vip"], self.p["reals_net"])
        except _lb.LbError as exc:
            self.module.fail_json(msg=f"ipvs: {exc}")

    def rp_filters(self):
        names = ["all", "default"] + list(self.p["interfaces"])
        out = {}
        for name in names:
            try:
                with open(SYSCTL.format(name), encoding="utf-8") as fh:
                    out[name] = int(fh.read().strip())
            except OSError as exc:
                self.module.fail_json(msg=f"ipvs: cannot read {SYSCTL.format(name)} ({exc}): is {name} an interface here?")
        return out

    def set_rp_filters(self, values):
        for name, value in values.items():
            with open(SYSCTL.format(name), "w", encoding="utf-8") as fh:
                fh.write(f"{value}\n")

    def services(self):
        _rc, out = self.run_ipvsadm(["ipvsadm", "-Ln"])
        return _lb.parse_ipvsadm(out)

    def present(self, support):
        self.need(support)
        lb_plan = self.plan()
        wanted = {
            (v["proto"], f"{v['addr']}:{v['port']}"): sorted(f"{r}:{v['port']}" for r in v["reals"]) for v in lb_plan["vips"]
        }
        have = {(s["proto"], s["addr"]): sorted(r["addr"] for r in s["reals"]) for s in self.services()["services"]}
        missing = {k: v for k, v in wanted.items() if have.get(k) != v}
        filters = self.rp_filters()
        off = {name: 0 for name, value in filters.items() if value != 0}
        changed = bool(missing or off)
        commands = []
        if missing:
            for vip in lb_plan["vips"]:
                key = (vip["proto"], f"{vip['addr']}:{vip['port']}")
                if key not in missing:
                    continue
                if key in have:
                    commands.append(["ipvsadm", "-D", "-u", key[1]])
                one = dict(lb_plan, vips=[vip])
                commands += _lb.ipvsadm_commands(one)
        if changed and not self.module.check_mode:
            if off:
                os.makedirs(os.path.dirname(self.p["state_file"]), exist_ok=True)
                if not os.path.exists(self.p["state_file"]):
                    with open(self.p["state_file"], "w", encoding="utf-8") as fh:
                        json.dump(filters, fh)
                self.set_rp_filters(off)
            for argv in commands:
                self.run_ipvsadm(argv)
        return {"changed": changed, "support": support, "commands": [shlex.join(c) for c in commands],
                "rp_filter": dict(filters, **off)}  # fmt: skip

    def absent(self, support):
        if not support["supported"] or not self.ipvsadm:
            # nothing can have been set up on this kernel; rp_filter as found
            return dict(self.restore_rp_filter(), support=support, commands=[])
        lb_plan = self.plan()
        have = {(s["proto"], s["addr"]) for s in self.services()["services"]}
        commands = [c for c in _lb.ipvsadm_delete_commands(lb_plan) if ("udp" if c[2] == "-u" else "tcp", c[3]) in have]
        if commands and not self.module.check_mode:
            for argv in commands:
                self.run_ipvsadm(argv)
        restored = self.restore_rp_filter()
        return {"changed": bool(commands) or restored["changed"], "support": support,
                "commands": [shlex.join(c) for c in commands]}  # fmt: skip

    def restore_rp_filter(self):
        path = self.p["state_file"]
        if not os.path.exists(path):
            return {"changed": False}
        with open(path, encoding="utf-8") as fh:
            found = json.load(fh)
        if not self.module.check_mode:
            self.set_rp_filters({k: v for k, v in found.items() if os.path.exists(SYSCTL.format(k))})
            os.unlink(path)
        return {"changed": True, "rp_filter": found}

    def stats(self, support):
        self.need(support)
        _rc, out = self.run_ipvsadm(["ipvsadm", "-Ln", "--stats", "--exact"])
        parsed = _lb.parse_ipvsadm(out)
        return {"changed": False, "support": support, "stats": dict(parsed, totals=_lb.ipvs_totals(parsed))}


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent", "stats", "probe"], "default": "present"},
            "vip_ip": {"type": "str"},
            "port_base": {"type": "int", "default": 12},
            "vips": {"type": "int", "default": 1},
            "reals_per_vip": {"type": "int", "default": 100},
            "reals_net": {"type": "str", "default": "10.200.0.0/16"},
            "interfaces": {"type": "list", "elements": "str", "default": []},
            "state_file": {"type": "path", "default": "/run/xdplab/ipvs_rp_filter.json"},
        },
        supports_check_mode=True,
    )
    svc = IpvsService(module)
    support = svc.support()
    state = module.params["state"]
    if state == "probe":
        module.exit_json(changed=False, support=support)
    module.exit_json(**getattr(svc, state)(support))


if __name__ == "__main__":
    main()
