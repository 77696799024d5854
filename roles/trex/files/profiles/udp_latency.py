# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load at a fixed rate plus one latency stream (flow-stats latency, STLFlowLatencyStats).

T-Rex scales every stream of a port by the start multiplier, so a latency stream beside multiplier-
scaled load streams would get a share of the rate proportional to its own. This profile therefore
gives every stream its absolute rate and is started with the raw multiplier "1":

- load_pps frames/s (0: none) spread over stream_count UDP flows, flow i to port port_base + i;
- latency_pps frames/s under pg_id, to UDP port port_base + stream_count (its own RSS flow), carrying
  T-Rex's timestamp and sequence payload (16 bytes: 64-byte frames have 18 bytes of UDP payload).

The paper's latency table was measured at 100 pps and 1 Mpps of total load.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xdplab_profile_common as common


class UdpLatency:
    description = "load_pps over stream_count UDP flows plus a latency stream of latency_pps under pg_id (start with mult 1)"

    def get_streams(self, direction=0, port_id=0, tunables=None, **kwargs):
        extra = [
            (("--pg_id",), {"type": int, "default": 7, "help": "flow-stats group id of the latency stream"}),
            (("--latency_pps",), {"type": float, "default": 1000.0, "help": "frames per second of the latency stream"}),
            (("--load_pps",), {"type": float, "default": 0.0, "help": "frames per second of load over all flows"}),
        ]
        args = common.parse(common.parser(self.description, extra), tunables, kwargs)
        if args.latency_pps <= 0:
            raise common.ProfileError("latency_pps must be greater than 0, got %s" % args.latency_pps)
        if args.load_pps < 0:
            raise common.ProfileError("load_pps must be 0 (no load) or positive, got %s" % args.load_pps)
        streams = []
        if args.load_pps > 0:
            share = args.load_pps / args.stream_count
            streams = [
                common.stream(args, common.frame(args, args.dst_ip, args.port_base + i), pps=share)
                for i in range(args.stream_count)
            ]
        latency_pkt = common.frame(args, args.dst_ip, args.port_base + args.stream_count)
        streams.append(common.stream(args, latency_pkt, flow_stats=common.latency_stats(args.pg_id), pps=args.latency_pps))
        return streams


def register():
    return UdpLatency()
