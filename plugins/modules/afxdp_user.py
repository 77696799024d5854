#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: afxdp_user
short_description: Run a user's AF_XDP binary, one process per RX queue pinned to its CPU, for a measurement
version_added: 0.2.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - A custom system of kind C(af_xdp) (C(xdplab_custom_systems), docs/CUSTOM_SYSTEMS.md) is the user's own program.
    O(state=started) starts O(binary) once per entry of O(queues), the process for queue O(queues)[i] pinned to
    CPU O(cpus)[i] (its CPU affinity, set before it runs), with O(args) where C({interface}), C({queue}) and
    C({cpu}) are replaced by O(interface), the queue and the CPU.
  - Each process runs under the collection's one process supervisor (plugins/module_utils/_process.py) in the
    module's network namespace, its stdout and stderr in O(run_dir); a process that ends within O(settle)
    seconds fails the start (every process of the run is then stopped), naming its exit and its stderr's last lines.
  - O(state=stopped) stops them (SIGINT, then SIGKILL after O(stop_timeout) seconds) and removes their files; it
    fails when a process had ended before it was stopped (it did not run for the whole window), returning every
    process's exit under RV(processes).
  - O(state=absent) stops whatever of the run still runs and removes its files, never an error (the teardown on
    every exit path).
  - The module measures nothing; the driver's per-queue XDP_REDIRECT counters (M(xdplab.testbed.xdp_stats)
    O(xdplab.testbed.xdp_stats#module:count=driver), O(xdplab.testbed.xdp_stats#module:action=redirect)) count
    what reached the sockets.
attributes:
  check_mode:
    support: full
    description: Says what it would run or stop, and does nothing.
  diff_mode:
    support: none
    description: Nothing to compare; it starts and stops processes.
options:
  state:
    description: Whether the processes run.
    type: str
    choices: [started, stopped, absent]
    default: started
  binary:
    description: The user's program on the target. Required with O(state=started).
    type: path
  args:
    description: Its arguments; C({interface}), C({queue}) and C({cpu}) are replaced (a doubled brace is a brace).
    type: list
    elements: str
    default: []
  interface:
    description: The DUT port (the value of C({interface})). Required with O(state=started).
    type: str
  queues:
    description: The RX queues, one process each. Required with O(state=started).
    type: list
    elements: int
  cpus:
    description: The CPU of each queue's process (same length as O(queues)). Required with O(state=started).
    type: list
    elements: int
  run_dir:
    description: Directory of the run's files (state, stdout, stderr, exit of each process).
    type: path
    default: /run/xdplab/afxdp_user
  settle:
    description: Seconds each process must keep running after its start to count as started.
    type: float
    default: 1.0
  stop_timeout:
    description: Seconds between SIGINT and SIGKILL when stopping.
    type: float
    default: 5.0
requirements:
  - root in the DUT's network namespace (AF_XDP sockets, XDP programs)
seealso:
  - module: xdplab.testbed.xdp_stats
  - module: xdplab.testbed.xsk_bench
"""

EXAMPLES = r"""
- name: One process per queue
  xdplab.testbed.afxdp_user:
    binary: /usr/local/lib/xdplab/bin/custom/my_xsk
    args: [--dev, "{interface}", --queue, "{queue}"]
    interface: dut0
    queues: [0, 1]
    cpus: [1, 2]

- name: Stop them after the measurement (fails if one ended early)
  xdplab.testbed.afxdp_user:
    state: stopped
"""

RETURN = r"""
processes:
  description:
    - One entry per process, C(queue), C(cpu), C(command) and C(pid); after a stop its C(exit) (C(exit_status),
      C(signal_name), C(stderr_tail)), C(ended_early) and the C(signals) sent.
  returned: always
  type: list
  elements: dict
  sample: [{queue: 0, cpu: 1, pid: 4242, command: [/usr/local/bin/my_xsk, --dev, dut0, --queue, "0"]}]
command:
  description: The first process's command (the record's provenance).
  returned: when O(state=started)
  type: list
  elements: str
  sample: [/usr/local/bin/my_xsk, --dev, dut0, --queue, "0"]
