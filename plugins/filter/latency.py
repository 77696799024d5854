# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``latency_from_trex``: the trial record's latency section from a T-Rex generator summary's ``latency``.

``summary.latency | xdplab.testbed.latency_from_trex(summary.elapsed_s)``: the hardware path of the latency
experiment (a T-Rex latency stream, STLFlowLatencyStats, one pg_id) in the fields the virtual lab's in-band sink
fills; the mapping is plugins/module_utils/_latency.py ``from_trex``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _latency


def latency_from_trex(trex_latency, seconds=None):
    if not isinstance(trex_latency, dict):
        raise AnsibleFilterError("latency_from_trex: give the T-Rex generator summary's latency (backend_options "
                                 f"latency: true), got {type(trex_latency).__name__}")  # fmt: skip
    return _latency.from_trex(trex_latency, seconds=seconds)


class FilterModule:
    """xdplab.testbed latency mapping."""

    def filters(self):
        return {"latency_from_trex": latency_from_trex}
