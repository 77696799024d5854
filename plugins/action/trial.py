# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin xdplab.testbed.trial: one phase of a trial of the role experiment (roles/experiment/tasks/trial.yml),
run in Python on the task's host (plugin_utils/_trial.py). Its only argument is the phase; the trial's state is the
previous phase's result (``__experiment_state``) and the role's variables."""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import STATE_KEYS, PhaseFailure, Phases

# phase: the method of Phases that runs it
PHASES = {
    "setup": "setup",
    "start": "start",
    "measure": "measure",
    "collect": "collect",
    "far": "far",
    "stop": "stop",
    "record": "record",
    "failed": "failed",
    "cleanup": "cleanup",
    "teardown": "teardown",
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("phase",))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # not used
        phase = self._task.args.get("phase")
        if phase not in PHASES:
            result.update(failed=True, msg=f"phase: {phase!r} is not a phase of a trial ({', '.join(PHASES)})")
            return result
        phases = Phases(self, task_vars or {})
        try:
            getattr(phases, PHASES[phase])()
        except PhaseFailure as exc:
            failure = exc.result
            result.update(failed=True, msg=failure.get("msg", f"the trial's phase {phase} failed"))
            # contract 4: a module whose process died returns its exit; a generator that died, what it sent
            for key in ("process", "stderr", "rc"):
                if key in failure:
                    result[key] = failure[key]
            if isinstance(failure.get("summary"), dict):
                result["generator_summary"] = failure["summary"]
            # a forwarding trial whose far side got nothing back: its verdict, for the failed trial's record
            if isinstance(failure.get("verdict"), dict):
                result["verdict"] = failure["verdict"]
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update({k: phases.state[k] for k in STATE_KEYS if k in phases.state})
        result["changed"] = phases.changed
        result["modules"] = phases.modules
        result["modules_in_worker"] = phases.in_worker_modules
        if phases.warnings:
            result["warnings"] = result.get("warnings", []) + phases.warnings
        return result
