# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small generic-netlink client for the kernel's netdev family (Linux 6.x), standard library only.

What it answers: RX queue -> NAPI id -> kernel thread pid (vlab_topology pins NAPI threads with it) and a
device's XDP features (host_preflight checks the XDP modes of a driver with it), optionally inside a named
network namespace.

Why not pyroute2 (tried: pyroute2 0.9.7 on Linux 6.18, namespaces, veth with 2 RX/TX queues, threaded NAPI):
pyroute2 creates namespaces and veth pairs with queue counts well, but it has no netdev family, so its
GenericNetlinkSocket still needs hand-written message definitions for queue-get, napi-get and dev-get (the
same constants as below), threaded NAPI is still a sysfs write and GRO/channels are still ethtool. The
links themselves are converged with iproute2 (`ip -j`), which the netns connection needs anyway. And these
helpers also run on lab hosts under their system Python (/usr/bin/python3), where pyroute2 is not installed;
this file travels inside the module (AnsiballZ) and needs nothing there.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import struct

NETNS_RUN_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000

NETLINK_GENERIC = 16
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_DUMP = 0x300
NLMSG_ERROR = 0x2
NLMSG_DONE = 0x3
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NETDEV_CMD_QUEUE_GET = 10
NETDEV_CMD_NAPI_GET = 11
NETDEV_A_QUEUE_ID = 1
NETDEV_A_QUEUE_IFINDEX = 2
NETDEV_A_QUEUE_TYPE = 3
NETDEV_A_QUEUE_NAPI_ID = 4
NETDEV_QUEUE_TYPE_RX = 0
NETDEV_A_NAPI_IFINDEX = 1
NETDEV_A_NAPI_ID = 2
NETDEV_A_NAPI_PID = 4
NETDEV_CMD_DEV_GET = 1
NETDEV_A_DEV_IFINDEX = 1
NETDEV_A_DEV_XDP_FEATURES = 3
# enum netdev_xdp_act (include/uapi/linux/netdev.h)
XDP_FEATURE_BITS = {
    "basic": 1 << 0,
    "redirect": 1 << 1,
    "ndo-xmit": 1 << 2,
    "xsk-zerocopy": 1 << 3,
    "hw-offload": 1 << 4,
    "rx-sg": 1 << 5,
    "ndo-xmit-sg": 1 << 6,
}


def nl_attr(attr_type, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * ((4 - length % 4) % 4)


def nl_parse_attrs(data):
    attrs = {}
    off = 0
    while off + 4 <= len(data):
        length, attr_type = struct.unpack_from("=HH", data, off)
        if length < 4:
            break
        attrs[attr_type & 0x3FFF] = data[off + 4 : off + length]
        off += (length + 3) & ~3
    return attrs


def nl_u32(attrs, key):
    value = attrs.get(key)
    return struct.unpack("=I", value[:4])[0] if value is not None and len(value) >= 4 else None


class Genl:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.seq = 0

    def close(self):
        self.sock.close()

    def request(self, family, cmd, payload, dump=False):
        self.seq += 1
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else NLM_F_ACK)
        body = struct.pack("=BBH", cmd, 1, 0) + payload
        self.sock.send(struct.pack("=IHHII", 16 + len(body), family, flags, self.seq, 0) + body)
        replies = []
        while True:
            data = self.sock.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                length, msg_type, _flags, seq, _pid = struct.unpack_from("=IHHII", data, off)
                msg = data[off + 16 : off + length]
                off += (length + 3) & ~3
                if seq != self.seq:
                    continue
                if msg_type == NLMSG_ERROR:
                    err = struct.unpack_from("=i", msg)[0]
                    if err:
                        raise OSError(-err, os.strerror(-err))
                    return replies
                if msg_type == NLMSG_DONE:
                    return replies
                replies.append(nl_parse_attrs(msg[4:]))

    def family_id(self, name):
        replies = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, nl_attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
        for attrs in replies:
            if CTRL_ATTR_FAMILY_ID in attrs:
                return struct.unpack("=H", attrs[CTRL_ATTR_FAMILY_ID][:2])[0]
        raise OSError(2, f"generic netlink family {name} not found")


