# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The load balancer's plan and checks (issue 27, item 3; playbooks/paper_lb.yml), pure Python (no Ansible import):

- the plan of a trial: VIP i is the DUT's address and the port of the generator's flow i (``port_base + i``), UDP;
  each VIP has ``reals_per_vip`` reals, numbered across the VIPs, their addresses consecutive in ``reals_net``
  (``plan``);
- the consistent-hash ring of a VIP: Maglev's permutation fill (as Katran fills its ch_rings), ``RING_SIZE`` =
  65,537 slots, each naming one of the VIP's reals (``maglev_ring``);
- the bad input, each error naming the field and the value and what to change (``lb_errors``);
- IPVS: the ipvsadm commands of the plan (``ipvsadm_commands``), what ``ipvsadm -Ln --stats`` / ``--rate`` print
  (``parse_ipvsadm``) and whether a kernel has IPVS (``ipvs_support``);
- the sizes of bpf/xdp_lb.h (``MAX_VIPS``, ``MAX_REALS``, ``RING_SIZE``; tests/unit/test_lb.py compares them with
  the header) and the layouts of its map keys and values (``vip_key``, ``real_value``, ``ctl_value``).
"""

from __future__ import annotations

import gzip
import hashlib
import ipaddress
import os
import re
import struct

# bpf/xdp_lb.h
RING_SIZE = 65537
MAX_VIPS = 16
MAX_REALS = 4096
LRU_SIZE = 65536
F_HASH_SRC_ONLY = 1
STATS = ("lru_hit", "lru_miss", "not_vip", "not_lb", "no_real", "encap_fail", "tx")
CHECK_STATS = ("real_ok", "other_vip", "not_real", "bad_csum", "bad_src", "not_ipip")
# the outer IPv4 header IPIP adds
IPIP_OVERHEAD = 20
# the Ethernet header and FCS inside a packet_len (T-Rex's: on the wire with FCS)
ETH_AND_FCS = 18
PROTOCOLS = {"udp": 17, "tcp": 6}
# the kind lb's modes (a system entry's ``lb``): the project's XDP program, the kernel's IPVS through ipvsadm
MODE_BPF = "bpf"
MODE_IPVS = "ipvsadm"
# the programs (bpf/): the balancer on the DUT, the far side's check on the generator
BALANCER = {"object": "xdp_lb.bpf.o", "program": "xdp_lb"}
CHECK = {"object": "xdp_lb_check.bpf.o", "program": "xdp_lb_check"}


class LbError(ValueError):
    """Input the load balancer cannot run with; the message names the field and the value."""


def _h(text, salt):
    return int.from_bytes(hashlib.sha256(f"{salt}:{text}".encode()).digest()[:8], "little")


def maglev_ring(reals, size=RING_SIZE):
    """The Maglev lookup table of ``reals`` (names: their addresses): a list of ``size`` indices into ``reals``.

    Each real has a permutation of the slots (offset = h1 % size, skip = h2 % (size - 1) + 1; size prime, so every
    skip walks all slots); the reals take turns claiming their next free preferred slot until every slot is taken
    (Maglev, NSDI 2016, section 3.4; Katran's ch_helpers fill their ring the same way). Every real gets size/N slots
    or one more; removing a real gives its slots to the others and moves only a few of theirs (tests/unit/test_lb.py
    counts them)."""
    n = len(reals)
    if n == 0:
        raise LbError("a VIP needs at least one real")
    offsets = [_h(r, "offset") % size for r in reals]
    skips = [_h(r, "skip") % (size - 1) + 1 for r in reals]
    nexts = [0] * n
    ring = [-1] * size
    filled = 0
    while True:
        for i in range(n):
            c = (offsets[i] + nexts[i] * skips[i]) % size
            while ring[c] >= 0:
                nexts[i] += 1
                c = (offsets[i] + nexts[i] * skips[i]) % size
            ring[c] = i
            nexts[i] += 1
            filled += 1
            if filled == size:
                return ring


def plan(vip_ip, port_base, vips, reals_per_vip, reals_net="10.200.0.0/16", proto="udp", outer_src=None, hash_src_only=False):
    """The maps' contents for ``vips`` VIPs of ``reals_per_vip`` reals each: {vips: [{index, addr, port, proto, reals,
    real_indices}], reals: [addresses, by global index], outer_src, flags, ring_size}. Raises LbError naming the
    field (lb_errors' checks)."""
    errors = plan_errors(vips, reals_per_vip, reals_net, proto)
    if errors:
        raise LbError("; ".join(errors))
    net = ipaddress.IPv4Network(str(reals_net), strict=False)
    first = int(net.network_address) + 1
    reals, out = [], []
    for i in range(int(vips)):
        indices = list(range(i * int(reals_per_vip), (i + 1) * int(reals_per_vip)))
        addrs = [str(ipaddress.IPv4Address(first + k)) for k in indices]
        reals += addrs
        out.append({"index": i, "addr": str(vip_ip), "port": int(port_base) + i, "proto": proto, "reals": addrs,
                    "real_indices": indices})  # fmt: skip
    return {
        "vips": out,
        "reals": reals,
        "outer_src": str(outer_src or vip_ip),
        "flags": F_HASH_SRC_ONLY if hash_src_only else 0,
        "ring_size": RING_SIZE,
        "reals_net": str(net),
    }


def ipvs_systems(systems):
    """The names of the IPVS systems (kind lb, ``lb: ipvsadm``) of ``systems``."""
    return [n for n, e in (systems or {}).items() if isinstance(e, dict) and e.get("impl") == "lb" and e.get("lb") == MODE_IPVS]


def plan_errors(vips, reals_per_vip, reals_net, proto="udp"):
    """What the program's maps cannot hold: more VIPs than vip_map, more reals than the reals array, more reals than
    ``reals_net`` has addresses, a protocol it does not parse."""
    errors = []
    try:
        vips, per = int(vips), int(reals_per_vip)
    except (TypeError, ValueError):
        return [f"vips {vips!r} and reals_per_vip {reals_per_vip!r} must be whole numbers"]
    if vips < 1 or vips > MAX_VIPS:
        errors.append(f"vips: {vips} VIPs (one per core): the program's vip_map holds 1 to {MAX_VIPS} (bpf/xdp_lb.h LB_MAX_VIPS)")
    if per < 1:
        errors.append(f"reals_per_vip: {per}: a VIP needs at least one real")
    elif vips * per > MAX_REALS:
        errors.append(
            f"reals_per_vip: {vips} VIPs x {per} reals = {vips * per} reals, more than the {MAX_REALS} the program's "
            f"reals map holds (bpf/xdp_lb.h LB_MAX_REALS): give at most {MAX_REALS // max(vips, 1)} reals per VIP"
        )
    try:
        net = ipaddress.IPv4Network(str(reals_net), strict=False)
        if per >= 1 and vips * per > net.num_addresses - 2:
            errors.append(
                f"reals_net: {reals_net} has {net.num_addresses - 2} addresses for {vips * per} reals: give a larger net"
            )
    except ValueError as exc:
        errors.append(f"reals_net: {reals_net!r} is not an IPv4 net ({exc})")
    if proto not in PROTOCOLS:
        errors.append(f"proto: {proto!r}: the program balances {', '.join(PROTOCOLS)}")
    return errors


def lb_errors(lb, systems, packet_lens, cores, mtu=1500, host="dut"):
    """The load-balancer experiment's bad input (before any change), each naming the host, the field and the value.

    lb: {systems, reals_per_vip, reals_net, proto}; systems: the run's experiment_systems; packet_lens, cores: the
    matrix's axes; mtu: the DUT port's MTU (the vlab's veth: 1500)."""
    lb = lb if isinstance(lb, dict) else {}
    names = [s for s in (lb.get("systems") or []) if isinstance(s, str)]
    errors = []
    for name in names:
        entry = systems.get(name)
        if not isinstance(entry, dict) or entry.get("impl") != "lb":
            errors.append(f"{host}: paper_lb_systems: {name!r} is not a load-balancer system (impl lb) of experiment_systems")
            continue
        if entry.get("lb") == MODE_IPVS and str(entry.get("rp_filter", 0)) not in ("0", "False", "false"):
            errors.append(
                f"{host}: experiment_systems.{name}.rp_filter: {entry.get('rp_filter')!r}: IPVS tunnel mode needs "
                "reverse-path filtering off on the DUT (net.ipv4.conf.*.rp_filter 0, as the paper ran it); a strict "
                "filter drops what the balancer receives for a VIP from a source it routes elsewhere. Set it to 0"
            )
    try:
        max_cores = max(int(c) for c in cores) if cores else 1
    except (TypeError, ValueError):
        max_cores = 1
    for problem in plan_errors(
        max_cores, lb.get("reals_per_vip", 100), lb.get("reals_net", "10.200.0.0/16"), lb.get("proto", "udp")
    ):
        errors.append(f"{host}: paper_lb {problem} (cores {max_cores}: one VIP per core)")
    for plen in packet_lens or []:
        try:
            ip_len = int(plen) - ETH_AND_FCS
        except (TypeError, ValueError):
            continue
        if ip_len + IPIP_OVERHEAD > int(mtu):
            errors.append(
                f"{host}: packet_len: {plen}: its IPv4 packet ({ip_len} bytes) + {IPIP_OVERHEAD} bytes of the outer "
                f"IPIP header = {ip_len + IPIP_OVERHEAD}, over the DUT port's MTU {mtu}: the encapsulated frame would "
                f"not fit. Send at most {int(mtu) - IPIP_OVERHEAD + ETH_AND_FCS} bytes, or raise the MTU"
            )
    return errors


# -- the maps' layouts (bpf/xdp_lb.h), network byte order where the packet has it ----------------------------------
def _be32(addr):
    return ipaddress.IPv4Address(str(addr)).packed


def vip_key(addr, port, proto):
    """struct lb_vip_key."""
    return _be32(addr) + struct.pack("!H", int(port)) + struct.pack("BB", PROTOCOLS.get(proto, proto), 0)


def vip_meta(index, flags=0):
    """struct lb_vip_meta."""
    return struct.pack("<II", int(index), int(flags))


def real_value(addr):
    """struct lb_real."""
    return _be32(addr) + struct.pack("<I", 0)


def ctl_value(outer_src):
    """struct lb_ctl, configured."""
    return _be32(outer_src) + struct.pack("<I", 1)


def addr_key(addr):
    """check_reals' key: the address as on the wire."""
    return _be32(addr)


def ring_values(lb_plan):
    """ch_rings' values by key: for VIP i, slots i * RING_SIZE ... the global index of the real each slot names."""
    out = []
    for vip in lb_plan["vips"]:
        ring = maglev_ring(vip["reals"])
        out.append((vip["index"] * RING_SIZE, [vip["real_indices"][r] for r in ring]))
    return out


def digest(lb_plan):
    """A short digest of the plan (what the maps hold), for idempotency."""
    text = repr((lb_plan["vips"], lb_plan["reals"], lb_plan["outer_src"], lb_plan["flags"]))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- IPVS --------------------------------------------------------------------------------------------------------
def ipvsadm_commands(lb_plan, scheduler="sh", sh_port=True, weight=1):
    """The ipvsadm commands (argument lists) that make the plan's services: one virtual service per VIP with the
    source-hashing scheduler (``-b sh-port``: the source port too, as the paper's ``-s sh`` with sh-port), each real
    in tunnel mode (``-i``, IPIP)."""
    cmds = []
    for vip in lb_plan["vips"]:
        flag = "-u" if vip["proto"] == "udp" else "-t"
        service = f"{vip['addr']}:{vip['port']}"
        add = ["ipvsadm", "-A", flag, service, "-s", scheduler]
        if sh_port and scheduler == "sh":
            add += ["-b", "sh-port"]
        cmds.append(add)
        for real in vip["reals"]:
            cmds.append(["ipvsadm", "-a", flag, service, "-r", real, "-i", "-w", str(weight)])
    return cmds


def ipvsadm_delete_commands(lb_plan):
    """The commands that remove the plan's services (their reals go with them)."""
    return [["ipvsadm", "-D", "-u" if v["proto"] == "udp" else "-t", f"{v['addr']}:{v['port']}"] for v in lb_plan["vips"]]


_SERVICE = re.compile(r"^(TCP|UDP|SCTP|FWM)\s+(\S+)\s*(.*)$")
_REAL = re.compile(r"^\s+->\s+(\S+)\s*(.*)$")
_SUFFIX = {"K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}


def _number(text):
    """ipvsadm's counters: 123, 1234K, 5M (--stats abbreviates large numbers without --exact: ipvsadm's %8lluK)."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if not m:
        raise LbError(f"ipvsadm: {text!r} is not a counter")
    return int(m.group(1)) * _SUFFIX.get(m.group(2), 1)


def parse_ipvsadm(text):
    """``ipvsadm -Ln --stats`` or ``--rate`` (optionally ``--exact``) as {kind: stats|rate, columns, services:
    [{proto, addr, scheduler/values, reals: [{addr, values}]}]}: the header names the columns (Conns InPkts OutPkts
    InBytes OutBytes; CPS InPPS OutPPS InBPS OutBPS), each service and real line has them."""
    lines = text.splitlines()
    columns = None
    real_columns = ["Forward", "Weight", "ActiveConn", "InActConn"]
    kind = None
    services = []
    for line in lines:
        if "Prot LocalAddress:Port" in line:
            columns = line.split()[2:]
            kind = "rate" if "CPS" in columns else "stats" if "Conns" in columns else "list"
            continue
        if line.strip().startswith("-> RemoteAddress"):
            if kind == "list":
                real_columns = line.split()[2:]
            continue
        m = _SERVICE.match(line)
        if m:
            fields = m.group(3).split()
            svc = {"proto": m.group(1).lower(), "addr": m.group(2), "reals": []}
            if kind in ("stats", "rate"):
                svc["values"] = dict(zip(columns, (_number(f) for f in fields)))
            else:
                svc["scheduler"] = fields[0] if fields else None
                svc["flags"] = fields[1:]
            services.append(svc)
            continue
        m = _REAL.match(line)
        if m and services:
            fields = m.group(2).split()
            real = {"addr": m.group(1)}
            if kind in ("stats", "rate"):
                real["values"] = dict(zip(columns, (_number(f) for f in fields)))
            else:
                real.update(dict(zip(real_columns, fields)))
            services[-1]["reals"].append(real)
    if kind is None:
        raise LbError("ipvsadm: no 'Prot LocalAddress:Port' header in its output")
    return {"kind": kind, "columns": columns, "services": services}


def ipvs_totals(parsed):
    """The services' sums of a parsed --stats or --rate: {column: total} (InPkts / InPPS: what the balancer took)."""
    out = {}
    for svc in parsed["services"]:
        for col, val in (svc.get("values") or {}).items():
            out[col] = out.get(col, 0) + val
    return out


IPVS_MISSING = (
    "the kernel {release} has no IPVS: /proc/net/ip_vs is absent and {where}; the ipvs system needs CONFIG_IP_VS "
    "(=y, or =m with the module ip_vs installed: modprobe ip_vs). Run it on a kernel with IPVS (Debian's own kernels "
    "have it as a module), or leave ipvs out of paper_lb_systems"
)


def ipvs_support(proc="/proc", release=None, config_paths=None, modules_dir="/lib/modules"):
    """Whether this kernel has IPVS: {supported, release, proc_ip_vs, config (y|m|None|'unknown'), module (path or
    None), reason}. /proc/net/ip_vs exists once the ip_vs module is loaded (or built in); otherwise the kernel's
    config (/boot/config-RELEASE, /proc/config.gz) and its module tree say whether modprobe could load it."""
    release = release or os.uname().release
    proc_ip_vs = os.path.exists(os.path.join(proc, "net", "ip_vs"))
    config = "unknown"
    for path in config_paths or (f"/boot/config-{release}", os.path.join(proc, "config.gz")):
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        m = re.search(r"^CONFIG_IP_VS=([ym])$", text, re.M)
        config = m.group(1) if m else None
        break
    module = None
    moddir = os.path.join(modules_dir, release, "kernel", "net", "netfilter", "ipvs")
    if os.path.isdir(moddir):
        module = next((os.path.join(moddir, f) for f in sorted(os.listdir(moddir)) if f.startswith("ip_vs.ko")), None)
    supported = proc_ip_vs or config == "y" or (config in ("m", "unknown") and module is not None)
    where = (
        f"CONFIG_IP_VS is {'not set' if config is None else config} in its config"
        + ("" if module else f" and no ip_vs module is under {moddir}")
        if config != "unknown"
        else f"its config is not readable and no ip_vs module is under {moddir}"
    )
    return {
        "supported": bool(supported),
        "release": release,
        "proc_ip_vs": proc_ip_vs,
        "config": config,
        "module": module,
        "reason": None if supported else IPVS_MISSING.format(release=release, where=where),
    }
