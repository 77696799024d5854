# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The module xdplab.testbed.fib_routes' fast path (issue 27, paper_routing): a stamp of what it installed, so that a
``state: present`` that asks for the table already in the kernel does not re-read and re-parse the prefix file (901,899
prefixes: 35-57 s a trial) and the kernel's routes to learn that nothing changes.

After an install (or a verified no-change) the module writes a stamp on the DUT, one per network namespace and route
protocol (/run/xdplab/fib_routes/net-DEV-INO-protoN.json: the namespace is what the routes live in, and the virtual
lab's DUT shares /run with every other namespace). It holds the request (table, the prefix file's path, size, mtime_ns
and sha256, limit, next hop, interface), the kernel's boot id and the namespace, and what the install found (route
count, prefixes skipped). The next ``present`` uses it when every key matches the request AND the kernel still holds
exactly that many routes with the protocol in the main table (count_routes: one netlink dump that the kernel filters
by table and protocol, counted without parsing a route). Anything else runs the slow path, which writes a new stamp.

No Ansible import: tests/unit/test_fib_stamp.py tests it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import struct

STAMP_DIR = "/run/xdplab/fib_routes"
STAMP_VERSION = 1
BOOT_ID = "/proc/sys/kernel/random/boot_id"
NETNS = "/proc/self/ns/net"

# the request's keys that a stamp must match (in this order in the reason for a mismatch)
KEYS = ("version", "boot_id", "netns", "proto", "table", "src", "src_size", "src_mtime_ns", "src_sha256", "limit",
        "next_hop", "device")  # fmt: skip

# netlink (linux/netlink.h, linux/rtnetlink.h)
NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_GET_STRICT_CHK = 12
NLMSG_ERROR = 2
NLMSG_DONE = 3
RTM_NEWROUTE = 24
RTM_GETROUTE = 26
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
RTA_TABLE = 15
RT_TABLE_MAIN = 254
_NLMSG = struct.Struct("=IHHII")
_RTMSG = struct.Struct("=BBBBBBBBI")
_NLMSG_LEN_TYPE = struct.Struct("=IH")
_RTM_TABLE = _NLMSG.size + 4
_RTM_PROTOCOL = _NLMSG.size + 5


class StampError(OSError):
    """The kernel could not be asked (netlink); the caller takes the slow path."""


def boot_id(path=BOOT_ID):
    """The kernel's boot id: a stamp of another boot describes routes that are gone."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def netns_id(path=NETNS):
    """This process's network namespace as 'DEV-INO' (the inode of /proc/self/ns/net; unique among live namespaces)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_dev}-{st.st_ino}"


def file_identity(path):
    """The prefix file's size, mtime_ns and sha256 (9 MB of gzip hash in tens of ms: a file rewritten in place with
    its old mtime is still seen)."""
    st = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        block = handle.read(1 << 20)
        while block:
            digest.update(block)
            block = handle.read(1 << 20)
    return {"src": os.path.abspath(path), "src_size": st.st_size, "src_mtime_ns": st.st_mtime_ns,
            "src_sha256": digest.hexdigest()}  # fmt: skip


def request(table, src, limit, next_hop, device, proto, boot=None, netns=None):
    """What a call asks for, in the stamp's keys (the file's identity only for table full)."""
    out = {"version": STAMP_VERSION, "boot_id": boot, "netns": netns, "proto": int(proto), "table": table,
           "src": None, "src_size": None, "src_mtime_ns": None, "src_sha256": None,
           "limit": int(limit or 0) if table == "full" else 0, "next_hop": next_hop, "device": device}  # fmt: skip
    if table == "full":
        out.update(file_identity(src))
    return out


def stamp_path(netns, proto, directory=STAMP_DIR):
    return os.path.join(directory, f"net-{netns}-proto{int(proto)}.json")


def read_stamp(path):
    """The stamp at ``path``, or None (missing, unreadable, not a stamp)."""
    try:
        with open(path) as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def write_stamp(path, req, routes, skipped, triestat=None):
    """The stamp of a table now in the kernel (written to a temporary file, then renamed: never half a stamp)."""
    stamp = dict(req, routes=int(routes), skipped=list(skipped), triestat=triestat)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as handle:
        json.dump(stamp, handle, sort_keys=True)
    os.replace(tmp, path)
    return stamp


def remove_stamp(path):
    """No stamp at ``path`` afterwards; True when there was one."""
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True


def mismatch(stamp, req, kernel_routes):
    """Why ``stamp`` does not describe what the kernel holds for request ``req`` (None when it does): a key of the
    request that differs (the first, in KEYS' order), a stamp without a route count, or a kernel with another number
    of the protocol's routes (``kernel_routes``) than the stamp's."""
    if not stamp:
        return "no stamp"
    for key in KEYS:
        if key not in req or key not in stamp:
            return f"{key} missing"
        if stamp[key] != req[key]:
            return f"{key} differs"
    if not isinstance(stamp.get("routes"), int):
        return "routes missing"
    if kernel_routes != stamp["routes"]:
        return f"the kernel has {kernel_routes} routes with proto {req['proto']}, the stamp {stamp['routes']}"
    return None


def count_messages(buf, proto, table=RT_TABLE_MAIN):
    """(routes with ``proto`` in ``table``, done, error) in one netlink reply buffer: every RTM_NEWROUTE's rtmsg is
    checked (a kernel without strict dump filtering sends every route)."""
    count, off, size = 0, 0, len(buf)
    while off + _NLMSG.size <= size:
        length, kind = _NLMSG_LEN_TYPE.unpack_from(buf, off)
        if length < _NLMSG.size:
            return count, True, "a netlink message shorter than its header"
        if kind == NLMSG_DONE:
            return count, True, None
        if kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", buf, off + _NLMSG.size)
            if err:
                return count, True, os.strerror(-err)
        elif (
            # the rtmsg's rtm_table (byte 4: 8 bits, main is 254) and rtm_protocol (byte 5), read as bytes (900,000
            # routes: a struct unpack each cost a quarter more here)
            kind == RTM_NEWROUTE
            and length >= _NLMSG.size + _RTMSG.size
            and buf[off + _RTM_PROTOCOL] == proto
            and buf[off + _RTM_TABLE] == table
        ):
            count += 1
        off += (length + 3) & ~3
    return count, False, None


def count_routes(proto, table=RT_TABLE_MAIN):
    """IPv4 routes with protocol ``proto`` in ``table`` of this namespace, from one netlink dump that the kernel
    filters by table and protocol (strict dump checking, Linux 4.20+) and Python counts by their headers: no text, no
    parse of a prefix. StampError when netlink fails."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    except OSError as exc:
        raise StampError(exc.errno, f"netlink: {exc.strerror}") from None
    with sock:
        try:
            sock.setsockopt(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1)
            strict = True
        except OSError:
            strict = False
        rtm = _RTMSG.pack(socket.AF_INET, 0, 0, 0, table if strict else 0, proto if strict else 0, 0, 0, 0)
        attr = struct.pack("=HHI", 8, RTA_TABLE, table) if strict else b""
        body = rtm + attr
        sock.send(_NLMSG.pack(_NLMSG.size + len(body), RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
        total = 0
        while True:
            buf = sock.recv(1 << 17)
            if not buf:
                raise StampError(errno.EIO, "netlink: the route dump ended without NLMSG_DONE")
            count, done, error = count_messages(buf, proto, table)
            total += count
            if error:
                raise StampError(errno.EIO, f"netlink route dump: {error}")
            if done:
                return total
