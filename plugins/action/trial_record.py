# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of xdplab.testbed.trial_record: on the controller, the module's TrialRecorder runs in the task's
worker process (no module process: ~0.5 s less per trial); elsewhere, the module (plugin_utils/_on_controller.py)."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils import _trial_record as trial_record
from ansible_collections.xdplab.testbed.plugins.plugin_utils._on_controller import ControllerModuleAction


class ActionModule(ControllerModuleAction):
    ARGUMENT_SPEC = trial_record.ARGUMENT_SPEC
    REQUIRED_IF = trial_record.REQUIRED_IF

    def run_module(self, module):
        return trial_record.TrialRecorder(module).run()
