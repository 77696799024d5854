#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trial
short_description: One phase of a trial of the role experiment (set up, start, measure, stop, record, tear down)
version_added: 0.9.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - The trial runner's steps in Python (C(plugins/plugin_utils/_trial.py)), one phase per task of
    C(roles/experiment/tasks/trial.yml), which keeps their order and nothing else. An action plugin; this file only
    documents it.
  - Each phase reads the trial's one state object, the previous phase's result registered as C(__experiment_state),
    and the role's variables, runs its modules on the task's host (the DUT, or the generator host where the task is
    delegated there) and returns the object with its own part added (RV(trial), RV(program), RV(started),
    RV(cpu_before), RV(measured), RV(cpu), RV(generator), RV(line)).
  - A kind of system with a Python provider (the registry of kinds, C(plugins/module_utils/_systems.py); the kind
    C(xdp) first) is set up, measured and torn down here; the other kinds by their task files
    (C(tasks/systems/<kind>/)), which C(trial.yml) includes after the phase of the same name (C(tasks) in RV(trial)).
  - Where the host is a network namespace of this machine (the virtual lab) or this machine, without become, the
    phase runs this collection's modules in a fork of Ansible's worker inside that namespace, as C(ip netns exec) would
    (C(plugins/plugin_utils/_in_worker.py)); C(xdplab_modules_in_worker=false) runs them as separate processes.
  - Internal to the role experiment; not meant to be called from a playbook.
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: none
    description: Trials do not run in check mode (the role plans them and prints their count).
  diff_mode:
    support: none
options:
  phase:
    description:
      - V(setup) makes the trial's values and sets the system up; V(start) starts the generator (delegated to the
        generator host); V(measure) takes a CPU snapshot where the measure does not bracket its window, then
        measures; V(cpu) reads the DUT's CPU usage over the window (kinds with task files whose window ends before
        the generator stops); V(stop) stops the generator (delegated); V(record) reads the CPU usage of a window the
        measure bracketed and writes the trial's JSON line on the controller; V(failed) records a failed trial
        (rescue); V(cleanup) stops a generator left running (always, delegated); V(teardown) tears the system down
        (always).
    type: str
    required: true
    choices: [setup, start, measure, cpu, stop, record, failed, cleanup, teardown]
"""

EXAMPLES = r"""
- name: Set up the system under test
  xdplab.testbed.trial:
    phase: setup
  register: __experiment_state

- name: Start the generator
  xdplab.testbed.trial:
    phase: start
  delegate_to: "{{ __experiment_gen.host }}"
  register: __experiment_state
"""

RETURN = r"""
trial:
  description: The trial's values, decided once (the filter P(xdplab.testbed.trial_values#filter)'s object), with
    C(tasks) (its kind is set up and measured by task files).
  returned: always, after V(setup)
  type: dict
traffic:
  description: What the generator offers instead of its host's own (C(backend), C(options), C(wait); the TCP system's
    iperf3 client).
  returned: after V(setup), for a kind whose provider sets it
  type: dict
program:
  description: What runs on the DUT (for XDP the program's id, tag, name, mode, object and its sha256).
  returned: after V(setup)
  type: dict
started:
  description: The generator's start, C(started_epoch).
  returned: after V(start)
  type: dict
cpu_before:
  description: The DUT's CPU snapshot before a window that the measure does not bracket.
  returned: after V(measure), when the window is not the measure's own
  type: dict
measured:
  description: The measure module's result (its C(measurement), C(cpu_window)).
  returned: after V(measure), for a kind with a Python provider
  type: dict
cpu:
  description: M(xdplab.testbed.cpu_usage)'s result over the window.
  returned: after V(record)
  type: dict
generator:
  description: M(xdplab.testbed.traffic_generator)'s stop (its C(summary), C(removed)).
  returned: after V(stop)
  type: dict
line:
  description: The trial's one-line result.
  returned: after V(record)
  type: str
modules:
  description: The modules this phase ran on the host, each in a process of its own (benchmarks/trial_overhead.py counts
    them).
  returned: always
  type: list
  elements: str
modules_in_worker:
  description: The modules this phase ran in a fork of the worker.
  returned: always
  type: list
  elements: str
tasks:
  description: After V(teardown), whether the system's kind has task files to include for its teardown.
  returned: after V(teardown)
  type: bool
"""
