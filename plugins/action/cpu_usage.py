# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of xdplab.testbed.cpu_usage: the usage between two snapshots another module took (``since`` and
``until``, a measure task's cpu_window) is arithmetic on them, done in the task's worker process when the host is this
machine (a local connection, or a network namespace of it through xdplab.testbed.netns: /proc/stat, the threads'
/proc and the kernel's sysctls are the machine's own in every namespace) and no become: one module process less per
trial (~0.3 s here, docs/BENCHMARKS.md "Ansible cost per trial"). Every other call runs the module on the host
(plugin_utils/_on_controller.py)."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_usage as cpu_usage
from ansible_collections.xdplab.testbed.plugins.plugin_utils._on_controller import ControllerModuleAction, on_this_machine


class ActionModule(ControllerModuleAction):
    ARGUMENT_SPEC = cpu_usage.ARGUMENT_SPEC

    def _on_controller(self):
        args = self._task.args
        between_snapshots = bool(args.get("since")) and bool(args.get("until"))
        # interface names (bpf_interfaces) are looked up in the host's network namespace: only the module can
        reads_namespace = bool(args.get("bpf_interfaces"))
        return between_snapshots and not reads_namespace and on_this_machine(self._connection, self._play_context)

    def run_module(self, module):
        return cpu_usage.CpuUsage(module).run()
