# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Address checks for inventory validation (netaddr, no ansible.utils needed), and field_errors: the input checks
of an experiment, each error naming the one field and value that is wrong."""

from __future__ import annotations

import math
import re

try:
    import netaddr
except ImportError:  # pragma: no cover - netaddr is in requirements.txt
    netaddr = None

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, parse_cpu_list

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
    try:
        return parse_cpu_list(value)
    except CpuListError as exc:
        raise AnsibleFilterError("cpu_list: %s" % exc) from None


def _whole(value):
    """An int from an int or a string of digits (not a bool, not a float); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if re.match(r"^[0-9]+$", text) else None


def _number(value):
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _mac_error(value):
    if not isinstance(value, str) or not _MAC_RE.match(value.strip()):
        return "%r is not a MAC address (six hex octets like 02:58:44:50:00:01)" % (value,)
    if not valid_mac(value):
        return "%s is a multicast MAC address; an interface needs a unicast one (first octet even, e.g. 02:58:44:50:00:01)" % (
            value,
        )
    return None


def _range_error(number, check):
    lo, hi = check.get("min"), check.get("max")
    if lo is not None and number < lo:
        return "%s is below %s" % (number, lo)
    if hi is not None and number > hi:
        return "%s is above %s" % (number, hi)
    return None


def _one_error(kind, value, check):
    """The error of one value of a check, or None."""
    if kind == "mac":
        return _mac_error(value)
    if kind == "ipv4":
        if valid_ipv4(value) and isinstance(value, str):
            return None
        return "%r is not an IPv4 address (four decimal octets like 198.18.0.1, without a prefix length)" % (value,)
    if kind == "ipv4_interface":
        if valid_ipv4_interface(value):
            return None
        return "%r is not an IPv4 ADDRESS/PREFIX (like 198.18.0.1/30, prefix 1 to 32)" % (value,)
    if kind in ("whole", "cpu"):
        number = _whole(value)
        if number is None:
            return "%r is not %s" % (value, "a CPU number" if kind == "cpu" else "a whole number")
        return _range_error(number, check)
    if kind == "number":
        number = _number(value)
        if number is None:
            return "%r is not a number" % (value,)
        return _range_error(number, check)
    if kind == "choice":
        choices = check.get("choices") or []
        if value in choices:
            return None
        return "%r is not one of %s" % (value, ", ".join(str(c) for c in choices))
    raise AnsibleFilterError("field_errors: unknown check kind %r" % (kind,))


def field_errors(checks, host=None):
    """Check inventory and experiment fields; one message per wrong value, naming the field and the value.

    checks: a list of {field, value, kind, [min], [max], [choices], [hint], [list], [non_empty]} where kind is
    mac, ipv4, ipv4_interface, whole, cpu, number or choice; with list true the value is a list and each item is
    checked (cpus: also no CPU twice). Returns a list of 'HOST: FIELD: what is wrong' ('FIELD: ...' without host).
    """
    if not isinstance(checks, list):
        raise AnsibleFilterError("field_errors: expects a list of checks, got %r" % (checks,))
    errors = []
    prefix = "%s: " % host if host else ""
    for check in checks:
        if not isinstance(check, dict) or "field" not in check or "kind" not in check:
            raise AnsibleFilterError("field_errors: each check needs field and kind, got %r" % (check,))
        field, kind, value = check["field"], check["kind"], check.get("value")
        hint = ("; %s" % check["hint"]) if check.get("hint") else ""
        problems = []
        if check.get("list"):
            if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
                problems.append("must be a list, got %r" % (value,))
            elif not value and check.get("non_empty", True):
                problems.append("is empty" if check.get("hint") else "is empty; list at least one value")
            else:
                seen = set()
                for item in value:
                    error = _one_error(kind, item, check)
                    if error:
                        problems.append(error)
                    elif kind == "cpu":
                        if _whole(item) in seen:
                            problems.append("CPU %s is listed twice" % item)
                        seen.add(_whole(item))
        else:
            error = _one_error(kind, value, check)
            if error:
                problems.append(error)
        errors.extend("%s%s: %s%s" % (prefix, field, problem, hint) for problem in problems)
    return errors


class FilterModule:
    def filters(self):
        return {
            "cpu_list": cpu_list,
            "field_errors": field_errors,
            "valid_mac": valid_mac,
            "valid_ipv4": valid_ipv4,
            "valid_ipv4_interface": valid_ipv4_interface,
        }
