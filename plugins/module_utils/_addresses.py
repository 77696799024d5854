# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generator address lists (issue 27): the destinations or sources a generator's frames walk round robin.

A list is drawn from a spec ``{count, seed, within, exclude}`` or given as ``{list: [...]}``:

- drawn: ``count`` unique IPv4 addresses, in the order a seeded ``random.Random(seed)`` picks them (the same seed
  and spec give the same list on every host and Python), from ``within`` (CIDRs or ``first-last`` ranges; default
  DEFAULT_WITHIN, the unicast /8s 1-223) less the martian space (MARTIAN_NETS: the special-purpose ranges that
  routers drop) and less ``exclude`` (the generator's and the DUT's local and connected nets, which the caller
  passes);
- given: each address is checked the same way (IPv4, unique, not martian, not excluded, inside ``within`` when
  that is given).

``address_list`` returns the addresses and what a record keeps of them (``describe``): count, seed, within,
exclude, the sha256 of the list as the generator's file holds it (one address a line) and the first entries.
Bad input raises AddressError, with what to change, before anything starts.
"""

from __future__ import annotations

import bisect
import hashlib
import random

try:
    import netaddr

    HAS_NETADDR = True
except ImportError:  # the module says what to install
    netaddr = None
    HAS_NETADDR = False

# The one list of martian IPv4 space (IANA special-purpose ranges that routers drop): never drawn, never accepted.
# 10/8, 172.16/12, 192.168/16 and 100.64/10 are forwarded by routers and so are allowed (exclude a lab's own nets).
MARTIAN_NETS = (
    ("0.0.0.0/8", "'this network' (RFC 791)"),
    ("127.0.0.0/8", "loopback (RFC 1122)"),
    ("169.254.0.0/16", "link local (RFC 3927)"),
    ("224.0.0.0/4", "multicast (RFC 5771)"),
    ("240.0.0.0/4", "reserved (RFC 1112), with 255.255.255.255, the limited broadcast (RFC 919)"),
)
# where addresses are drawn unless the spec says: the unicast /8s 1..223 (the martian nets are taken out anyway)
DEFAULT_WITHIN = ("1.0.0.0-223.255.255.255",)
# the generator's program holds this many addresses per list (bpf/xdp_trafficgen.h TG_MAX_ADDRS)
MAX_ADDRESSES = 65536
# entries of the list a record keeps (its sha256 identifies the whole list)
FIRST_ENTRIES = 5
SPEC_KEYS = ("count", "seed", "within", "exclude", "list")


class AddressError(ValueError):
    """A bad address spec; the message says what to change."""


def _require_netaddr():
    if not HAS_NETADDR:
        raise AddressError(
            "address lists need the Python library netaddr on the generator host: install it (pip install netaddr, "
            "or the distribution's python3-netaddr)"
        )


def martian_set():
    _require_netaddr()
    return netaddr.IPSet(net for net, _why in MARTIAN_NETS)


def _nets(value, what):
    """An IPSet of CIDRs and first-last ranges (a string or a list of them)."""
    _require_netaddr()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise AddressError("%s must be a list of IPv4 CIDRs or first-last ranges, got %r" % (what, value))
    out = netaddr.IPSet()
    for item in value:
        text = str(item).strip()
        try:
            if "-" in text:
                first, last = (part.strip() for part in text.split("-", 1))
                net = netaddr.IPRange(netaddr.IPAddress(first, 4), netaddr.IPAddress(last, 4))
            else:
                net = netaddr.IPNetwork(text, version=4)
        except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
            raise AddressError(
                "%s: %r is not an IPv4 CIDR (like 1.0.0.0/8) or range (like 1.0.0.0-9.255.255.255): %s" % (what, item, exc)
            ) from None
        out.add(net)
    return out


def _martian_reason(address):
    for net, why in MARTIAN_NETS:
        if address in netaddr.IPNetwork(net):
            return "%s is in %s, %s" % (address, net, why)
    return None


def _index_to_address(cidrs, starts, index):
    i = bisect.bisect_right(starts, index) - 1
    return str(netaddr.IPAddress(cidrs[i].first + index - starts[i], 4))


def _count(spec, what):
    count = spec.get("count")
    if isinstance(count, str) and count.strip().isdigit():
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_ADDRESSES:
        raise AddressError(
            "%s.count must be a whole number of addresses, 1 to %d (the generator's list holds %d), got %r"
            % (what, MAX_ADDRESSES, MAX_ADDRESSES, count)
        )
    return count


def _seed(spec, what):
    seed = spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise AddressError("%s.seed must be a whole number or a string, got %r" % (what, seed))
    if isinstance(seed, str) and seed.strip().lstrip("-").isdigit():
        seed = int(seed)  # a templated "1" is the seed 1: the same list as an integer 1
    return seed


def draw(count, seed=0, within=None, exclude=(), what="destinations"):
    """``count`` unique addresses drawn with ``random.Random(seed)`` from within less martian and excluded space."""
    space = _nets(list(within) if within else list(DEFAULT_WITHIN), "%s.within" % what)
    if not space:
        raise AddressError("%s.within is empty: give IPv4 CIDRs or ranges to draw from" % what)
    usable = space - martian_set()
    if not usable:
        raise AddressError(
            "%s.within %s lies wholly in martian space (%s), which routers drop: draw from unicast space, like the "
            "default %s" % (what, list(within), ", ".join(net for net, _why in MARTIAN_NETS), DEFAULT_WITHIN[0])
        )
    usable -= _nets(list(exclude or ()), "%s.exclude" % what)
    size = usable.size
    if count > size:
        raise AddressError(
            "%s.count %d is more than the %d addresses of within less martian and excluded space: lower count or "
            "widen within" % (what, count, size)
        )
    cidrs = list(usable.iter_cidrs())
    starts, total = [], 0
    for cidr in cidrs:
        starts.append(total)
        total += cidr.size
    picked = random.Random(seed).sample(range(size), count)
    return [_index_to_address(cidrs, starts, index) for index in picked]


def check_list(addresses, within=None, exclude=(), what="destinations"):
    """A given list, checked: IPv4, unique, not martian, not excluded, inside within when given."""
    if not isinstance(addresses, (list, tuple)) or not addresses:
        raise AddressError("%s.list must be a non-empty list of IPv4 addresses" % what)
    if len(addresses) > MAX_ADDRESSES:
        raise AddressError("%s.list has %d addresses; the generator's list holds %d" % (what, len(addresses), MAX_ADDRESSES))
    inside = _nets(list(within), "%s.within" % what) if within else None
    excluded = _nets(list(exclude or ()), "%s.exclude" % what)
    out, seen = [], set()
    for item in addresses:
        try:
            address = netaddr.IPAddress(str(item).strip(), 4)
        except (netaddr.AddrFormatError, ValueError, TypeError):
            raise AddressError("%s.list: %r is not an IPv4 address" % (what, item)) from None
        if address in seen:
            raise AddressError("%s.list has %s twice: give each address once" % (what, address))
        seen.add(address)
        reason = _martian_reason(address)
        if reason:
            raise AddressError("%s.list: %s, which routers drop: take it out of the list" % (what, reason))
        if address in excluded:
            raise AddressError(
                "%s.list: %s is in excluded space (%s: the lab's local or connected nets): take it out of the list"
                % (what, address, ", ".join(str(c) for c in excluded.iter_cidrs()))
            )
        if inside is not None and address not in inside:
            raise AddressError("%s.list: %s is not within %s" % (what, address, list(within)))
        out.append(str(address))
    return out


def list_text(addresses):
    """The generator's list file: one address a line."""
    return "".join(a + "\n" for a in addresses)


