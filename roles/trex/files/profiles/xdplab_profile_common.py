# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared code of the xdplab T-Rex stateless profiles (imported from the profile's directory).

Tunables reach get_streams() in two ways: T-Rex >= 2.88 passes `tunables` as an argv-style list
("--packet_len", "64", ...) (STLProfile.load_py), older releases pass them as keyword arguments
(packet_len=64). Both are accepted. `packet_len` is the frame length on the wire INCLUDING the 4-byte FCS (64 is the paper's
size), the same meaning as xdplab.testbed.traffic_generator's packet_len: the NIC appends the FCS,
so the packet built here is packet_len - 4 bytes.
"""

import argparse

try:  # T-Rex >= 2.5x
    from trex.stl.api import IP, UDP, Ether, STLFlowLatencyStats, STLPktBuilder, STLStream, STLTXCont
except ImportError:  # pragma: no cover - older layout
    from trex_stl_lib.api import IP, UDP, Ether, STLFlowLatencyStats, STLPktBuilder, STLStream, STLTXCont

FCS_LEN = 4
MIN_PACKET_LEN = 64
MAX_PACKET_LEN = 1518
# STLStream(mac_dst_override_mode=...): 0 takes the destination MAC from trex_cfg.yaml, 1 from the packet
DST_MAC_FROM_PACKET = 1


class ProfileError(ValueError):
    pass


def parser(description, extra=()):
    p = argparse.ArgumentParser(description=description, prog="profile", add_help=True)
    p.add_argument("--packet_len", type=int, default=64, help="frame length on the wire with FCS (64..1518)")
    p.add_argument("--stream_count", type=int, default=1, help="number of UDP flows")
    p.add_argument("--port_base", type=int, default=12, help="UDP destination port of flow 0 (flow i: port_base + i)")
    p.add_argument("--src_port", type=int, default=9, help="UDP source port of every flow")
    p.add_argument("--src_ip", default="198.18.0.1", help="IPv4 source address")
    p.add_argument("--dst_ip", default="198.18.0.2", help="IPv4 destination address (first one for multi-IP)")
    p.add_argument("--src_mac", default="", help="source MAC; empty: the port's MAC from trex_cfg.yaml")
    p.add_argument("--dst_mac", default="", help="destination MAC; empty: port_info dest_mac from trex_cfg.yaml")
    for args, kwargs in extra:
        p.add_argument(*args, **kwargs)
    return p


def parse(p, tunables, kwargs):
    argv = list(tunables or [])
    for key in sorted(kwargs):
        if key in ("direction", "port_id"):
            continue
        argv += ["--%s" % key, str(kwargs[key])]
    args = p.parse_args(argv)
    if not MIN_PACKET_LEN <= args.packet_len <= MAX_PACKET_LEN:
        raise ProfileError(
            "packet_len=%d is outside %d..%d (frame length with FCS)" % (args.packet_len, MIN_PACKET_LEN, MAX_PACKET_LEN)
        )
    if args.stream_count < 1:
        raise ProfileError("stream_count must be at least 1, got %d" % args.stream_count)
    if args.port_base < 0 or args.port_base + args.stream_count - 1 > 65535:
        raise ProfileError("port_base=%d with stream_count=%d leaves the UDP port range" % (args.port_base, args.stream_count))
    return args


def ipv4_add(address, n):
    parts = [int(x) for x in address.split(".")]
    value = (parts[0] << 24 | parts[1] << 16 | parts[2] << 8 | parts[3]) + n
    if value > 0xFFFFFFFF:
        raise ProfileError("%s + %d leaves the IPv4 address space" % (address, n))
    return ".".join(str(value >> s & 0xFF) for s in (24, 16, 8, 0))


def frame(args, dst_ip, dport, payload_fill=b"x"):
    """One frame without FCS, padded to packet_len - 4 bytes."""
    # only the MACs given: scapy fills an unset field itself (T-Rex's scapy 2.4.3 puts 00:00:00:02:00:00 into
    # an unset src), and the stream then takes that field from trex_cfg.yaml (see stream())
    macs = {key: value for key, value in (("src", args.src_mac), ("dst", args.dst_mac)) if value}
    pkt = Ether(**macs) / IP(src=args.src_ip, dst=dst_ip) / UDP(sport=args.src_port, dport=dport)
    pad = args.packet_len - FCS_LEN - len(pkt)
    if pad > 0:
        pkt = pkt / (payload_fill * pad)
    return pkt


def stream(args, pkt, flow_stats=None, **mode):
    kwargs = {"packet": STLPktBuilder(pkt=pkt), "mode": STLTXCont(**mode)}
    if flow_stats is not None:
        kwargs["flow_stats"] = flow_stats
    if args.src_mac:
        kwargs["mac_src_override_by_pkt"] = True
    if args.dst_mac:
        kwargs["mac_dst_override_mode"] = DST_MAC_FROM_PACKET
    return STLStream(**kwargs)


def latency_stats(pg_id):
    return STLFlowLatencyStats(pg_id=pg_id)
