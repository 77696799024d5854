# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""experiment_input_errors: every error of an experiment's input, before anything changes (roles/experiment/tasks/
validate.yml). The checks are plugins/module_utils/_experiment_input.py ``input_errors``: every experiment's, the
forwarding experiment's (``forwarding``) and the latency experiment's (the option experiment_latency)."""

from __future__ import annotations

from ansible.errors import AnsibleError, AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _experiment_input


def experiment_input_errors(options, matrix, dut, generator, impls, backends=None, touch_modes=(), tcp_programs=(),
                            afxdp_binds=(), generators=(), vlab=(), online_cpus=None, forwarding=None, hostvars=None,
                            hosts=(), duts=()):  # fmt: skip
    """``options | experiment_input_errors(matrix, dut, generator, impls, ...)``: one message per wrong value.

    hostvars and hosts: the inventory's variables and the hosts to read of it (groups['all']): the other DUTs of the
    same generator host (``duts``, groups['duts']) and every host's generator ports are compared with this DUT's."""
    if backends is None:
        # imported here: the generator backends take ~50 ms to import (plugins/filter/experiment.py)
        from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_names

        backends = backend_names()
    for name, value in (("options", options), ("dut", dut)):
        if not isinstance(value, dict):
            raise AnsibleFilterError("experiment_input_errors: %s must be a mapping, got %r" % (name, value))
    others = {}
    for host in hosts or ():
        if host == dut.get("inventory_hostname") or hostvars is None:
            continue
        others[host] = {field: _read(hostvars, host, field) for field in _OTHERS_FIELDS}
    try:
        return _experiment_input.input_errors(
            options, matrix, dut, generator, list(impls or ()), backends=list(backends), touch_modes=list(touch_modes),
            tcp_programs=list(tcp_programs), afxdp_binds=list(afxdp_binds), generators=list(generators or ()),
            vlab=list(vlab or ()), online_cpus=online_cpus, others=others, duts=list(duts or ()), forward=forwarding,
        )  # fmt: skip
    except _experiment_input.InputCheckError as exc:
        raise AnsibleFilterError("experiment_input_errors: %s" % exc) from None


#: what of another host the checks read: a DUT's addresses and ports, a generator's ports
_OTHERS_FIELDS = (
    "xdplab_generator_host", "xdplab_dut_interface", "xdplab_dut_ip", "xdplab_dut_mac", "xdplab_dut_egress_interface",
    "xdplab_dut_egress_ip", "xdplab_dut_egress_mac", "xdplab_dut_generator", "xdplab_generator_interface",
    "xdplab_generator_rx_interface",
)  # fmt: skip


def _read(hostvars, host, field):
    """One variable of another host, templated; None where it is not set (or does not template)."""
    try:
        value = hostvars[host].get(field)
    except (AnsibleError, KeyError, TypeError):  # an undefined or broken variable of another host is "not set" here
        return None
    return value


class FilterModule:
    def filters(self):
        return {"experiment_input_errors": experiment_input_errors}
