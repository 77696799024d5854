# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The check_mode/diff_mode attribute blocks the modules repeated.

    ``xdplab.testbed.attributes``: the descriptions only; the module says ``support`` (and may give its own
    ``description``, which wins over the fragment's: ansible-doc merges a module's attribute over the fragment's).
    ``xdplab.testbed.attributes.read_only``: a module that only reads (check mode full, no diff).
    """

    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and say what would change without changing the target.
  diff_mode:
    description: Returns the before and after of what changed (or would change in check mode) in diff mode.
"""

    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs unchanged in check mode and never reports a change.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
"""
