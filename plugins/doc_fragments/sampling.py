# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The sampling options of every measuring module (plugins/module_utils/_measurement.py: SAMPLING_ARGUMENT_SPEC
    and Sampler). A module whose default differs states only ``default`` under the option in its own DOCUMENTATION
    (ansible-doc merges it over this fragment's option)."""

    DOCUMENTATION = r"""
options:
  warmup:
    description:
      - Seconds to wait before the window's first snapshot (lets the traffic generator ramp up).
    type: float
    default: 0.0
  warmup_from:
    description:
      - The instant O(warmup) counts from, on CLOCK_REALTIME (epoch seconds), e.g. the generator's start
        (RV(xdplab.testbed.traffic_generator#module:started_epoch)). The window then opens O(warmup) seconds after it,
        or at once when the module starts later than that. Default the module's own start.
    type: float
  interval:
    description:
      - Seconds per sample. Snapshots are taken on an absolute schedule (window start + i x O(interval)) on
        CLOCK_MONOTONIC, so the sampling does not drift; RV(measurement) gives the window's bounds on that clock.
    type: float
    default: 1.0
  samples:
    description:
      - Number of samples (O(samples) + 1 snapshots); the window is O(samples) x O(interval) seconds.
    type: int
    default: 3
"""

    # the CPU snapshots at the window's edges (module_utils/_measurement.py: CPU_WINDOW_ARGUMENT_SPEC)
    CPU_WINDOW = r"""
options:
  cpu_window_cpus:
    description:
      - "CPUs of which M(xdplab.testbed.cpu_usage) snapshots (C(/proc/stat) and the threads that may run there) are taken
        at the window's edges, just after its first counter read and just after its last, returned as
        RV(cpu_window). Pass its C(start) as cpu_usage's O(xdplab.testbed.cpu_usage#module:since) and its C(end) as
        O(xdplab.testbed.cpu_usage#module:until): the CPU figures then cover exactly the window whose packets were
        counted, and no cpu_usage call is needed before this task."
      - Empty, no snapshot is taken and RV(cpu_window) is not returned.
    type: list
    elements: int
    default: []
"""
