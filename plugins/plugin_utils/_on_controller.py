# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a controller-side module (trial_record, ndr_pdr_search) inside its action plugin, in Ansible's worker.

A module call costs a Python process that unpacks AnsiballZ and imports ansible.module_utils again: about 0.5 s
per call on the 2-CPU lab machine (docs/BENCHMARKS.md, benchmarks/ansible_task_cost.py), paid by every trial for
its record. Where the task runs on the controller anyway (delegate_to: localhost, a local connection, no become),
the action plugin validates the arguments with the module's own argument spec and runs the module's worker class
in the worker process Ansible already forked for the task. Anywhere else it runs the module as usual. The worker
class is the module's own: it sees the same params, check mode, diff mode, warn() and fail_json() in both cases.
"""

from __future__ import annotations

from typing import ClassVar

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ModuleFailure(Exception):
    """fail_json() of a module run in process: the failed result."""

    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class ControllerModule:
    """The part of AnsibleModule a worker class uses, for a module run inside its action plugin."""

    def __init__(self, params, check_mode, diff):
        self.params = params
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []

    def warn(self, warning):
        self.warnings.append(warning)

    def fail_json(self, msg, **kwargs):
        raise ModuleFailure(dict(kwargs, msg=msg, failed=True))


# the connections whose host is this machine (a local connection, or a network namespace of it through
# xdplab.testbed.netns): /proc/stat, the threads' /proc and the kernel's sysctls are the machine's own in every namespace
THIS_MACHINE = ("local", "xdplab.testbed.netns")


def on_this_machine(connection, play_context):
    """Whether a task's host is this machine, reached without become (a module run there would run as this process's
    user, on this machine's /proc)."""
    return getattr(connection, "transport", None) in THIS_MACHINE and not play_context.become


def run_worker(run, params, check_mode=False, diff=False):
    """Run a module's work in this process: ``run(module)`` returns the module's result for validated ``params``; the
    result with ``changed`` defaulted and the module's warnings added. A fail_json() raises ModuleFailure with the
    failed result, its warnings added too."""
    module = ControllerModule(params, check_mode=check_mode, diff=diff)
    try:
        out = run(module)
    except ModuleFailure as exc:
        if module.warnings:
            exc.result["warnings"] = exc.result.get("warnings", []) + module.warnings
        raise
    out.setdefault("changed", False)
    if module.warnings:
        out["warnings"] = out.get("warnings", []) + module.warnings
    return out


class ControllerModuleAction(ActionBase):
    """Base of the action plugin of a module that runs on the controller: set ARGUMENT_SPEC, REQUIRED_IF and
    run_module(module) (returns the module's result dict) in the subclass."""

    TRANSFERS_FILES = False
    ARGUMENT_SPEC: ClassVar[dict] = {}
    REQUIRED_IF: ClassVar[list] = []

    def run_module(self, module):
        raise NotImplementedError

    def _on_controller(self):
        # the play context's become holds the task's keyword and the inventory's ansible_become: the module process
        # runs as that user
        return getattr(self._connection, "transport", None) == "local" and not self._play_context.become

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # not used
        if not self._on_controller():
            result.update(self._execute_module(task_vars=task_vars))
            return result
        try:
            _validation, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC, required_if=self.REQUIRED_IF)
        except AnsibleActionFail as exc:
            result.update(failed=True, msg=str(exc))
            return result
        try:
            out = run_worker(self.run_module, args, check_mode=bool(self._task.check_mode), diff=bool(self._task.diff))
        except ModuleFailure as exc:
            out = exc.result
        result.update(out)
        result.setdefault("changed", False)
        return result
