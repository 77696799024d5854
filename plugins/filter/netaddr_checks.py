# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Address checks for inventory validation (netaddr, no ansible.utils needed)."""

from __future__ import annotations

import re

try:
    import netaddr
except ImportError:  # pragma: no cover - netaddr is in requirements.txt
    netaddr = None

from ansible.errors import AnsibleFilterError

_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$")


def _need_netaddr():
    if netaddr is None:
        raise AnsibleFilterError("the netaddr Python library is required: pip install netaddr")


def valid_mac(value):
    """True for a unicast 48-bit MAC written as six hex octets (02:58:44:50:00:01)."""
    _need_netaddr()
    if not isinstance(value, str) or not _MAC_RE.match(value.strip()):
        return False
    try:
        eui = netaddr.EUI(value.strip())
    except (netaddr.AddrFormatError, TypeError, ValueError):
        return False
    return eui.version == 48 and not int(eui.words[0]) & 1


def valid_ipv4(value):
    """True for a dotted-quad IPv4 address without prefix (198.18.0.1)."""
    _need_netaddr()
    try:
        netaddr.IPAddress(str(value).strip(), version=4, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, TypeError, ValueError):
        return False
    return True


def valid_ipv4_interface(value):
    """True for ADDRESS/PREFIX with a valid IPv4 address and prefix 1..32 (198.18.0.1/30)."""
    text = str(value).strip()
    if "/" not in text:
        return False
    addr, prefix = text.split("/", 1)
    return bool(re.match(r"^\d{1,2}$", prefix)) and 1 <= int(prefix) <= 32 and valid_ipv4(addr)


def cpu_list(value):
    """'0-3,5' (the format of /sys/devices/system/cpu/online) -> [0, 1, 2, 3, 5]."""
    cpus = []
    for part in str(value).strip().split(","):
        if not part:
            continue
        lo, _sep, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


class FilterModule:
    def filters(self):
        return {
            "cpu_list": cpu_list,
            "valid_mac": valid_mac,
            "valid_ipv4": valid_ipv4,
            "valid_ipv4_interface": valid_ipv4_interface,
        }