"""

import glob
import os
import string

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _process

PLACEHOLDERS = ("interface", "queue", "cpu")
NAME = "afxdp_user"


class PinnedProcess(_process.Process):
    """A run of the one process helper whose process is held to one CPU (the supervisor sets it before exec)."""

    kind = NAME

    def __init__(self, run_dir, name, cpu=None):
        super().__init__(run_dir, name)
        self.cpu = cpu

    def child_cpus(self):
        return [self.cpu] if self.cpu is not None else super().child_cpus()


def placeholder_errors(args):
    """Each argument's unknown placeholders or bad braces, as messages."""
    errors = []
    for arg in args:
        try:
            fields = [f for _lit, f, _spec, _conv in string.Formatter().parse(arg) if f is not None]
        except ValueError as exc:
            errors.append(f"argument {arg!r}: {exc} (write {{{{ and }}}} for braces)")
            continue
        unknown = [f for f in fields if f not in PLACEHOLDERS]
        if unknown:
            errors.append(f"argument {arg!r}: unknown placeholder(s) {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})")
    return errors


def expand(args, interface, queue, cpu):
    return [a.format(interface=interface, queue=queue, cpu=cpu) for a in args]


def runs(run_dir):
    """The runs of this module in run_dir (their state files), by name."""
    names = sorted(os.path.basename(p)[: -len(".state.json")] for p in glob.glob(os.path.join(run_dir, NAME + ".q*.state.json")))
    return [PinnedProcess(run_dir, n) for n in names]


def stop_all(run_dir, timeout):
    out = []
    for proc in runs(run_dir):
        state = proc.load_state() or {}
        was = proc.running(state)
        stopped = proc.stop(timeout=timeout)
        info = state.get("params", {})
        out.append(
            dict(info, pid=state.get("pid"), command=state.get("command"), exit=stopped["exit"], signals=stopped["signals"],
                 ended_early=not was and bool(state))
        )  # fmt: skip
        proc.remove()
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["started", "stopped", "absent"], "default": "started"},
            "binary": {"type": "path"},
            "args": {"type": "list", "elements": "str", "default": []},
            "interface": {"type": "str"},
            "queues": {"type": "list", "elements": "int"},
            "cpus": {"type": "list", "elements": "int"},
            "run_dir": {"type": "path", "default": "/run/xdplab/afxdp_user"},
            "settle": {"type": "float", "default": 1.0},
            "stop_timeout": {"type": "float", "default": 5.0},
        },
        required_if=[("state", "started", ("binary", "interface", "queues", "cpus"))],
        supports_check_mode=True,
    )
    p = module.params
    result = {"changed": False, "processes": []}
    if p["state"] != "started":
        if module.check_mode:
            result["processes"] = [{"name": r.name} for r in runs(p["run_dir"])]
            result["changed"] = bool(result["processes"])
            module.exit_json(**result)
        procs = stop_all(p["run_dir"], p["stop_timeout"])
        result.update(changed=bool(procs), processes=procs)
        early = [x for x in procs if x["ended_early"]]
        if p["state"] == "stopped" and early:
            first = early[0]
            module.fail_json(
                msg=_process.failure_message(f"{os.path.basename((first['command'] or ['?'])[0])} (queue {first.get('queue')})",
                                             first["exit"] or {}, "before the measurement ended"),
                process=first["exit"], **result)  # fmt: skip
        module.exit_json(**result)

    if len(p["queues"]) != len(p["cpus"]) or not p["queues"]:
        module.fail_json(msg=f"queues {p['queues']} and cpus {p['cpus']} must be non-empty lists of the same length", **result)
    errors = placeholder_errors(p["args"])
    if errors:
        module.fail_json(msg="; ".join(errors), **result)
    if not (os.path.isfile(p["binary"]) and os.access(p["binary"], os.X_OK)):
        module.fail_json(msg=f"binary {p['binary']} is not an executable file on the target", **result)
    planned = [
        {"queue": q, "cpu": c, "command": [p["binary"], *expand(p["args"], p["interface"], q, c)]}
        for q, c in zip(p["queues"], p["cpus"])
    ]
    result.update(changed=True, processes=planned, command=planned[0]["command"])
    if module.check_mode:
        module.exit_json(**result)
    stop_all(p["run_dir"], p["stop_timeout"])  # an earlier run's leftovers
    for entry in planned:
        proc = PinnedProcess(p["run_dir"], f"{NAME}.q{entry['queue']}", cpu=entry["cpu"])
        try:
            state = proc.start(entry["command"], params={"queue": entry["queue"], "cpu": entry["cpu"]}, settle=p["settle"])
        except _process.ProcessError as exc:
            info = proc.exit()
            stop_all(p["run_dir"], p["stop_timeout"])
            module.fail_json(msg=f"queue {entry['queue']} (CPU {entry['cpu']}): {exc}", process=info, **result)
        entry["pid"] = state["pid"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
