# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one generator interface of xdplab.testbed.

A backend starts traffic, reports whether it still runs, and stops it returning a
summary in one shape, whatever produced the packets:

    {"backend": str, "sent": int, "elapsed_s": float, "offered_pps": float,
     "packet_len": int, "stream_count": int, "threads": [...],
     "egress": {"delivered": int|None, "refused": int|None}, "version": str,
     "command": [...]}

`egress.refused` counts frames the egress device could not hand on (on veth: the
DUT's ring was full, i.e. loss caused by the DUT). Backends register in BACKENDS;
the xdp_live backend runs on the virtual lab, T-Rex joins on hardware; iperf3 offers TCP streams
(the TCP experiment: its summary also carries `tcp`, the client's goodput and retransmits).
"""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils._generators.base import GeneratorError
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.iperf3 import Iperf3Generator
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.trex import TrexGenerator
from ansible_collections.xdplab.testbed.plugins.module_utils._generators.xdp_live import XdpLiveGenerator

BACKENDS = {
    XdpLiveGenerator.name: XdpLiveGenerator,
    TrexGenerator.name: TrexGenerator,
    Iperf3Generator.name: Iperf3Generator,
}

__all__ = ["BACKENDS", "GeneratorError", "backend_for", "backend_names"]


def backend_names():
    return sorted(BACKENDS)


def backend_for(name):
    try:
        return BACKENDS[name]
    except KeyError:
        raise GeneratorError(
            "unknown generator backend %r; known backends: %s" % (name, ", ".join(backend_names()))
        ) from None
