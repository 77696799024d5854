# SPDX-License-Identifier: GPL-3.0-or-later
"""bpf/xdp_lb (the Katran-like load balancer) and bpf/xdp_lb_check (the far side's check), run by the kernel on crafted
packets (BPF_PROG_RUN, no traffic), attached and filled as the experiment does: module xdp_program attaches xdp_lb to
dut0 of a namespace pair ``xd-lb-<random>``, module xdp_lb_config fills its maps (3 VIPs, 10 reals each, Maglev rings
of 65,537 slots). Checks: a UDP packet to a VIP comes back XDP_TX in IPIP, the outer header's checksum right, its
source the balancer's, its destination a real of that VIP (the ring's real for the flow), the Ethernet addresses
swapped, the inner packet unchanged; the same flow again is an LRU hit and goes to the same real; 200 sources spread
over the VIP's reals; a packet to no VIP and an ARP frame go to the stack; the counters (per VIP, LRU) read back;
a second xdp_lb_config changes nothing, check mode says what would change; xdp_lb_check on tg0 counts the
encapsulated packets as real_ok and a packet with another real's address as other_vip, one with a foreign address
as not_real, a broken checksum as bad_csum.
"""

import ipaddress
import os
import struct

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _lb, _libbpf

pytestmark = pytest.mark.root

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "bpf", "build")
MACS = {"tg0": "02:58:44:50:1b:01", "dut0": "02:58:44:50:1b:02"}
VIP, PORT_BASE, VIPS, REALS = "198.18.0.2", 12, 3, 10
XDP_DROP, XDP_PASS, XDP_TX = 1, 2, 3


def _csum(hdr):
    total = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(src, dst, sport, dport, payload=18, proto=17):
    udp = struct.pack("!HHHH", sport, dport, 8 + payload, 0) + bytes(payload)
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(udp),
        1,
        0,
        64,
        proto,
        0,
        ipaddress.IPv4Address(src).packed,
        ipaddress.IPv4Address(dst).packed,
    )
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    eth = bytes.fromhex(MACS["dut0"].replace(":", "")) + bytes.fromhex(MACS["tg0"].replace(":", "")) + b"\x08\x00"
    return eth + ip + udp


@pytest.fixture
def lab(netlab, bpf_build):
    bpf_build("xdp_lb.bpf.o", "xdp_lb_check.bpf.o")
    return netlab("xd-lb", macs=MACS, gro=["tg0", "dut0"], no_ipv6=True)


