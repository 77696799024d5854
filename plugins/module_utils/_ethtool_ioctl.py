# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A driver's statistics read in this process: the SIOCETHTOOL ioctl that ``ethtool -S`` makes (ETHTOOL_GSSET_INFO,
ETHTOOL_GSTRINGS, ETHTOOL_GSTATS of the string set ETH_SS_STATS), the same names and values.

Why: the far side of the forwarding experiment compares a driver counter (``ethtool -S``) with the interface's own
``rx_packets`` (sysfs) read around it. ``ethtool`` as a process takes tens of milliseconds on a loaded machine, and
a bursty sender (testpmd on a shared CPU) moves thousands of frames in that time, which the midpoint of the two sysfs
reads cannot place: the two counters then disagree by percents over a 2 s window. The ioctl takes microseconds.
Standard library only (modules run on the target's Python; pyroute2's ethtool is not there). Linux ABI:
include/uapi/linux/ethtool.h and sockios.h.
"""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x0000001B
ETHTOOL_GSTATS = 0x0000001D
ETHTOOL_GSSET_INFO = 0x00000037
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16


class EthtoolIoctlError(OSError):
    pass


def _ioctl(sock, interface, buf):
    """SIOCETHTOOL on ``interface`` with ifr_data pointing at ``buf`` (a ctypes buffer the kernel fills)."""
    name = interface.encode()
    if len(name) >= IFNAMSIZ:
        raise EthtoolIoctlError(f"interface name {interface!r} is longer than {IFNAMSIZ - 1} characters")
    ifreq = struct.pack(f"{IFNAMSIZ}sP", name, ctypes.addressof(buf))
    ifreq += b"\0" * (40 - len(ifreq))  # struct ifreq is 40 bytes on 64-bit Linux
    try:
        fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
    except OSError as exc:
        raise EthtoolIoctlError(exc.errno, f"SIOCETHTOOL on {interface}: {exc.strerror}") from None


def stat_names(sock, interface):
    """ETH_SS_STATS's names of ``interface`` (``ethtool -S``'s left column, in the driver's order)."""
    # struct ethtool_sset_info {u32 cmd; u32 reserved; u64 sset_mask; u32 data[]}
    info = ctypes.create_string_buffer(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
    _ioctl(sock, interface, info)
    _cmd, _res, mask, count = struct.unpack_from("=IIQI", info.raw)
    if not mask & (1 << ETH_SS_STATS):
        return []
    # struct ethtool_gstrings {u32 cmd; u32 string_set; u32 len; u8 data[len * ETH_GSTRING_LEN]}
    strings = ctypes.create_string_buffer(struct.pack("=III", ETHTOOL_GSTRINGS, ETH_SS_STATS, count)
                                          + b"\0" * (count * ETH_GSTRING_LEN))  # fmt: skip
    _ioctl(sock, interface, strings)
    raw = strings.raw[12 : 12 + count * ETH_GSTRING_LEN]
    return [raw[i : i + ETH_GSTRING_LEN].split(b"\0", 1)[0].decode(errors="replace") for i in range(0, len(raw), ETH_GSTRING_LEN)]


def stat_values(sock, interface, count):
    """The ``count`` values of ETH_SS_STATS now (one ETHTOOL_GSTATS call: the driver fills them in one go)."""
    # struct ethtool_stats {u32 cmd; u32 n_stats; u64 data[n_stats]}
    buf = ctypes.create_string_buffer(struct.pack("=II", ETHTOOL_GSTATS, count) + b"\0" * (8 * count))
    _ioctl(sock, interface, buf)
    n = struct.unpack_from("=I", buf.raw, 4)[0]
    return list(struct.unpack_from(f"={min(n, count)}Q", buf.raw, 8))


class DriverStats:
    """``ethtool -S interface`` in this process: the names once, then each read() one ioctl -> {name: int}."""

    def __init__(self, interface):
        self.interface = interface
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.names = stat_names(self.sock, interface)
        except OSError:
            self.sock.close()
            raise

    def read(self):
        return dict(zip(self.names, stat_values(self.sock, self.interface, len(self.names))))

    def close(self):
        self.sock.close()
