# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``cpu_layout``: how a virtual lab splits its host's CPUs (issue 28).

``'auto' | xdplab.testbed.cpu_layout`` -> {housekeeping, dut, generator, generator_rx, nic, shared, online, request}
planned from this controller's online CPUs (the virtual lab's host). The rules are
plugins/module_utils/_cpu_layout.py ``plan``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_layout
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import online_cpus


def cpu_layout(request="auto", online=None):
    try:
        return _cpu_layout.plan(online_cpus() if online is None else online, request)
    except (_cpu_layout.LayoutError, OSError) as exc:
        raise AnsibleFilterError(f"cpu_layout: {exc}") from None


class FilterModule:
    """xdplab.testbed CPU layout of the virtual lab."""

    def filters(self):
        return {"cpu_layout": cpu_layout}
