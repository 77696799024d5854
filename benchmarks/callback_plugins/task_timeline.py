# SPDX-License-Identifier: GPL-3.0-or-later
"""A timeline of a playbook run, one JSON line per event, for benchmarks/trial_overhead.py.

Enabled for one run only (trial_overhead.py sets ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins,
ANSIBLE_CALLBACKS_ENABLED=task_timeline and XDPLAB_TASK_TIMELINE=<file>). Each line: the event (task_start,
start, ok/failed/skipped/unreachable, item_ok/item_failed/item_skipped, include), the controller's monotonic
clock (t) and wall clock (wall), and the task's name, action (its module), path (file:line), host and delegated
host. A result's start is its v2_runner_on_start (when the worker began it), its t when the controller had its
result; both as the controller's main process sees them.
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_timeline
type: aggregate
short_description: one JSON line per task event, with monotonic times (benchmarks/trial_overhead.py)
description: writes to the file named by XDPLAB_TASK_TIMELINE (nothing when unset)
requirements: [enable in configuration]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_timeline"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        path = os.environ.get("XDPLAB_TASK_TIMELINE")
        self._out = open(path, "a", buffering=1) if path else None  # noqa: SIM115 (open for the run)
        self._starts = {}

    def _emit(self, event, task=None, host=None, **extra):
        if self._out is None:
            return
        rec = {"event": event, "t": time.monotonic(), "wall": time.time()}
        if task is not None:
            rec.update(name=task.get_name(), action=task.action, path=task.get_path(), uuid=task._uuid)
        if host is not None:
            rec["host"] = host
        rec.update(extra)
        self._out.write(json.dumps(rec) + "\n")

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._emit("task_start", task)

    def v2_playbook_on_handler_task_start(self, task):
        self._emit("task_start", task, handler=True)

    def v2_runner_on_start(self, host, task):
        self._starts[(host.get_name(), task._uuid)] = time.monotonic()

    def _result(self, status, result):
        host = result._host.get_name()
        start = self._starts.pop((host, result._task._uuid), None)
        delegated = (result._result.get("_ansible_delegated_vars") or {}).get("ansible_host")
        n_items = len(result._result["results"]) if isinstance(result._result.get("results"), list) else None
        # an action that runs modules itself (xdplab.testbed.trial) says which ran in a process of their own
        modules = result._result.get("modules") if isinstance(result._result.get("modules"), list) else None
        self._emit(status, result._task, host, start=start, delegated_to=delegated, items=n_items, modules=modules)

    def v2_runner_on_ok(self, result):
        self._result("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed", result)

    def v2_runner_on_skipped(self, result):
        self._result("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable", result)

    def v2_runner_item_on_ok(self, result):
        self._emit("item_ok", result._task, result._host.get_name())

    def v2_runner_item_on_failed(self, result):
        self._emit("item_failed", result._task, result._host.get_name())

    def v2_runner_item_on_skipped(self, result):
        self._emit("item_skipped", result._task, result._host.get_name())

    def v2_playbook_on_include(self, included_file):
        self._emit("include", path=included_file._filename, hosts=[h.get_name() for h in included_file._hosts])

    def v2_playbook_on_stats(self, stats):
        self._emit("stats")
        if self._out is not None:
            self._out.close()
            self._out = None
