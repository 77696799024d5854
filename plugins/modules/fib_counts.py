#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fib_counts
short_description: Read bpf/xdp_router's counts per bpf_fib_lookup return code
version_added: 0.4.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Reads the per-CPU array C(fib_counts) of the XDP program attached to O(interface) (bpf/xdp_router.bpf.c, built
    with C(count_fib) on) and returns its slots by name, summed over CPUs, the kernel's C(BPF_FIB_LKUP_RET_*) codes
    (success, blackhole, unreachable, prohibit, not_fwded, fwd_disabled, unsupp_lwt, no_neigh, frag_needed,
    no_src_addr) and the program's own (not_ipv4, ttl_expired, no_tx_port, redirected).
  - Read-only. The routing experiment reads it before and after the measuring window; the difference is in the
    record's C(routing.fib_counts).
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
options:
  interface:
    description: The interface the router program is attached to, in the module's network namespace.
    type: str
    required: true
  map_name:
    description: The counter map's name.
    type: str
    default: fib_counts
"""

EXAMPLES = r"""
- name: What the router's lookups returned so far
  xdplab.testbed.fib_counts:
    interface: veth-dut0
  register: fib
"""

RETURN = r"""
counts:
  description: Count per slot name, summed over CPUs, since the program was loaded.
  returned: always
  type: dict
  sample: {success: 1200000, no_neigh: 0, redirected: 1200000, not_ipv4: 3}
program:
  description: The attached program's id and name, and the counter map's id.
  returned: always
  type: dict
  sample: {id: 29097, name: xdp_router, map_id: 19914}
monotonic:
  description: CLOCK_MONOTONIC when the map was read.
  returned: always
  type: float
  sample: 12345.678
"""

import socket
import struct
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes as fr
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf


def read_counts(interface, map_name):
    """(counts by name, program info) of the program attached to ``interface``; ValueError says what is missing."""
    try:
        ifindex = socket.if_nametoindex(interface)
    except OSError:
        raise ValueError(f"interface {interface} does not exist in this network namespace") from None
    prog_id, _mode = libbpf.attached_program(ifindex)
    if not prog_id:
        raise ValueError(f"no XDP program is attached to {interface}; attach bpf/xdp_router (system xdp_router) first")
    info = libbpf.prog_info(prog_id)
    found = libbpf.find_prog_map(prog_id, name=map_name)
    if not found:
        raise ValueError(
            f"the program attached to {interface} ({info.get('name')}, id {prog_id}) has no map {map_name}: "
            "it is not bpf/xdp_router"
        )
    per_slot = {}
    for slot, per_cpu in enumerate(libbpf.read_percpu_array(found["id"])):
        per_slot[slot] = sum(struct.unpack("<Q", raw[:8])[0] for raw in per_cpu)
    named = {k: v for k, v in fr.fib_counts(per_slot).items() if not k.startswith("slot_") or v}
    return named, {"id": prog_id, "name": info.get("name"), "map_id": found["id"]}


def main():
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "map_name": {"type": "str", "default": "fib_counts"},
        },
        supports_check_mode=True,
    )
    try:
        counts, program = read_counts(module.params["interface"], module.params["map_name"])
    except (ValueError, libbpf.LibbpfError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, counts=counts, program=program, monotonic=time.monotonic())


if __name__ == "__main__":
    main()
