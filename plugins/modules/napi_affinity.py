#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: napi_affinity
short_description: Pin the threaded NAPI instances of an interface's RX queues to CPUs
version_added: 0.3.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Pins the kernel thread (C(napi/IF-NAPIID)) of each RX queue of O(interface) to one CPU, round-robin over
    O(cpus) (RX queue q runs on C(cpus[q % len(cpus)])), in the network namespace the module runs in.
  - "The virtual lab's NIC CPU (issue 28): on veth the DUT's NAPI thread does what a NIC's DMA does for the systems
    whose NAPI only feeds a socket (DPDK's net_af_xdp, AF_XDP). The experiment moves those threads onto the lab's
    NIC CPUs (C(xdplab_nic_cpus)) for such a trial and back onto the DUT's CPUs after it; XDP and the Linux stack keep
    theirs on the DUT's CPUs, where their work is."
  - The queues and their NAPI threads are read through the netdev generic netlink family (Linux 6.10 or newer);
    the interface needs threaded NAPI (C(/sys/class/net/IF/threaded) = 1), as the role M(xdplab.testbed.vlab)
    sets it.
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  interface:
    description: The interface whose RX queues' NAPI threads are pinned.
    type: str
    required: true
  cpus:
    description: CPUs to pin to, round-robin over the RX queues. Every CPU must be online.
    type: list
    elements: int
    required: true
"""

EXAMPLES = r"""
- name: The NIC's work of a DPDK trial on the NIC CPU
  xdplab.testbed.napi_affinity:
    interface: veth-dut0
    cpus: "{{ xdplab_nic_cpus }}"

- name: Back on the DUT's CPUs
  xdplab.testbed.napi_affinity:
    interface: veth-dut0
    cpus: "{{ xdplab_dut_cpus }}"
"""

RETURN = r"""
threads:
  description: Each RX queue's NAPI thread, after the run (in check mode, as it would be).
  returned: always
  type: list
  elements: dict
  contains:
    queue: {description: RX queue., type: int}
    napi_id: {description: NAPI instance id., type: int}
    pid: {description: The kernel thread's pid., type: int}
    cpu: {description: The CPU it is pinned to., type: int}
    before: {description: The CPUs it was allowed to run on before., type: list, elements: int}
  sample: [{queue: 0, napi_id: 8193, pid: 4321, cpu: 3, before: [1]}]
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import format_cpu_list, online_cpus
from ansible_collections.xdplab.testbed.plugins.module_utils._vlab_netlink import napi_threads
from ansible_collections.xdplab.testbed.plugins.module_utils._vlab_spec import napi_cpu_for_queue


class NapiAffinityError(Exception):
    """What stops the pinning; the message says what to do."""


class NapiAffinity:
    """Reads the interface's NAPI threads and pins each one to its CPU."""

    def __init__(self, interface, cpus, check_mode=False, online=None, threads=None, affinity=None):
        self.interface, self.cpus, self.check_mode = interface, list(cpus), check_mode
        self._online, self._threads = online, threads
        self._affinity = affinity or (os.sched_getaffinity, os.sched_setaffinity)

    def threads(self):
        if self._threads is not None:
            return self._threads(self.interface)
        try:
            ifindex = socket.if_nametoindex(self.interface)
        except OSError:
            raise NapiAffinityError(
                f"interface {self.interface} does not exist here; this host has {', '.join(sorted(os.listdir('/sys/class/net')))}"
            ) from None
        try:
            return napi_threads(None, ifindex)
        except OSError as exc:
            raise NapiAffinityError(
                f"{self.interface}: cannot read its NAPI instances through the netdev netlink family ({exc}); "
                "this needs Linux 6.10 or newer"
            ) from None

    def run(self):
        if not self.cpus:
            raise NapiAffinityError("cpus is empty; give at least one CPU")
        online = self._online if self._online is not None else online_cpus()
        offline = sorted(set(self.cpus) - set(online))
        if offline:
            raise NapiAffinityError(
                f"cpus: CPU {format_cpu_list(offline)} is not online (online: {format_cpu_list(online)})"
            )
        get, set_ = self._affinity
        out, changed = [], False
        for item in self.threads():
            q, pid = item["queue"], item["pid"]
            if pid is None or not item.get("napi_id"):
                raise NapiAffinityError(
                    f"{self.interface}: RX queue {q} has no NAPI kernel thread; turn threaded NAPI on "
                    f"(echo 1 > /sys/class/net/{self.interface}/threaded, as the role vlab does with threaded_napi)"
                )
            cpu = napi_cpu_for_queue(q, self.cpus)
            before = sorted(get(pid))
            if before != [cpu]:
                changed = True
                if not self.check_mode:
                    set_(pid, {cpu})
            out.append({"queue": q, "napi_id": item["napi_id"], "pid": pid, "cpu": cpu, "before": before})
        return {"changed": changed, "threads": out}


def main():
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "cpus": {"type": "list", "elements": "int", "required": True},
        },
        supports_check_mode=True,
    )
    try:
        result = NapiAffinity(module.params["interface"], module.params["cpus"], module.check_mode).run()
    except NapiAffinityError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
