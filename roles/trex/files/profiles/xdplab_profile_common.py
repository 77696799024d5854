# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared code of the xdplab T-Rex stateless profiles (imported from the profile's directory).

Tunables reach get_streams() in two ways: T-Rex >= 2.88 passes `tunables` as an argv-style list
("--packet_len", "64", ...) (STLProfile.load_py), older releases pass them as keyword arguments
(packet_len=64). Both are accepted. `packet_len` is the frame length on the wire INCLUDING the 4-byte FCS (64 is the paper's
size), the same meaning as xdplab.testbed.traffic_generator's packet_len: the NIC appends the FCS,
so the packet built here is packet_len - 4 bytes.

Address lists (issue 27): `dst_list` / `src_list` name a file of IPv4 addresses, one a line (blank and `#` lines
skipped), as xdplab-trafficgen's --dst-list / --src-list read them. Each stream then carries the list in T-Rex's
field engine: a flow variable over the list (STLVmFlowVar value_list, op inc: the frames walk it round robin from
its first entry), written to IP.dst / IP.src (STLVmWrFlowVar), and the IPv4 header checksum fixed for every frame
(STLVmFixIpv4). The UDP checksum is 0 (none, RFC 768) in a frame with a list, as xdplab-trafficgen sends it: the
field engine would leave a stale one (its pseudo-header holds the addresses). The variable is split to cores
(split_to_cores, the default): T-Rex gives each of its n data-path cores of the port the list from its own start
(core k at entry k) stepping n entries (trex-core src/stx/stl/trex_stl_vm_splitter.cpp, StreamVmInstructionFlowMan
update), so the cores share the walk. A list holds at most 65,535 addresses (trex_stl_rpc_cmds.cpp check_value_list).
"""

import argparse
import ipaddress

try:  # T-Rex >= 2.5x
    from trex.stl.api import (
        IP,
        UDP,
        Ether,
        STLFlowLatencyStats,
        STLPktBuilder,
        STLScVmRaw,
        STLStream,
        STLTXCont,
        STLVmFixIpv4,
        STLVmFlowVar,
        STLVmWrFlowVar,
    )
except ImportError:  # pragma: no cover - older layout
    from trex_stl_lib.api import (
        IP,
        UDP,
        Ether,
        STLFlowLatencyStats,
        STLPktBuilder,
        STLScVmRaw,
        STLStream,
        STLTXCont,
        STLVmFixIpv4,
        STLVmFlowVar,
        STLVmWrFlowVar,
    )

FCS_LEN = 4
MIN_PACKET_LEN = 64
MAX_PACKET_LEN = 1518
# STLStream(mac_dst_override_mode=...): 0 takes the destination MAC from trex_cfg.yaml, 1 from the packet
DST_MAC_FROM_PACKET = 1
# the most values T-Rex's field engine takes in a value_list (trex-core trex_stl_rpc_cmds.cpp check_value_list)
MAX_LIST = 65535
# tunable -> (field of IP the list's flow variable is written to, flow variable name)
LISTS = {"dst_list": ("dst", "xdplab_dst"), "src_list": ("src", "xdplab_src")}


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
    p.add_argument("--dst_list", default="", help="file of IPv4 destinations, one a line, the frames walk round robin")
    p.add_argument("--src_list", default="", help="file of IPv4 sources, one a line, the frames walk round robin")
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
    args.lists = {}
    for tunable, (field, _name) in LISTS.items():
        path = getattr(args, tunable)
        if path:
            args.lists[field] = read_list(path, tunable)
    # the frame before the field engine's first write is the list's first entry (as xdplab-trafficgen's)
    if "dst" in args.lists:
        args.dst_ip = args.lists["dst"][0]
    if "src" in args.lists:
        args.src_ip = args.lists["src"][0]
    return args


def read_list(path, tunable):
    """The addresses of a list file (one IPv4 address a line; blank and # lines skipped), checked."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise ProfileError("%s=%s cannot be read: %s" % (tunable, path, exc)) from None
    addresses = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            addresses.append(str(ipaddress.IPv4Address(text)))
        except ValueError:
            raise ProfileError("%s=%s line %d: %r is not an IPv4 address" % (tunable, path, number, text)) from None
    if not addresses:
        raise ProfileError("%s=%s holds no address" % (tunable, path))
    if len(addresses) > MAX_LIST:
        raise ProfileError(
            "%s=%s holds %d addresses; T-Rex's field engine takes at most %d in a list (value_list)"
            % (tunable, path, len(addresses), MAX_LIST)
        )
    return addresses


def vm(args):
    """The field engine program of a stream with address lists (see the module docstring), or None without."""
    if not args.lists:
        return None
    commands = []
    for field, name in (LISTS[t] for t in sorted(LISTS)):
        if field in args.lists:
            # op inc walks the list from its first entry; split_to_cores: core k of n starts at k and steps n
            commands.append(STLVmFlowVar(name=name, value_list=list(args.lists[field]), size=4, op="inc", split_to_cores=True))
            commands.append(STLVmWrFlowVar(fv_name=name, pkt_offset="IP.%s" % field))
    commands.append(STLVmFixIpv4(offset="IP"))
    return STLScVmRaw(commands)


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
    # with an address list the UDP checksum is 0 (none): the field engine changes the addresses it covers
    udp = {"chksum": 0} if getattr(args, "lists", None) else {}
    pkt = Ether(**macs) / IP(src=args.src_ip, dst=dst_ip) / UDP(sport=args.src_port, dport=dport, **udp)
    pad = args.packet_len - FCS_LEN - len(pkt)
    if pad > 0:
        pkt = pkt / (payload_fill * pad)
    return pkt


def stream(args, pkt, flow_stats=None, **mode):
    kwargs = {"packet": STLPktBuilder(pkt=pkt, vm=vm(args)), "mode": STLTXCont(**mode)}
    if flow_stats is not None:
        kwargs["flow_stats"] = flow_stats
    if args.src_mac:
        kwargs["mac_src_override_by_pkt"] = True
    if args.dst_mac:
        kwargs["mac_dst_override_mode"] = DST_MAC_FROM_PACKET
    return STLStream(**kwargs)


def latency_stats(pg_id):
    return STLFlowLatencyStats(pg_id=pg_id)
