# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the providers in files of their own share: a failed input check as the phase's failure (_kind_dpdk.py,
_kind_af_xdp.py, _kind_forward.py); and for the userspace kinds (_kind_dpdk.py, _kind_af_xdp.py) the NIC's NAPI threads
on the lab's NIC CPUs (issue 28, was tasks/systems/nic_cpus.yml) and a file copied from the controller to the task's
host (the copy action, as ansible.builtin.copy does it)."""

from __future__ import annotations


def failure(msg, result=None):
    """A failed input check (was an ``ansible.builtin.assert``): the phase's failed result with this message (or a
    failed result as it is)."""
    # _trial.py imports the kinds' modules (PROVIDERS): its exception is imported when a check fails
    from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PhaseFailure

    return PhaseFailure(dict(result or {}, failed=True, msg=msg))


def nic_cpus(phases):
    """The lab's NIC CPUs (xdplab_nic_cpus, from the CPU layout; [] on hardware and where the lab has none)."""
    return list(phases.var("xdplab_nic_cpus", []) or [])


def napi_to(phases, cpus):
    """The NIC's work on ``cpus`` (virtual lab): on veth the DUT's NAPI thread does for DPDK's net_af_xdp and for
    AF_XDP what a NIC's DMA does on hardware (it only feeds their socket), so their setup moves the ingress port's
    NAPI threads onto the lab's NIC CPUs and their teardown back onto the DUT's CPUs (module napi_affinity)."""
    phases.module("xdplab.testbed.napi_affinity", {"interface": phases.var("xdplab_dut_interface"), "cpus": cpus})


def copy_to_host(phases, src, dest, mode):
    """``ansible.builtin.copy`` of a controller file to the task's host: its action plugin (transfer, checksum,
    module copy), run with this task's connection; raises the phase's failure with its result."""
    action = phases.action
    task = action._task.copy()
    task.args = {"src": src, "dest": dest, "mode": mode}
    copy = action._shared_loader_obj.action_loader.get(
        "ansible.legacy.copy",
        task=task,
        connection=action._connection,
        play_context=action._play_context,
        loader=action._loader,
        templar=action._templar,
        shared_loader_obj=action._shared_loader_obj,
    )
    result = copy.run(task_vars=phases.task_vars)
    phases.modules.append("ansible.builtin.copy")
    phases.warnings.extend(result.get("warnings") or [])
    if result.get("failed"):
        raise failure(result.get("msg") or f"copying {src} to {dest} failed", result)
    phases.changed = phases.changed or bool(result.get("changed"))
    return result
