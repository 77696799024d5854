#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: housekeeping
short_description: Keep the tool's own processes (controller, forks, module processes) on housekeeping CPUs
version_added: 0.3.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Moves the process tree this module was started from onto O(cpus), so that nothing the run starts afterwards
    competes with the system under test on the DUT's CPUs or is counted as its load.
  - "The tree is found by walking up from the module's own process: the controller (the top-most C(ansible-playbook)
    process of the chain, that is its main process, not a fork) when the host is a network namespace of the
    controller (the virtual lab), else the SSH session of the connection (a remote host; with the default
    ControlPersist every later task of the run goes through that session). Every thread of every process in the
    tree gets the affinity O(cpus); the forks, module processes and samplers started later inherit it."
  - Writes O(state_file) on the host; modules that sample on the DUT (M(xdplab.testbed.cpu_usage)) pin themselves
    to the CPUs it names when they start, which covers processes started outside the tree (a new SSH connection).
  - Threads whose affinity already lies inside O(cpus), and threads bound only to CPUs of O(avoid) (the DUT's own
    work, e.g. testpmd lcores), are left alone.
  - Processes started outside the tree (other users, other tools) are not moved; M(xdplab.testbed.cpu_usage) lists
    those that ran on the DUT's CPUs (RV(xdplab.testbed.cpu_usage#module:foreign)).
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    description: Reports the threads it would move and whether the state file would change, without changing either.
  diff_mode:
    support: none
options:
  cpus:
    description:
      - The housekeeping CPUs. Every one must be online.
      - On the virtual lab of a 2-CPU machine this is the generator's CPU (C(0)); inventories name it as
        C(xdplab_housekeeping_cpus).
    type: list
    elements: int
    required: true
  avoid:
    description:
      - The DUT's CPUs (C(xdplab_dut_cpus)). O(cpus) must not share any of them, else the module fails naming both.
    type: list
    elements: int
    default: []
  state_file:
    description: Where the housekeeping CPUs of this host are written for modules that pin themselves.
    type: path
    default: /run/xdplab/housekeeping.json
notes:
  - CPU affinity is inherited across fork and exec, and a process may widen its own affinity again (DPDK's EAL and
    the generator set their threads' CPUs themselves), so the processes under test are not limited by this.
  - A plain C(ansible-playbook) run is covered as soon as this module has run once; run it first in a play.
requirements:
  - Linux (sched_setaffinity)
seealso:
  - module: xdplab.testbed.cpu_usage
"""

EXAMPLES = r"""
- name: Keep the tool's own processes off the DUT's CPUs
  xdplab.testbed.housekeeping:
    cpus: "{{ xdplab_housekeeping_cpus }}"
    avoid: "{{ xdplab_dut_cpus }}"
"""

RETURN = r"""
cpus:
  description: The housekeeping CPUs.
  returned: always
  type: list
  elements: int
  sample: [0]
anchor:
  description:
    - The root of the tree that was pinned; C(kind) is C(controller) (ansible-playbook's main process) or C(ssh)
      (the connection's SSH session). Null when neither was found among the module's ancestors (then only the
      state file is written).
  returned: always
  type: dict
  sample: {pid: 4711, comm: ansible-playboo, kind: controller}
moved:
  description: Threads whose affinity was (check mode - would be) set to RV(cpus), at most the first 50.
  returned: always
  type: list
  elements: dict
  sample: [{pid: 4711, tid: 4711, comm: ansible-playboo, from: [0, 1], to: [0]}]
moved_count:
  description: Number of threads moved.
  returned: always
  type: int
  sample: 5
state_file:
  description: The state file written.
  returned: always
  type: str
  sample: /run/xdplab/housekeeping.json
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _housekeeping as hk
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, format_cpu_list, online_cpus


class Housekeeping:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "cpus": sorted(set(self.p["cpus"])), "anchor": None, "moved": [],
                       "moved_count": 0, "state_file": self.p["state_file"]}

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def check(self):
        cpus, avoid = set(self.p["cpus"]), set(self.p["avoid"])
        if not cpus:
            self.fail("cpus: give at least one housekeeping CPU (xdplab_housekeeping_cpus)")
        try:
            online = online_cpus()
        except (OSError, CpuListError) as exc:
            self.fail(f"cannot read the online CPUs: {exc}")
        offline = sorted(cpus - set(online))
        if offline:
            self.fail(f"xdplab_housekeeping_cpus: CPU {format_cpu_list(offline)} is not online on this host "
                      f"(online: {format_cpu_list(online)})")
        shared = sorted(cpus & avoid)
        if shared:
            self.fail(f"xdplab_housekeeping_cpus {format_cpu_list(cpus)} shares CPU {format_cpu_list(shared)} with "
                      f"xdplab_dut_cpus {format_cpu_list(avoid)}: the tool would run on the DUT's CPUs; give "
                      f"housekeeping CPUs that the DUT does not use")

    def run(self):
        self.check()
        cpus = self.result["cpus"]
        anchor, kind = hk.find_anchor(os.getpid())
        if anchor is not None:
            self.result["anchor"] = {"pid": anchor["pid"], "comm": anchor["comm"], "kind": kind}
            moved = hk.pin_tree(anchor["pid"], cpus, keep=self.p["avoid"], check_mode=self.module.check_mode)
        else:
            self.module.warn("neither ansible-playbook nor an SSH session is among this module's ancestors: "
                             "only the state file is written")
            moved = []
        self.result["moved"], self.result["moved_count"] = moved[:50], len(moved)
        state = {"cpus": cpus, "avoid": sorted(set(self.p["avoid"]))}
        if self.module.check_mode:
            changed_state = hk.read_state(self.p["state_file"]) != state
        else:
            try:
                changed_state = hk.write_state(state, self.p["state_file"])
            except OSError as exc:
                self.fail(f"cannot write {self.p['state_file']}: {exc}")
        self.result["changed"] = bool(moved) or changed_state
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "cpus": {"type": "list", "elements": "int", "required": True},
            "avoid": {"type": "list", "elements": "int", "default": []},
            "state_file": {"type": "path", "default": hk.STATE_FILE},
        },
        supports_check_mode=True,
    )
    module.exit_json(**Housekeeping(module).run())


if __name__ == "__main__":
    main()
