# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The virtual lab's spec: validation and normalisation of vlab_topology's parameters (pure, no side effects).

Every error names the parameter path (links[0].ends[1].mac) and the value, and says what would be valid.
"""

from __future__ import annotations

import re

from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CPU_ONLINE, format_cpu_list

try:
    import netaddr

    HAS_NETADDR = True
    NETADDR_ERR = None
except ImportError as exc:  # pragma: no cover - depends on the interpreter
    netaddr = None
    HAS_NETADDR = False
    NETADDR_ERR = exc

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
NETNS_RE = re.compile(r"^[A-Za-z0-9_.:@+-]{1,255}$")
MAX_QUEUES = 4096


class VlabError(Exception):
    """An error with a message that says what to do."""


def normalize_mac(value, what):
    """Return the MAC in lower-case xx:xx:xx:xx:xx:xx form or raise VlabError naming WHAT."""
    text = str(value).strip()
    if not re.match(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$", text):
        raise VlabError(f"{what}: malformed MAC address {value!r}; use six hex octets like 02:58:44:50:00:01")
    try:
        eui = netaddr.EUI(text)
    except (netaddr.AddrFormatError, TypeError, ValueError) as exc:
        raise VlabError(f"{what}: malformed MAC address {value!r}: {exc}") from exc
    if eui.version != 48:
        raise VlabError(f"{what}: {value!r} is not a 48-bit MAC address")
    if int(eui.words[0]) & 1:
        raise VlabError(
            f"{what}: {value!r} is a multicast MAC address; an interface needs a unicast one (first octet even, e.g. 02:...)"
        )
    eui.dialect = netaddr.mac_unix_expanded
    return str(eui).lower()


def normalize_ipv4(value, what):
    text = str(value).strip()
    try:
        ip = netaddr.IPAddress(text, version=4, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, TypeError, ValueError) as exc:
        raise VlabError(f"{what}: malformed IPv4 address {value!r}") from exc
    return str(ip)


def normalize_ipv4_interface(value, what):
    """'198.18.0.1/30' -> ('198.18.0.1', 30); raise VlabError naming WHAT when malformed."""
    text = str(value).strip()
    if "/" not in text:
        raise VlabError(f"{what}: {value!r} has no prefix length; write ADDRESS/PREFIX, e.g. 198.18.0.1/30")
    addr, prefix = text.split("/", 1)
    if not re.match(r"^\d{1,2}$", prefix) or not 1 <= int(prefix) <= 32:
        raise VlabError(f"{what}: malformed prefix length {prefix!r} in {value!r}; use 1..32")
    ip = normalize_ipv4(addr, what)
    net = netaddr.IPNetwork(f"{ip}/{prefix}")
    if int(prefix) <= 30 and ip in (str(net.network), str(net.broadcast)):
        raise VlabError(f"{what}: {value!r} is the network or broadcast address of {net.cidr}; pick a host address")
    return ip, int(prefix)


def check_name(value, what, regex=IFNAME_RE, hint="at most 15 characters of letters, digits, '_', '.', '-'"):
    if not isinstance(value, str) or not regex.match(value) or value in (".", ".."):
        raise VlabError(f"{what}: invalid name {value!r}; {hint}")
    return value


def check_int(value, what, lo, hi):
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise VlabError(f"{what}: {value!r} is not an integer") from exc
    if not lo <= number <= hi:
        raise VlabError(f"{what}: {number} is out of range {lo}..{hi}")
    return number


def normalize_spec(params, cpus_online):
    """Validate module parameters; return (namespaces, links, neighbors) normalized. No side effects."""
    namespaces = []
    for i, ns in enumerate(params.get("namespaces") or []):
        check_name(ns, f"namespaces[{i}]", NETNS_RE, "a file name in /run/netns (letters, digits, '_.:@+-')")
        if ns not in namespaces:
            namespaces.append(ns)

    links = []
    seen_ends = {}
    for li, link in enumerate(params.get("links") or []):
        ends_in = link.get("ends") or []
        if len(ends_in) != 2:
            raise VlabError(f"links[{li}]: a veth pair has exactly two ends, got {len(ends_in)}")
        where = f"links[{li}]"
        queues = check_int(link.get("queues", 1) or 1, f"{where}.queues", 1, MAX_QUEUES)
        mtu = check_int(link.get("mtu"), f"{where}.mtu", 68, 65535)
        up = link.get("up", True) is not False
        ends = []
        for ei, end in enumerate(ends_in):
            w = f"{where}.ends[{ei}]"
            ns = check_name(end.get("namespace"), f"{w}.namespace", NETNS_RE, "a name shown by `ip netns list`")
            ifname = check_name(end.get("interface"), f"{w}.interface")
            key = (ns, ifname)
            if key in seen_ends:
                raise VlabError(f"{w}: interface {ifname} in namespace {ns} is already used by {seen_ends[key]}")
            seen_ends[key] = w
            mac = normalize_mac(end["mac"], f"{w}.mac") if end.get("mac") not in (None, "") else None
            address = None
            if end.get("address") not in (None, ""):
                address = normalize_ipv4_interface(end["address"], f"{w}.address")
            e_queues = check_int(end.get("queues"), f"{w}.queues", 1, MAX_QUEUES) or queues
            e_mtu = check_int(end.get("mtu"), f"{w}.mtu", 68, 65535) or mtu
            e_up = up if end.get("up") is None else bool(end.get("up"))
            napi_cpus = end.get("napi_cpus") or []
            checked_cpus = []
            for ci, cpu in enumerate(napi_cpus):
                c = check_int(cpu, f"{w}.napi_cpus[{ci}]", 0, 1 << 20)
                if c not in cpus_online:
                    raise VlabError(
                        f"{w}.napi_cpus[{ci}]: CPU {c} is not online on this machine "
                        f"(online: {format_cpus(cpus_online)}); pick CPUs from {CPU_ONLINE}"
                    )
                checked_cpus.append(c)
            threaded = end.get("threaded_napi")
            if checked_cpus and threaded is False:
                raise VlabError(f"{w}: napi_cpus needs threaded_napi (NAPI kernel threads); remove threaded_napi: false")
            if checked_cpus:
                threaded = True
            gro = end.get("gro")
            if threaded and gro is False:
                raise VlabError(
                    f"{w}: threaded NAPI on veth needs NAPI instances, which exist only with GRO on "
                    "(or while an XDP program is attached); set gro: true"
                )
            if threaded:
                gro = True
            if threaded and not e_up:
                raise VlabError(f"{w}: threaded NAPI / napi_cpus need the interface up (NAPI exists only while up)")
            ends.append(
                {
                    "namespace": ns,
                    "interface": ifname,
                    "mac": mac,
                    "address": address,
                    "queues": e_queues,
                    "mtu": e_mtu,
                    "up": e_up,
                    "gro": gro,
                    "threaded": threaded,
                    "napi_cpus": checked_cpus,
                }
            )
            if ns not in namespaces:
                namespaces.append(ns)
        name = link.get("name") or f"{ends[0]['interface']}-{ends[1]['interface']}"
        links.append({"name": name, "ends": ends, "static_neighbors": link.get("static_neighbors", True) is not False})

    neighbors = []
    for ni, nb in enumerate(params.get("neighbors") or []):
        w = f"neighbors[{ni}]"
        neighbors.append(
            {
                "namespace": check_name(nb.get("namespace"), f"{w}.namespace", NETNS_RE, "a namespace name"),
                "interface": check_name(nb.get("interface"), f"{w}.interface"),
                "address": normalize_ipv4(nb.get("address"), f"{w}.address"),
                "mac": normalize_mac(nb.get("mac"), f"{w}.mac"),
            }
        )
    for link in links:
        if not link["static_neighbors"]:
            continue
        for i, end in enumerate(link["ends"]):
            peer = link["ends"][1 - i]
            if end["address"] and peer["address"]:
                neighbors.append(
                    {
                        "namespace": end["namespace"],
                        "interface": end["interface"],
                        "address": peer["address"][0],
                        "mac": peer["mac"],  # None: use the peer's actual MAC
                        "peer": peer,
                    }
                )
    return namespaces, links, neighbors


def format_cpus(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's CPU list format, as /sys/devices/system/cpu/online shows it)."""
    return format_cpu_list(cpus)


def napi_cpu_for_queue(queue, cpus):
    """CPU of RX queue QUEUE's NAPI thread: round-robin over CPUS."""
    return cpus[queue % len(cpus)]
