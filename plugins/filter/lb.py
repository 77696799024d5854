# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The load-balancer experiment's input checks as a filter (issue 27; the rules in plugins/module_utils/_lb.py):

- ``lb_input | lb_input_errors(systems, packet_lens, cores, mtu, host)``: every problem, each naming the field and the
  value (more reals than the program's reals map holds, a packet that IPIP's 20 bytes push over the MTU, rp_filter on
  for IPVS tunnel mode, a system that is no load balancer);
- ``systems | lb_ipvs_systems``: the names of the IPVS systems (kind lb, ``lb: ipvsadm``), which need a kernel with IPVS.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb


def lb_input_errors(lb_input, systems, packet_lens, cores, mtu=1500, host="dut"):
    try:
        return _lb.lb_errors(lb_input, systems or {}, packet_lens or [], cores or [], mtu=int(mtu or 1500), host=host)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"lb_input_errors: {exc}") from None


def lb_ipvs_systems(systems):
    return _lb.ipvs_systems(systems)


class FilterModule:
    """xdplab.testbed load-balancer input checks."""

    def filters(self):
        return {"lb_input_errors": lb_input_errors, "lb_ipvs_systems": lb_ipvs_systems}
