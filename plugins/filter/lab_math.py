# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The lab's arithmetic as Jinja filters.

``pps_to_ns``
    packets per second -> nanoseconds per packet: ``25583300 | xdplab.testbed.pps_to_ns`` -> 39.088...
``ns_to_pps``
    nanoseconds per packet -> packets per second: ``34.4 | xdplab.testbed.ns_to_pps`` -> 29069767.4...
``wire_pps(frame_size=64)``
    line rate of a link in packets per second; the input is the link speed in Gbit/s. Every frame occupies
    frame_size + 20 bytes on the wire (7 B preamble, 1 B start-of-frame delimiter, 12 B inter-frame gap),
    so a 64-byte frame takes 84 bytes: ``100 | xdplab.testbed.wire_pps`` -> 148809523.8 (148.8 Mpps),
    40 -> 59.52 Mpps, 10 -> 14.88 Mpps.
``thousands(decimals=0)``
    ``25583300 | xdplab.testbed.thousands`` -> ``"25,583,300"`` (the way xdp_rxq_info prints rates).
``mpps(precision=2)``
    packets per second -> million packets per second, rounded: ``86338684 | xdplab.testbed.mpps`` -> 86.34.

All of them raise AnsibleFilterError on non-numeric or negative input (and on zero where they divide).
"""

from __future__ import annotations

import math

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _record
from ansible_collections.xdplab.testbed.plugins.module_utils._record import MIN_FRAME


def _number(filter_name, value, what="input", allow_zero=True):
    if isinstance(value, bool) or value is None:
        raise AnsibleFilterError(f"{filter_name}: {what} must be a number, got {value!r}")
    if isinstance(value, (int, float)):
        number = value
    else:
        try:
            number = float(str(value).strip())
        except ValueError:
            raise AnsibleFilterError(f"{filter_name}: {what} must be a number, got {value!r}") from None
    if isinstance(number, float) and not math.isfinite(number):
        raise AnsibleFilterError(f"{filter_name}: {what} must be finite, got {value!r}")
    if number < 0:
        raise AnsibleFilterError(f"{filter_name}: {what} must not be negative, got {value!r}")
    if not allow_zero and number == 0:
        raise AnsibleFilterError(f"{filter_name}: {what} must be greater than zero, got {value!r}")
    return number


def pps_to_ns(pps):
    """Packets per second -> nanoseconds per packet (1e9 / pps)."""
    return 1e9 / _number("pps_to_ns", pps, "packets per second", allow_zero=False)


def ns_to_pps(ns):
    """Nanoseconds per packet -> packets per second (1e9 / ns)."""
    return 1e9 / _number("ns_to_pps", ns, "nanoseconds per packet", allow_zero=False)


def wire_pps(link_speed_gbit, frame_size=64):
    """Line rate in packets per second of a ``link_speed_gbit`` Gbit/s link for ``frame_size``-byte frames.

    A frame uses frame_size + 20 bytes of wire time (preamble, SFD and inter-frame gap): the formula is
    _record.wire_pps (the one the limit verdict uses); this filter checks its inputs.
    """
    speed = _number("wire_pps", link_speed_gbit, "link speed (Gbit/s)", allow_zero=False)
    size = _number("wire_pps", frame_size, "frame_size", allow_zero=False)
    if size < MIN_FRAME:
        raise AnsibleFilterError(f"wire_pps: frame_size must be at least {MIN_FRAME} bytes (Ethernet), got {size}")
    return _record.wire_pps(speed, size)


def thousands(value, decimals=0):
    """Format with thousands separators: 25583300 -> '25,583,300'."""
    number = _number("thousands", value)
    places = int(_number("thousands", decimals, "decimals"))
    if places == 0:
        return f"{round(number):,}"
    return f"{number:,.{places}f}"


def mpps(pps, precision=2):
    """Packets per second -> Mpps rounded to ``precision`` decimals."""
    number = _number("mpps", pps, "packets per second")
    return round(number / 1e6, int(_number("mpps", precision, "precision")))


class FilterModule:
    """xdplab.testbed lab arithmetic."""

    def filters(self):
        return {
            "pps_to_ns": pps_to_ns,
            "ns_to_pps": ns_to_pps,
            "wire_pps": wire_pps,
            "thousands": thousands,
            "mpps": mpps,
        }
