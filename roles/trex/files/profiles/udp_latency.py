# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load over stream_count UDP flows plus one latency stream (flow-stats latency, STLFlowLatencyStats).

T-Rex gives a latency stream a fixed rate: the start multiplier does not scale it (trex-core
src/stx/stl/trex_stl_stream.h is_fixed_rate_stream; a pps multiplier is the total with the fixed rate
included, trex_stl_streams_compiler.h). So:

- the load: stream_count UDP flows, flow i to port port_base + i, 1 pps each, scaled by the start
  multiplier like udp_for_benchmarks.py (any multiplier, "100%" too); load_pps > 0 instead gives them
  load_pps in all at an absolute rate (start with the raw multiplier "1"); load_pps 0: no load;
- latency_pps frames/s under pg_id, to UDP port port_base + stream_count (its own RSS flow), carrying
  T-Rex's timestamp and sequence payload (16 bytes: 64-byte frames have 18 bytes of UDP payload).

The paper's latency table was measured at 100 pps and 1 Mpps of total load.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xdplab_profile_common as common


class UdpLatency:
    description = "stream_count UDP flows scaled by the multiplier (or load_pps) plus a fixed-rate latency stream under pg_id"

    def get_streams(self, direction=0, port_id=0, tunables=None, **kwargs):
        extra = [
            (("--pg_id",), {"type": int, "default": 7, "help": "flow-stats group id of the latency stream"}),
            (("--latency_pps",), {"type": float, "default": 1000.0, "help": "frames per second of the latency stream"}),
            (
                ("--load_pps",),
                {
                    "type": float,
                    "default": None,
                    "help": "absolute load over all flows, frames/s (0: none; unset: 1 pps a flow, scaled)",
                },
            ),
        ]
        args = common.parse(common.parser(self.description, extra), tunables, kwargs)
        if args.latency_pps <= 0:
            raise common.ProfileError("latency_pps must be greater than 0, got %s" % args.latency_pps)
        if args.load_pps is not None and args.load_pps < 0:
            raise common.ProfileError("load_pps must be 0 (no load) or positive, got %s" % args.load_pps)
        streams = []
        if args.load_pps is None or args.load_pps > 0:
            share = 1 if args.load_pps is None else args.load_pps / args.stream_count
            streams = [
                common.stream(args, common.frame(args, args.dst_ip, args.port_base + i), pps=share)
                for i in range(args.stream_count)
            ]
        latency_pkt = common.frame(args, args.dst_ip, args.port_base + args.stream_count)
        streams.append(common.stream(args, latency_pkt, flow_stats=common.latency_stats(args.pg_id), pps=args.latency_pps))
        return streams


def register():
    return UdpLatency()