@contextlib.contextmanager
def in_netns(name):
    """Enter network namespace NAME for the duration of the block (sockets created inside stay there)."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(os.path.join(NETNS_RUN_DIR, name), os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into network namespace {name}: {os.strerror(err)}")
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns back to the original network namespace: {os.strerror(err)}")
    finally:
        os.close(own)
        os.close(target)


def napi_threads(namespace, ifindex):
    """[{queue, napi_id, pid}] for the RX queues of IFINDEX in NAMESPACE (None: the namespace this process is in)."""
    if namespace is None:
        genl = Genl()
    else:
        with in_netns(namespace):
            genl = Genl()
    try:
        family = genl.family_id("netdev")
        ifattr = nl_attr(NETDEV_A_QUEUE_IFINDEX, struct.pack("=I", ifindex))
        queues = genl.request(family, NETDEV_CMD_QUEUE_GET, ifattr, dump=True)
        napis = genl.request(family, NETDEV_CMD_NAPI_GET, nl_attr(NETDEV_A_NAPI_IFINDEX, struct.pack("=I", ifindex)), dump=True)
    finally:
        genl.close()
    pid_of = {}
    for attrs in napis:
        if nl_u32(attrs, NETDEV_A_NAPI_IFINDEX) not in (None, ifindex):
            continue
        pid_of[nl_u32(attrs, NETDEV_A_NAPI_ID)] = nl_u32(attrs, NETDEV_A_NAPI_PID)
    rx_queues = []
    for attrs in queues:
        if nl_u32(attrs, NETDEV_A_QUEUE_TYPE) != NETDEV_QUEUE_TYPE_RX:
            continue
        if nl_u32(attrs, NETDEV_A_QUEUE_IFINDEX) not in (None, ifindex):
            continue
        rx_queues.append((nl_u32(attrs, NETDEV_A_QUEUE_ID), nl_u32(attrs, NETDEV_A_QUEUE_NAPI_ID)))
    return map_queues_to_napi(rx_queues, pid_of)


def map_queues_to_napi(rx_queues, pid_of):
    """Join RX queues [(queue, napi_id or None)] with NAPI instances {napi_id: pid}.

    Drivers that call netif_queue_set_napi() report each queue's NAPI id. veth does not (Linux 6.18):
    it adds one NAPI per RX queue in queue order and NAPI ids are handed out in that order, so the
    q-th smallest NAPI id belongs to RX queue q (verified with per-queue counters and per-thread run time).
    """
    rx_queues = sorted(rx_queues, key=lambda q: q[0])
    if rx_queues and all(napi_id for _q, napi_id in rx_queues):
        return [{"queue": q, "napi_id": n, "pid": pid_of.get(n)} for q, n in rx_queues]
    napi_ids = sorted(n for n in pid_of if n)
    result = []
    for index, (q, _n) in enumerate(rx_queues):
        napi_id = napi_ids[index] if len(napi_ids) == len(rx_queues) else None
        result.append({"queue": q, "napi_id": napi_id, "pid": pid_of.get(napi_id)})
    return result


def nl_u64(attrs, key):
    value = attrs.get(key)
    return struct.unpack("=Q", value[:8])[0] if value is not None and len(value) >= 8 else None


def xdp_feature_names(bits):
    """The netdev family's xdp-features bit mask -> names (basic, redirect, xsk-zerocopy, hw-offload, ...)."""
    return [name for name, bit in XDP_FEATURE_BITS.items() if bits & bit]


def xdp_features(ifindex, namespace=None):
    """The XDP features the kernel reports for IFINDEX (Linux 6.3+), as names; OSError when it cannot tell."""
    with in_netns(namespace) if namespace else contextlib.nullcontext():
        genl = Genl()
    try:
        family = genl.family_id("netdev")
        devs = genl.request(family, NETDEV_CMD_DEV_GET, nl_attr(NETDEV_A_DEV_IFINDEX, struct.pack("=I", ifindex)))
    finally:
        genl.close()
    for attrs in devs:
        if nl_u32(attrs, NETDEV_A_DEV_IFINDEX) == ifindex:
            bits = nl_u64(attrs, NETDEV_A_DEV_XDP_FEATURES)
            if bits is None:
                raise OSError(95, "the kernel reports no xdp-features for this device")
            return xdp_feature_names(bits)
    raise OSError(19, f"no netdev entry for ifindex {ifindex}")