def test_balances_encapsulates_and_the_far_side_checks(lab):
    attached = lab.module(
        lab.dut,
        "xdp_program",
        {
            "interface": "dut0",
            "object": os.path.join(BUILD, "xdp_lb.bpf.o"),
            "program": "xdp_lb",
            "mode": "native",
            "state": "present",
        },
    )
    assert not attached.get("failed"), attached
    cfg = {"interface": "dut0", "vip_ip": VIP, "port_base": PORT_BASE, "vips": VIPS, "reals_per_vip": REALS}
    checked = lab.module(lab.dut, "xdp_lb_config", dict(cfg, _ansible_check_mode=True))
    assert checked["changed"] and not checked.get("failed"), checked
    filled = lab.module(lab.dut, "xdp_lb_config", cfg)
    assert filled["changed"], filled
    assert filled["plan"]["reals"] == VIPS * REALS and filled["plan"]["ring_size"] == 65537
    again = lab.module(lab.dut, "xdp_lb_config", cfg)
    assert not again["changed"], again
    plan = _lb.plan(VIP, PORT_BASE, VIPS, REALS)
    rings = dict(_lb.ring_values(plan))

    # the kernel's own answer on crafted packets: ids are global, the program is the one attached in the namespace
    fd = _libbpf.prog_fd_by_id(filled["prog_id"])
    try:
        seen = {}
        for vip in range(VIPS):
            for n in range(200):
                src = f"10.{vip}.{n // 250}.{n % 250 + 1}"
                frame = udp_frame(src, VIP, 9, PORT_BASE + vip)
                ret, out = _libbpf.test_run(fd, frame)
                assert ret == XDP_TX, (vip, n, ret)
                assert len(out) == len(frame) + 20
                assert out[0:6] == frame[6:12] and out[6:12] == frame[0:6], "the Ethernet addresses swapped"
                outer = out[14:34]
                assert outer[0] == 0x45 and outer[9] == 4, "IPIP"
                assert _csum(outer) == 0, "the outer checksum"
                assert struct.unpack("!H", outer[2:4])[0] == len(frame) - 14 + 20
                assert str(ipaddress.IPv4Address(outer[12:16])) == VIP, "the balancer's address as the outer source"
                dst = str(ipaddress.IPv4Address(outer[16:20]))
                assert dst in plan["vips"][vip]["reals"], (vip, dst)
                assert out[34:] == frame[14:], "the inner packet unchanged"
                seen.setdefault(vip, set()).add(dst)
                # the same flow again: an LRU hit (this CPU's table), the same real
                ret2, out2 = _libbpf.test_run(fd, frame)
                assert ret2 == XDP_TX and out2[30:34] == outer[16:20]
        # 200 sources over 10 reals: every real of each VIP takes some (Maglev: ~1/10 of the slots each)
        assert all(len(reals) == REALS for reals in seen.values()), {v: len(r) for v, r in seen.items()}
        assert rings[0][:3] and all(0 <= r < REALS for r in rings[0])
        # no VIP (another port), not IPv4 UDP/TCP (ARP): to the stack
        assert _libbpf.test_run(fd, udp_frame("10.0.0.1", VIP, 9, PORT_BASE + VIPS))[0] == XDP_PASS
        arp = udp_frame("10.0.0.1", VIP, 9, PORT_BASE)[:12] + b"\x08\x06" + bytes(46)
        assert _libbpf.test_run(fd, arp)[0] == XDP_PASS
        encapsulated = _libbpf.test_run(fd, udp_frame("10.9.9.9", VIP, 9, PORT_BASE + 1))[1]
    finally:
        os.close(fd)
    counters = lab.module(lab.dut, "xdp_lb_config", {"interface": "dut0", "state": "read"})["counters"]
    assert counters["tx"] == VIPS * 200 * 2 + 1
    assert counters["lru_hit"] >= VIPS * 200 and counters["lru_miss"] >= VIPS * 200
    assert counters["lru_hit"] + counters["lru_miss"] == counters["tx"]
    assert counters["not_vip"] == 1 and counters["not_lb"] == 1
    assert [v["packets"] for v in counters["per_vip"]] == [400, 401, 400]

    # the far side: xdp_lb_check on tg0
    drop = lab.module(
        lab.tg,
        "xdp_program",
        {
            "interface": "tg0",
            "object": os.path.join(BUILD, "xdp_lb_check.bpf.o"),
            "program": "xdp_lb_check",
            "mode": "native",
            "state": "present",
        },
    )
    assert not drop.get("failed"), drop
    filled = lab.module(lab.tg, "xdp_lb_config", dict(cfg, interface="tg0", role="check"))
    assert filled["changed"], filled
    fd = _libbpf.prog_fd_by_id(filled["prog_id"])
    try:
        assert _libbpf.test_run(fd, encapsulated)[0] == XDP_DROP
        other = bytearray(encapsulated)
        other[30:34] = ipaddress.IPv4Address(plan["vips"][0]["reals"][0]).packed  # a real of VIP 0, inner to VIP 1
        other[24:26] = b"\0\0"
        other[24:26] = struct.pack("!H", _csum(bytes(other[14:34])))
        _libbpf.test_run(fd, bytes(other))
        foreign = bytearray(other)
        foreign[30:34] = ipaddress.IPv4Address("192.0.2.1").packed
        foreign[24:26] = b"\0\0"
        foreign[24:26] = struct.pack("!H", _csum(bytes(foreign[14:34])))
        _libbpf.test_run(fd, bytes(foreign))
        broken = bytearray(encapsulated)
        broken[24] ^= 0xFF
        _libbpf.test_run(fd, bytes(broken))
        _libbpf.test_run(fd, udp_frame("10.0.0.1", VIP, 9, PORT_BASE))
    finally:
        os.close(fd)
    check = lab.module(lab.tg, "xdp_lb_config", {"interface": "tg0", "role": "check", "state": "read"})["counters"]
    assert check == {"real_ok": 1, "other_vip": 1, "not_real": 1, "bad_csum": 1, "bad_src": 0, "not_ipip": 1}, check
