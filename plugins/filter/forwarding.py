# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``forwarding_section``: the trial record's forwarding section from the far side's and the DUT's rx_counters.

``far | xdplab.testbed.forwarding_section(dut, ingress=IF, gen_tx_interface=IF, return_port=ingress|egress)``
where ``far`` is the result of xdplab.testbed.rx_counters at the generator's receive ports (sampled) and ``dut``
its result on the DUT's ports (``since`` a snapshot before the window). The arithmetic is
plugins/module_utils/_forwarding.py ``forwarding_section``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _forwarding


def forwarding_section(far, dut, ingress, gen_tx_interface, return_port="egress"):
    for name, result in (("far", far), ("dut", dut)):
        if not isinstance(result, dict) or not isinstance(result.get("measurement"), dict):
            raise AnsibleFilterError(f"forwarding_section: {name} must be a result of xdplab.testbed.rx_counters "
                                     f"with a measurement, got {type(result).__name__}")
    m, dm = far["measurement"], dut["measurement"]
    try:
        section = _forwarding.forwarding_section(
            far["counted"], _forwarding.dut_counts(dut["deltas"], ingress), m["window"]["seconds"],
            return_port=return_port, receive_ports=m["source"].get("devices", []), gen_tx_interface=gen_tx_interface,
            gen_deltas=far["deltas"], window=m["window"], dut_window=dm["window"], dut_seconds=dm["window"]["seconds"])
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError(f"forwarding_section: {exc}") from None
    if isinstance(dut.get("stack"), dict):
        # the DUT's stack counters over its window (rx_counters stack: true): where a Linux router's packets went
        section["dut"]["stack"] = dut["stack"]
    return section


class FilterModule:
    """xdplab.testbed forwarding accounting."""

    def filters(self):
        return {"forwarding_section": forwarding_section}
