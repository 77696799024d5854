#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What one Ansible task costs the controller here, by kind: the overhead a trial pays per task of the role.

A trial of the experiment role runs ~20 tasks around a measurement window of a few seconds, so on this machine the
tasks, not the traffic, set how long a sweep (and `make test`) takes. This times playbooks of N tasks of one kind on
localhost (connection local, the repository's ansible.cfg and collection), each kind in its own ansible-playbook
run, alternating kinds over ROUNDS rounds, and prints the median cost per task after subtracting an empty
playbook's run (the controller's start):

  debug          ansible.builtin.debug of a plain expression (templating, the worker's fork, the callback)
  debug_filter   the same with one of this collection's filters (xdplab.testbed.mpps): Ansible imports every
                 file of plugins/filter/ in the task's forked worker to find it
  skipped        a task whose `when` is false
  ping           ansible.builtin.ping (a module: AnsiballZ, a Python process, ansible.module_utils.basic)
  cpu_snapshot   xdplab.testbed.cpu_usage snapshot_only (the collection's own module, /proc/stat and the threads)

    .venv/bin/python benchmarks/ansible_task_cost.py [--tasks 20] [--rounds 3]

Quote ratios from one run: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
KINDS = {
    "empty": None,
    "debug": {"ansible.builtin.debug": {"msg": "{{ 1000000 / 3 }}"}},
    "debug_filter": {"ansible.builtin.debug": {"msg": "{{ 1000000 | xdplab.testbed.mpps }}"}},
    "skipped": {"ansible.builtin.debug": {"msg": "x"}, "when": False},
    "ping": {"ansible.builtin.ping": {}},
    "cpu_snapshot": {"xdplab.testbed.cpu_usage": {"snapshot_only": True, "cpus": [0]}},
    # a trial's record (a failed trial: the smallest valid record), through the action plugin: on the controller the
    # module's class runs in Ansible's worker; with become (su, root to root) the module runs as its own process
    "record": {"xdplab.testbed.trial_record": "RECORD"},
    "record_module": {"xdplab.testbed.trial_record": "RECORD", "become": True, "become_method": "ansible.builtin.su"},
}
RECORDS = os.path.join(tempfile.gettempdir(), "xdplab-bench-task-cost.jsonl")


def record_args(i):
    trial = {"trial_id": "bench%06d" % i, "point": {"system": "xdp"}, "repetition": 1, "index": 1, "total": 1}
    return {"path": RECORDS, "experiment": "bench", "status": "failed", "failure": {"task": "bench", "error": "bench"},
            "trial": trial}  # fmt: skip


def playbook(kind, tasks):
    body = [] if KINDS[kind] is None else [dict(KINDS[kind], name="%s %d" % (kind, i)) for i in range(tasks)]
    for i, task in enumerate(body):
        if task.get("xdplab.testbed.trial_record") == "RECORD":
            task["xdplab.testbed.trial_record"] = record_args(i)
    play = [{"name": kind, "hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"ansible_python_interpreter": sys.executable}, "tasks": body}]  # fmt: skip
    return json.dumps(play)  # JSON is YAML


def run(path):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    t0 = time.monotonic()
    subprocess.run([PLAYBOOK_BIN, "-i", "localhost,", path], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for kind in KINDS:
            paths[kind] = os.path.join(tmp, kind + ".yml")
            with open(paths[kind], "w") as f:
                f.write(playbook(kind, args.tasks))
        walls = {k: [] for k in KINDS}
        try:
            for _round in range(args.rounds):
                for kind in KINDS:
                    walls[kind].append(run(paths[kind]))
        finally:
            if os.path.exists(RECORDS):
                os.unlink(RECORDS)
    empty = statistics.median(walls["empty"])
    print("ansible-playbook start (empty play): %.2f s (median of %d); %d tasks per kind" % (empty, args.rounds, args.tasks))
    print("%-13s %12s %14s" % ("kind", "s per task", "x plain debug"))
    base = None
    for kind in KINDS:
        if kind == "empty":
            continue
        per = (statistics.median(walls[kind]) - empty) / args.tasks
        base = per if kind == "debug" else base
        print("%-13s %12.3f %14.1f" % (kind, per, per / base if base else float("nan")))


if __name__ == "__main__":
    main()
