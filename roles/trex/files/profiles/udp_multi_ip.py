# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""udp_for_benchmarks with the destination IP varied across flows.

Flow i goes to dst_ip + (i mod ip_count) and UDP port port_base + i. With ip_count equal to
stream_count every flow has its own destination address (the multi-IP variant: exercises a DUT's
per-destination state, e.g. a route or conntrack lookup, instead of one hot entry).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xdplab_profile_common as common


class UdpMultiIp:
    description = "stream_count UDP flows over ip_count destination addresses"

    def get_streams(self, direction=0, port_id=0, tunables=None, **kwargs):
        extra = [(("--ip_count",), {"type": int, "default": 0, "help": "destination addresses (0: one per flow)"})]
        args = common.parse(common.parser(self.description, extra), tunables, kwargs)
        ip_count = args.ip_count or args.stream_count
        if ip_count < 1:
            raise common.ProfileError("ip_count must be at least 1, got %d" % ip_count)
        return [
            common.stream(args, common.frame(args, common.ipv4_add(args.dst_ip, i % ip_count), args.port_base + i), pps=1)
            for i in range(args.stream_count)
        ]


def register():
    return UdpMultiIp()
