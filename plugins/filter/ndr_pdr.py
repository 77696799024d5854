# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NDR/PDR search's goals and generator, checked before anything changes (plugins/module_utils/_ndrpdr.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils import _ndrpdr


def ndr_pdr_goals(goals):
    """The goals with CSIT's defaults filled in; an error on a value MLRsearch refuses (loss ratio outside [0, 1), ...)."""
    try:
        return _ndrpdr.check_goals(goals)
    except _ndrpdr.SearchInputError as exc:
        raise AnsibleFilterError("ndr_pdr goals: %s" % exc) from None


def ndr_pdr_backend_problem(backend):
    """Why an NDR/PDR search cannot run on this generator backend, '' when it can."""
    return _ndrpdr.backend_problem(backend)


class FilterModule:
    def filters(self):
        return {"ndr_pdr_goals": ndr_pdr_goals, "ndr_pdr_backend_problem": ndr_pdr_backend_problem}
