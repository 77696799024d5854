# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The one ``measurement`` shape, documented once (plugins/module_utils/_measurement.py builds it).

    ansible-doc merges doc fragments into DOCUMENTATION only (options, attributes, notes, seealso, ...): a RETURN
    cannot come from a fragment (ansible.utils.plugin_docs.add_fragments never touches the RETURN block). So the
    shape is documented here, as notes every measuring module gets through ``extends_documentation_fragment:
    xdplab.testbed.measurement``, and each module's RETURN has one ``measurement`` entry (type dict) that refers
    to these notes. tests/unit/test_measurement.py checks that the notes name every key of the shape and that every
    measuring module uses the fragments.
    """

    DOCUMENTATION = r"""
options: {}
notes:
  - "RV(measurement) is the one shape every measuring module returns (xdp_stats, netfilter_stats, ethtool_stats,
    testpmd, xsk_bench; docs/ARCHITECTURE.md, Contract \"measurement\"). Its keys are always present; lists may be
    empty and numbers null where the source cannot know."
  - "RV(measurement): C(pps) (float) packets per second over the whole window; C(packets) (int) packets counted in
    the window; C(ns_per_packet) (float) 1e9 / pps, null without traffic; C(per_cpu) (list of C({cpu, pps})) CPUs
    with traffic, empty where the source cannot tell CPUs apart; C(per_rxq) (list of C({queue, pps})) RX queues
    with traffic, with source-specific keys such as C(cpus), C(port), C(counter)."
  - "RV(measurement): C(samples) (list of C({t, seconds, packets, pps})) one per interval, C(t) the end of the
    interval from the window start; C(spread) (dict C({min_pps, max_pps, stdev_pps, cv})) how stable the samples
    were; C(queue_spread) (float) busiest RX queue over the mean of the queues with traffic; C(imbalance) (dict,
    or null) the verdict on the active CPUs and RX queues (C(imbalanced), C(max_over_mean), C(busiest_cpu),
    C(busiest_queue), C(reason), ...)."
  - "RV(measurement): C(window) (dict C({start, end, seconds, clock})) the window on the host's CLOCK_MONOTONIC,
    so another measurement of the same host (the generator's per-second records) can be cut to it; C(source) (dict)
    what counted: C(kind) (program_map, driver_counters, netfilter_rule, ethtool, testpmd, xsk_bench), C(at)
    (C(dut), or C(generator_rx) where packets came back), and per kind more (xdp_stats: C(count_mode) driver or
    program); C(details) (dict) what only this source knows."
"""
