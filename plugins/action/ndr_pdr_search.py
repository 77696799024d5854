# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of xdplab.testbed.ndr_pdr_search: on the controller, the module's Search runs in the task's worker
process (no module process per step of the search); elsewhere, the module (plugin_utils/_on_controller.py)."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.modules import ndr_pdr_search
from ansible_collections.xdplab.testbed.plugins.plugin_utils._on_controller import ControllerModuleAction


class ActionModule(ControllerModuleAction):
    ARGUMENT_SPEC = ndr_pdr_search.ARGUMENT_SPEC

    def run_module(self, module):
        return ndr_pdr_search.Search(module).run()
