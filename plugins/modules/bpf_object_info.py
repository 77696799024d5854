#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bpf_object_info
short_description: List the programs of a BPF object file and check that one is an XDP program
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Opens a BPF object file with libbpf (through ctypes) without loading anything into the kernel, and returns
    its programs (name, ELF section, program type) and the file's SHA-256.
  - With O(program), fails unless that program is in the object and is an XDP program; the message names the
    programs that are in the object (the check module M(xdplab.testbed.xdp_program) makes before it attaches).
    Role M(xdplab.testbed.bpf_programs) runs it on every custom program it installs, before any trial.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Reads only; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
options:
  path:
    description:
      - Path of the BPF object file on the target (for example C(/usr/local/lib/xdplab/lib/bpf/custom/NAME.bpf.o)).
    type: path
    required: true
  program:
    description:
      - Name of a program (the C function name) that must be in the object and be an XDP program
        (its section C(xdp) or C(xdp/...)). Nothing is checked when omitted.
    type: str
requirements:
  - libbpf.so.1 (Debian package libbpf1) on the target
notes:
  - Opening an object needs no privileges; nothing is loaded into the kernel.
seealso:
  - module: xdplab.testbed.xdp_program
"""

EXAMPLES = r"""
- name: Check that a user's object holds its XDP program
  xdplab.testbed.bpf_object_info:
    path: /usr/local/lib/xdplab/lib/bpf/custom/udp_port_filter.bpf.o
    program: xdp_udp_port_filter
  register: filter_info

- name: List the programs of the lab's bench object
  xdplab.testbed.bpf_object_info:
    path: /usr/local/lib/xdplab/lib/bpf/xdp_bench.bpf.o
"""

RETURN = r"""
object:
  description: The object file read (O(path)).
  returned: always
  type: str
  sample: /usr/local/lib/xdplab/lib/bpf/custom/udp_port_filter.bpf.o
sha256:
  description: SHA-256 of the object file.
  returned: always
  type: str
  sample: 0c5d6f3e...
programs:
  description: The object's programs, in the object's order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The program's name (its C function name).
      type: str
      sample: xdp_udp_port_filter
    section:
      description: Its ELF section.
      type: str
      sample: xdp
    type:
      description: Its BPF program type, from the section (V(xdp) for an XDP program).
      type: str
      sample: xdp
program:
  description: O(program) when given and found (null otherwise).
  returned: always
  type: str
  sample: xdp_udp_port_filter
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf


class BpfObjectInfo:
    """Open one object, list its programs, check the program asked for."""

    def __init__(self, module):
        self.module = module
        self.path = module.params["path"]
        self.program = module.params["program"]
        # not "path": AnsibleModule would add that file's owner and mode to the result
        self.result = {"changed": False, "object": self.path, "sha256": None, "programs": [], "program": None}

    def fail(self, msg, **kwargs):
        self.module.fail_json(msg=msg, **dict(self.result, **kwargs))

    def run(self):
        if not os.path.isfile(self.path):
            self.fail(f"BPF object {self.path} does not exist on the target")
        self.result["sha256"] = libbpf.file_sha256(self.path)
        try:
            with libbpf.BpfObject(self.path) as obj:
                self.result["programs"] = obj.programs()
                problem = obj.xdp_program_problem(self.program) if self.program else None
        except libbpf.LibbpfError as exc:
            self.fail(f"{exc}. {exc.log_tail(10)}".strip(), libbpf_log=exc.log_tail(20))
        if problem:
            self.fail(problem)
        self.result["program"] = self.program
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "program": {"type": "str"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**BpfObjectInfo(module).run())


if __name__ == "__main__":
    main()