def describe(addresses, spec):
    """What a summary and a record keep of a list: how it was made, its sha256 (of list_text) and first entries."""
    return {
        "count": len(addresses),
        "seed": spec.get("seed", 0) if "list" not in spec else None,
        "within": list(spec.get("within") or DEFAULT_WITHIN) if "list" not in spec else spec.get("within"),
        "exclude": list(spec.get("exclude") or []),
        "drawn": "list" not in spec,
        "sha256": hashlib.sha256(list_text(addresses).encode("ascii")).hexdigest(),
        "first": addresses[:FIRST_ENTRIES],
    }


def address_list(spec, what="destinations", exclude=()):
    """(addresses, description) of a spec; ``exclude``: nets excluded besides the spec's own (e.g. the lab's)."""
    if not isinstance(spec, dict):
        raise AddressError("%s must be a dict like {count: 4000, seed: 1, exclude: [...]} or {list: [...]}" % what)
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise AddressError("%s does not know %s; it takes %s" % (what, ", ".join(unknown), ", ".join(SPEC_KEYS)))
    spec = dict(spec, exclude=list(spec.get("exclude") or []) + [e for e in exclude if e])
    if isinstance(spec.get("within"), str):
        spec["within"] = [spec["within"]]
    if "list" in spec:
        if "count" in spec or "seed" in spec:
            raise AddressError("%s: give either list or count (and seed), not both" % what)
        addresses = check_list(spec["list"], spec.get("within"), spec["exclude"], what)
    else:
        spec["count"], spec["seed"] = _count(spec, what), _seed(spec, what)
        addresses = draw(spec["count"], spec["seed"], spec.get("within"), spec["exclude"], what)
    return addresses, describe(addresses, spec)
