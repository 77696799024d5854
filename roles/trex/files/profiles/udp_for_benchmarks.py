# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The paper's udp_for_benchmarks.py, as xdplab runs it.

stream_count continuous UDP streams of equal rate; flow i goes to UDP destination port port_base + i
(12 + i by default) from source port 9, so the DUT's RSS spreads flow i to its own RX queue. The
engineers ran it from trex-console as

    start -f udp_for_benchmarks.py -t packet_len=64,stream_count=6 --port 0 -m 100mpps

T-Rex divides the multiplier's rate over the streams (each stream asks for 1 pps, the multiplier scales).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xdplab_profile_common as common


class UdpForBenchmarks:
    description = "stream_count UDP flows, flow i to UDP port port_base+i"

    def get_streams(self, direction=0, port_id=0, tunables=None, **kwargs):
        args = common.parse(common.parser(self.description), tunables, kwargs)
        return [common.stream(args, common.frame(args, args.dst_ip, args.port_base + i), pps=1) for i in range(args.stream_count)]


def register():
    return UdpForBenchmarks()
