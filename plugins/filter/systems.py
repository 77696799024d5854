# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The registry of system kinds as filters (plugins/module_utils/_systems.py holds the rules; the matrix of systems,
``system_matrix``, is with the experiment's plan in filter/experiment.py).

- ``planned | trial_values(systems, settings)``: the one trial object the trial's tasks read;
- ``measured | measured_provenance(trial)``: what the measure task said about the program that ran;
- ``experiment_systems | with_custom_systems(xdplab_custom_systems, prefix)``: the systems with the inventory's own;
- ``matrix_systems | systems_need(systems, check)``: whether a preflight check applies;
- ``none | system_kinds``: the kinds (task directories) the trial runner has;
- ``system | kind_of``: the registry's entry for a system's kind;
- ``system | forward_plan(...)``: what a forward-kind trial sets up for its forwarding mode;
- ``xdplab_custom_systems | custom_programs``: the custom systems that are BPF objects, for the role bpf_programs.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _systems


def _wrap(func):
    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (_systems.SystemsError, OSError) as exc:
            raise AnsibleFilterError(str(exc)) from None

    run.__name__ = func.__name__
    run.__doc__ = func.__doc__
    return run


def trial_values(planned, systems, settings):
    return _systems.trial_values(planned, systems, settings)


def measured_provenance(measured, trial):
    return _systems.measured_provenance(trial, measured)


def with_custom_systems(systems, custom=None, prefix="/usr/local/lib/xdplab"):
    return _systems.with_custom(systems, custom or {}, prefix)


def custom_programs(custom):
    return _systems.custom_programs(custom)


def systems_need(matrix_systems, systems, check):
    return _systems.needs(matrix_systems, systems, check)


def forward_plan(system, egress, cpumap_cpu, touch_modes, count_modes):
    return _systems.forward_plan(system, egress, cpumap_cpu, touch_modes, count_modes)


def kind_of(system, name="?"):
    return _systems.kind_info(system, name)


def system_kinds(_ignored=None):
    return list(_systems.KINDS)


class FilterModule:
    """xdplab.testbed system kinds (the trial runner's registry)."""

    def filters(self):
        return {
            f.__name__: _wrap(f)
            for f in (
                trial_values,
                measured_provenance,
                with_custom_systems,
                systems_need,
                system_kinds,
                kind_of,
                forward_plan,
                custom_programs,
            )
        }
