# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Address checks for inventory validation (netaddr, no ansible.utils needed), and field_errors: the input checks
of an experiment, each error naming the one field and value that is wrong (plugins/module_utils/_experiment_input.py
holds them; experiment_input_errors in experiment_input.py checks a whole experiment with them)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _experiment_input
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, parse_cpu_list


def _filter(function):
    """The module_utils check as a filter: a malformed check (or no netaddr) is the filter's error."""

    def wrapped(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _experiment_input.InputCheckError as exc:
            raise AnsibleFilterError(str(exc)) from None

    wrapped.__name__ = function.__name__
    wrapped.__doc__ = function.__doc__
    return wrapped


valid_mac = _filter(_experiment_input.valid_mac)
valid_ipv4 = _filter(_experiment_input.valid_ipv4)
valid_ipv4_interface = _filter(_experiment_input.valid_ipv4_interface)
field_errors = _filter(_experiment_input.field_errors)


def cpu_list(value):
    """'0-3,5' (the format of /sys/devices/system/cpu/online) -> [0, 1, 2, 3, 5]."""
    try:
        return parse_cpu_list(value)
    except CpuListError as exc:
        raise AnsibleFilterError("cpu_list: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {
            "cpu_list": cpu_list,
            "field_errors": field_errors,
            "valid_mac": valid_mac,
            "valid_ipv4": valid_ipv4,
            "valid_ipv4_interface": valid_ipv4_interface,
        }
