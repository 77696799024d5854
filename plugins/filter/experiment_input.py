# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""experiment_input_errors: every error of an experiment's input, before anything changes (roles/experiment/tasks/
validate.yml). The checks are plugins/module_utils/_experiment_input.py ``input_errors``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _experiment_input


def experiment_input_errors(options, matrix, dut, generator, impls, backends=None, touch_modes=(), tcp_programs=(),
                            afxdp_binds=(), generators=(), vlab=(), online_cpus=None):  # fmt: skip
    """``options | experiment_input_errors(matrix, dut, generator, impls, ...)``: one message per wrong value."""
    if backends is None:
        # imported here: the generator backends take ~50 ms to import (plugins/filter/experiment.py)
        from ansible_collections.xdplab.testbed.plugins.module_utils._generators import backend_names

        backends = backend_names()
    for name, value in (("options", options), ("dut", dut)):
        if not isinstance(value, dict):
            raise AnsibleFilterError("experiment_input_errors: %s must be a mapping, got %r" % (name, value))
    try:
        return _experiment_input.input_errors(
            options, matrix, dut, generator, list(impls or ()), backends=list(backends), touch_modes=list(touch_modes),
            tcp_programs=list(tcp_programs), afxdp_binds=list(afxdp_binds), generators=list(generators or ()),
            vlab=list(vlab or ()), online_cpus=online_cpus,
        )  # fmt: skip
    except _experiment_input.InputCheckError as exc:
        raise AnsibleFilterError("experiment_input_errors: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"experiment_input_errors": experiment_input_errors}
