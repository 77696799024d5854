# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An experiment's input, checked on the controller before anything changes (issue 26, item 6).

``input_errors(options, matrix, dut, generator, impls, ...)`` takes the experiment's options (``experiment_*``), its
matrix, the DUT's and its generator's inventory variables and the system implementations the trial runner knows, and
returns every error at once: one string per wrong value, naming the host (where the field is a host's), the field
and the value, and saying what to do. It reads no host; the one thing it looks at on the controller is where the
results would go (the nearest existing parent of ``experiment_results_dir`` must be a writable directory), without
creating anything. The role's tasks/validate.yml calls it through the filter ``xdplab.testbed.experiment_input_errors``.
It is the one place for input checks: the other DUTs of the same generator host (``others``), the forwarding
experiment's ports, rings and cpumap CPU (``forward_errors``) and the latency experiment's loads (``latency_errors``)
are checked here too.

``field_errors(checks, host)`` is the generic part (one check per field: mac, ipv4, whole, cpu, number, choice), also
the filter ``xdplab.testbed.field_errors``.
"""

from __future__ import annotations

import decimal
import json
import math
import os
import re

try:
    import netaddr
except ImportError:  # pragma: no cover - netaddr is in requirements.txt
    netaddr = None

from ansible_collections.xdplab.testbed.plugins.module_utils import _cpu_layout, _record
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, format_cpu_list, parse_cpu_list

_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$")
_WINDOW_RE = re.compile(r"^(default|[0-9]+([.][0-9]+)?[KMGkmg]?)$")


class InputCheckError(ValueError):
    """A check that is itself malformed (a bug of the caller, not bad input)."""


def _need_netaddr():
    if netaddr is None:
        raise InputCheckError("the netaddr Python library is required: pip install netaddr")


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


def _whole(value):
    """An int from an int or a string of digits (not a bool, not a float); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if re.match(r"^-?[0-9]+$", text) else None


def _number(value):
    if isinstance(value, bool) or value is None:
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
    lo, hi, above = check.get("min"), check.get("max"), check.get("above")
    if lo is not None and number < lo:
        return "%s is below %s" % (number, lo)
    if above is not None and number <= above:
        return "%s must be above %s" % (number, above)
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
        if number is None or (kind == "cpu" and number < 0):
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
    raise InputCheckError("field_errors: unknown check kind %r" % (kind,))


def field_errors(checks, host=None):
    """Check inventory and experiment fields; one message per wrong value, naming the field and the value.

    checks: a list of {field, value, kind, [min], [above], [max], [choices], [hint], [list], [non_empty]} where kind
    is mac, ipv4, ipv4_interface, whole, cpu, number or choice (``above``: an exclusive minimum); with list true the
    value is a list and each item is checked (cpus: also no CPU twice). Returns a list of 'HOST: FIELD: what is
    wrong' ('FIELD: ...' without host).
    """
    if not isinstance(checks, list):
        raise InputCheckError("field_errors: expects a list of checks, got %r" % (checks,))
    errors = []
    prefix = "%s: " % host if host else ""
    for check in checks:
        if not isinstance(check, dict) or "field" not in check or "kind" not in check:
            raise InputCheckError("field_errors: each check needs field and kind, got %r" % (check,))
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


# -- the experiment ------------------------------------------------------------------------------------------------
#: the DUT's own fields: (field, kind, what to do)
_DUT_FIELDS = (
    ("xdplab_dut_mac", "mac", None),
    ("xdplab_dut_ip", "ipv4", None),
)
#: the experiment's numeric options: (option, kind, range, what it is)
_OPTIONS = (
    ("experiment_warmup", "number", {"min": 0}, "seconds the generator runs before the first sample"),
    ("experiment_interval", "number", {"above": 0}, "seconds between two samples of the counters"),
    ("experiment_samples", "whole", {"min": 1}, "samples per window (the window is samples x interval)"),
    ("experiment_generator_slack", "number", {"min": 0}, "seconds the generator runs past warm-up + window"),
    ("experiment_window_lead", "number", {"above": 0}, "seconds from setting a forwarding window's start to it"),
    ("experiment_kept_up_share", "number", {"above": 0, "max": 1},
     "the share of the offered load a DUT must count to have kept up, in (0, 1]"),
    ("experiment_latency_max_pps", "whole", {"min": 1}, "the stamping generator's ceiling in frames/s"),
)  # fmt: skip


_LINK_WHAT = (
    "every end of the links the DUT and its generator share (and of the other DUTs of that generator host) needs %s "
    "of its own; give this end another one"
)
_PORTS_WHAT = "the two ports the %s are two interfaces; name another port"


def _json(value):
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _sub_matrices(matrix):
    if isinstance(matrix, dict):
        return [matrix]
    if isinstance(matrix, (list, tuple)):
        return list(matrix)
    return [matrix]


def matrix_error(matrix):
    """The error of a matrix that is not a mapping {axis: [values]} with a system axis (or a list of them), or None."""
    subs = _sub_matrices(matrix)
    items = [(k, v) for sub in subs if isinstance(sub, dict) for k, v in sub.items()]
    bad_axes = [k for k, v in items if isinstance(v, str) or not isinstance(v, (list, tuple)) or not v]
    ok = bool(subs) and all(isinstance(s, dict) and s for s in subs) and not bad_axes and "system" in [k for k, _value in items]
    if ok:
        return None
    if bad_axes:
        why = "; axis %s is not a non-empty list" % ", ".join(dict.fromkeys(str(a) for a in bad_axes))
    else:
        why = " with a system axis"
    return (
        "experiment_matrix: must map each axis (system, cores, packet_len, ...) to a non-empty list, or be a list of "
        "such mappings%s; got %s" % (why, _json(matrix))
    )


def axis(matrix, name, default=None):
    """The values one axis takes anywhere in a (well-formed) matrix, first seen first; ``default`` where absent."""
    seen = []
    for sub in _sub_matrices(matrix):
        for value in sub.get(name, [default] if default is not None else []):
            if value not in seen:
                seen.append(value)
    return seen


def _cpu_ints(value):
    if not isinstance(value, (list, tuple)):
        return []
    return [n for n in (_whole(c) for c in value) if n is not None and n >= 0]


def _online_count(online):
    if online is None or online == "":
        return None
    if isinstance(online, int) and not isinstance(online, bool):
        return online
    try:
        return len(parse_cpu_list(online if isinstance(online, str) else ",".join(str(c) for c in online)))
    except CpuListError:
        return None


def results_dir_error(results_dir, subdir=""):
    """Why ``results_dir`` (with ``subdir``, the experiment's own directories under it) cannot hold records, or None.

    An existing directory is used as it is; a path that does not exist is created by the run, so its nearest existing
    parent must be a directory this user may write. Nothing is created here.
    """
    if not isinstance(results_dir, str) or not results_dir.strip():
        return "experiment_results_dir: %s is not a path; give a directory for the records (or set XDPLAB_RESULTS_DIR)" % (
            _json(results_dir),
        )
    path = os.path.abspath(os.path.join(os.path.expanduser(results_dir), subdir))
    probe = path
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if os.path.isdir(probe):
        if probe == path or os.access(probe, os.W_OK | os.X_OK):
            return None
        return (
            "experiment_results_dir: %s cannot be created: %s is a directory this user (uid %d) may not write; give "
            "a directory you may write (or set XDPLAB_RESULTS_DIR)" % (results_dir, probe, os.getuid())
        )
    what = "a file" if os.path.exists(probe) else "a dangling link"
    return (
        "experiment_results_dir: %s is not a directory and cannot be created: %s is %s; give a directory for the "
        "records (or set XDPLAB_RESULTS_DIR)" % (results_dir, probe, what)
    )


def _distinct_errors(ends, what, fmt, mine=None):
    """'HOST: FIELD: VALUE is also HOST's FIELD; what to do' for every value two ends share.

    ends: (host, field, value[, port[, owner]]); port: the (machine, interface) the value is of, where known (two values
    of one port are one end: not compared); owner: the DUT whose link the end is of. what: the words that say what to
    do; fmt: whether a value is one to compare; mine: a DUT's name, to report only the pairs with one end of its own
    (every DUT reports its own)."""
    errors = []
    seen = {}
    for end in ends:
        host, field, value = end[:3]
        port = end[3] if len(end) > 3 else None
        owner = end[4] if len(end) > 4 else None
        if value is None or value == "" or not fmt(value):
            continue
        key = str(value).strip().lower().replace("-", ":")
        if key not in seen:
            seen[key] = (host, field, port, owner)
            continue
        other_host, other_field, other_port, other_owner = seen[key]
        if port is not None and port == other_port:
            continue
        if mine is None or mine in (owner, other_owner):
            errors.append("%s: %s: %s is also %s's %s; %s" % (host, field, value, other_host, other_field, what))
    return errors


def _link_ends(dut, gen, gen_host, peers, kind):
    """The IPv4 (kind "ip") or MAC (kind "mac") ends of the links between a generator host and every DUT it feeds:
    each DUT's ingress and egress ports, the generator's port for each DUT (its xdplab_dut_generator over the
    generator host's xdplab_generator_*) and the generator's receive port; DUTs by name, so that each sees one
    order."""
    duts = sorted([dut] + list(peers), key=lambda d: str(d.get("inventory_hostname")))
    ends = []
    for d in duts:
        h = d.get("inventory_hostname")
        for field, port in (
            ("xdplab_dut_%s" % kind, "xdplab_dut_interface"),
            ("xdplab_dut_egress_%s" % kind, "xdplab_dut_egress_interface"),
        ):
            ends.append((h, field, d.get(field), _port(h, d.get(port)), h))
    for d in duts:
        h = d.get("inventory_hostname")
        own = d.get("xdplab_dut_generator") if isinstance(d.get("xdplab_dut_generator"), dict) else {}
        if own.get(kind) not in (None, ""):
            port = _port(gen_host, own.get("interface") or gen.get("xdplab_generator_interface"))
            ends.append((h, "xdplab_dut_generator.%s" % kind, own.get(kind), port, h))
        else:
            # the generator host's own value, on whichever of its ports: one end however many DUTs use it (two DUTs
            # on one port are the preflight's error; on two ports of their own, a value of that host's)
            field = "xdplab_generator_%s" % kind
            ends.append((gen_host, field, gen.get(field), (gen_host, field), h))
    ends.append((gen_host, "xdplab_generator_rx_%s" % kind, gen.get("xdplab_generator_rx_%s" % kind),
                 _port(gen_host, gen.get("xdplab_generator_rx_interface")), None))  # fmt: skip
    return ends


def _port(host, interface):
    return (host, interface) if isinstance(interface, str) and interface else None


def _peers(others, duts, host, gen_host):
    """The other DUTs (group duts) of the same generator host, each with its inventory_hostname."""
    return [
        dict(others[h], inventory_hostname=h)
        for h in sorted(others or {})
        if h != host and h in (duts or ()) and isinstance(others[h], dict)
        and others[h].get("xdplab_generator_host") == gen_host
    ]  # fmt: skip


def input_errors(
    options,
    matrix,
    dut,
    generator,
    impls,
    backends=(),
    touch_modes=(),
    tcp_programs=(),
    afxdp_binds=(),
    generators=(),
    vlab=(),
    online_cpus=None,
    others=None,
    duts=(),
    forward=None,
):
    """Every error of an experiment's input, each naming the host (where it is a host's field), the field, the value
    and what to do; an empty list when the input is right.

    options: the experiment_* options (experiment_repetitions, experiment_systems, experiment_results_dir,
    experiment_name, experiment_warmup, ...; a missing one is not checked).
    matrix: experiment_matrix.
    dut: the DUT's variables, with ``inventory_hostname`` (xdplab_dut_cpus, xdplab_dut_mac, xdplab_dut_ip,
    xdplab_generator_host, xdplab_housekeeping_cpus, xdplab_dut_egress_*, ...; None or absent: not set).
    generator: the generator host's variables (None: xdplab_generator_host is not a host of ``generators``).
    impls: the system implementations the trial runner knows (each system's ``impl`` must be one).
    backends, touch_modes, tcp_programs, afxdp_binds: the names the runner knows for those axes and fields.
    generators: the hosts of the group generators; vlab: the hosts of the group vlab (one machine, the controller).
    online_cpus: the online CPUs of the machine of a virtual lab (list, count or the kernel's text "0-3"): two of its
    CPU roles may share a CPU only on 2 CPUs (module_utils/_cpu_layout.py).
    others: the other hosts of the inventory, {host: their variables} (the same fields as ``dut`` and ``generator``):
    the DUTs among them (``duts``, the group duts) with the same generator host share its ports, so their addresses
    and MACs are compared with this DUT's; a forwarding egress port must not be a port of any of them.
    forward: the forwarding experiment's input (playbooks/paper_forward.yml), None for another experiment:
    {systems, ring_sizes, queues, vlab_queues} (its paper_forward_* and the virtual lab's vlab_queues), checked by
    ``forward_errors``. With the option experiment_latency true the matrix's loads are checked by ``latency_errors``.
    """
    options = options or {}
    dut = dut or {}
    host = dut.get("inventory_hostname") or "dut"
    gen_host = dut.get("xdplab_generator_host")
    gen = generator if isinstance(generator, dict) else None
    systems = options.get("experiment_systems") or {}
    others = others if isinstance(others, dict) else {}
    peers = _peers(others, duts, host, gen_host) if gen is not None else []
    errors = []

    # the DUT's own fields
    dut_checks = [
        {"field": "xdplab_dut_cpus", "value": dut.get("xdplab_dut_cpus"), "kind": "cpu", "list": True,
         "hint": "list the CPUs that receive traffic, one RX queue each"},
        {"field": "xdplab_dut_mac", "value": dut.get("xdplab_dut_mac"), "kind": "mac"},
        {"field": "xdplab_dut_ip", "value": dut.get("xdplab_dut_ip"), "kind": "ipv4"},
        {"field": "xdplab_xdp_mode", "value": dut.get("xdplab_xdp_mode") or "native", "kind": "choice",
         "choices": ["native", "skb", "hw"]},
        {"field": "xdplab_dpdk_main_lcore", "value": _default(dut.get("xdplab_dpdk_main_lcore"), 0), "kind": "cpu"},
    ]  # fmt: skip
    for field, kind in (("xdplab_dut_egress_mac", "mac"), ("xdplab_dut_egress_ip", "ipv4")):
        if dut.get(field) not in (None, ""):
            dut_checks.append({"field": field, "value": dut.get(field), "kind": kind})
    own_gen = dut.get("xdplab_dut_generator") if isinstance(dut.get("xdplab_dut_generator"), dict) else {}
    for key, kind in (("mac", "mac"), ("ip", "ipv4")):
        if own_gen.get(key) not in (None, ""):
            dut_checks.append({"field": "xdplab_dut_generator.%s" % key, "value": own_gen[key], "kind": kind})
    if own_gen.get("cpus") is not None:
        dut_checks.append({"field": "xdplab_dut_generator.cpus", "value": own_gen["cpus"], "kind": "cpu", "list": True,
                           "non_empty": False})  # fmt: skip
    if dut.get("xdplab_housekeeping_cpus") is not None:
        dut_checks.append({"field": "xdplab_housekeeping_cpus", "value": dut.get("xdplab_housekeeping_cpus"),
                           "kind": "cpu", "list": True, "non_empty": False})  # fmt: skip
    errors += field_errors(dut_checks, host)

    # the generator's
    if gen is not None:
        gen_checks = [
            {"field": "xdplab_generator_cpus", "value": _default(gen.get("xdplab_generator_cpus"), []), "kind": "cpu",
             "list": True, "non_empty": False},
        ]  # fmt: skip
        for field, kind in (
            ("xdplab_generator_mac", "mac"),
            ("xdplab_generator_ip", "ipv4"),
            ("xdplab_generator_rx_mac", "mac"),
            ("xdplab_generator_rx_ip", "ipv4"),
        ):
            if gen.get(field) not in (None, ""):
                gen_checks.append({"field": field, "value": gen.get(field), "kind": kind})
        errors += field_errors(gen_checks, gen_host)

    # the experiment's options
    option_checks = [{"field": "experiment_repetitions", "value": options.get("experiment_repetitions"), "kind": "whole",
                      "min": 1}] if "experiment_repetitions" in options else []  # fmt: skip
    for field, kind, bounds, what in _OPTIONS:
        if options.get(field) is not None:
            option_checks.append({"field": field, "value": options[field], "kind": kind, "hint": what, **bounds})
    errors += field_errors(option_checks)
    if "experiment_results_dir" in options:
        subdir = os.path.join(str(options.get("experiment_name") or ""), host) if options.get("experiment_name") else ""
        error = results_dir_error(options.get("experiment_results_dir"), subdir)
        if error:
            errors.append(error)

    # the matrix
    error = matrix_error(matrix)
    if error:
        errors.append(error)
    else:
        errors += _matrix_errors(matrix, dut, gen, host, gen_host, systems, impls, touch_modes, tcp_programs,
                                 afxdp_binds, vlab, options)  # fmt: skip

    # the hosts that share a link: addresses and MACs of their own (also across the DUTs of one generator host),
    # two ports of one host never the same interface
    if gen is not None:
        errors += _distinct_errors(_link_ends(dut, gen, gen_host, peers, "ip"), _LINK_WHAT % "an IPv4 address", valid_ipv4,
                                   mine=host)  # fmt: skip
        errors += _distinct_errors(_link_ends(dut, gen, gen_host, peers, "mac"), _LINK_WHAT % "a MAC address", valid_mac,
                                   mine=host)  # fmt: skip
        # a DUT's own generator port (xdplab_dut_generator.interface) meets the generator's receive port only where
        # frames come back (the forwarding experiment); the generator host's own two ports are always two
        sends = (
            (host, "xdplab_dut_generator.interface", own_gen["interface"])
            if own_gen.get("interface") and forward is not None
            else (gen_host, "xdplab_generator_interface", gen.get("xdplab_generator_interface"))
        )
        errors += _distinct_errors(
            [sends, (gen_host, "xdplab_generator_rx_interface", gen.get("xdplab_generator_rx_interface"))],
            _PORTS_WHAT % "generator sends on and receives on",
            lambda v: isinstance(v, str),
        )  # fmt: skip
    errors += _distinct_errors(
        [(host, "xdplab_dut_interface", dut.get("xdplab_dut_interface")),
         (host, "xdplab_dut_egress_interface", dut.get("xdplab_dut_egress_interface"))],
        _PORTS_WHAT % "DUT receives on and forwards out of",
        lambda v: isinstance(v, str),
    )  # fmt: skip

    # the CPU roles: the DUT's, housekeeping's and (on one machine) the generator's never share (_cpu_layout's rules)
    if not options.get("experiment_shared_cpus"):
        errors += _cpu_role_errors(dut, gen, host, gen_host, vlab, online_cpus)

    # the forwarding experiment's ports, rings and CPUs; the latency experiment's loads
    if forward is not None:
        errors += forward_errors(forward, dut, gen, systems, others, duts, vlab)
    if options.get("experiment_latency") and not matrix_error(matrix):
        errors += latency_errors(matrix, options.get("experiment_latency_max_pps"))
    # the routing experiment's tables, destinations, prefix file and packet length
    if not matrix_error(matrix) and (
        [t for t in axis(matrix, "table") if t != "none"] or [d for d in axis(matrix, "destinations") if d not in (0, "0")]
    ):
        errors += routing_errors(matrix, options, dut, host)
    # issue 27: the DoS experiment's ports, attack rates and packet length (when the matrix has a system of kind ddos)
    ddos_systems = [n for n in axis(matrix, "system") if isinstance(n, str) and _impl(systems.get(n)) == "ddos"]
    if options.get("experiment_ddos") and not matrix_error(matrix) and ddos_systems:
        errors += ddos_errors(matrix, options["experiment_ddos"], host)
        errors += ddos_app_cpu_errors(dut, host)

    # the generator host and its backend
    if gen is None:
        errors.append(
            "%s: xdplab_generator_host: %s is not a host of the group generators (generators: %s)"
            % (host, _json(gen_host), ", ".join(generators or []) or "none")
        )
    else:
        if gen.get("xdplab_generator_interface") in (None, ""):
            errors.append("%s: xdplab_generator_interface: not set; name the port the generator sends on" % gen_host)
        backend = gen.get("xdplab_generator_backend")
        if backend in (None, ""):
            errors.append("%s: xdplab_generator_backend: not set (backends: %s)" % (gen_host, ", ".join(backends)))
        elif backends and backend not in backends:
            errors.append(
                "%s: xdplab_generator_backend: '%s' is not a backend of xdplab.testbed.traffic_generator (known: %s)"
                % (gen_host, backend, ", ".join(backends))
            )
    return errors


def _default(value, default):
    return default if value is None else value


def _matrix_errors(matrix, dut, gen, host, gen_host, systems, impls, touch_modes, tcp_programs, afxdp_binds, vlab,
                   options):  # fmt: skip
    on_vlab = host in (vlab or ())
    ax = {
        "system": axis(matrix, "system"),
        "cores": axis(matrix, "cores"),
        "packet_len": axis(matrix, "packet_len"),
        "touch": axis(matrix, "touch", "no_touch"),
        "action": axis(matrix, "action", "drop"),
        "offered_mpps": axis(matrix, "offered_mpps", 0),
        "program": axis(matrix, "program", "none"),
        "mode": axis(matrix, "mode", "rxdrop"),
        "bind": axis(matrix, "bind", "drv_copy"),
        "streams": axis(matrix, "streams", 1),
        "window": axis(matrix, "window", "default"),
    }
    checks = [
        {"field": "cores", "value": ax["cores"], "kind": "whole", "list": True, "min": 1,
         "hint": "cores = stream_count of a trial, one flow per DUT core"},
        {"field": "packet_len", "value": ax["packet_len"], "kind": "whole", "list": True, "min": 64, "max": 1518,
         "hint": "Ethernet frame sizes, 64 to 1518"},
        {"field": "touch", "value": ax["touch"], "kind": "choice", "list": True, "choices": list(touch_modes)},
        {"field": "action", "value": ax["action"], "kind": "choice", "list": True,
         "choices": ["drop", "pass", "tx", "redirect"]},
        {"field": "offered_mpps", "value": ax["offered_mpps"], "kind": "number", "list": True, "min": 0,
         "hint": "offered loads in Mpps, 0 = as fast as the generator can"},
        {"field": "system", "value": ax["system"], "kind": "choice", "list": True, "choices": list(systems),
         "hint": "the matrix's systems are names of experiment_systems"},
        {"field": "program", "value": ax["program"], "kind": "choice", "list": True, "choices": list(tcp_programs),
         "hint": "what the TCP system attaches to the DUT port"},
        {"field": "mode", "value": ax["mode"], "kind": "choice", "list": True, "choices": ["rxdrop", "txpush", "l2fwd"],
         "hint": "the AF_XDP benchmark (xdplab-xsk-bench --mode)"},
        {"field": "bind", "value": ax["bind"], "kind": "choice", "list": True, "choices": list(afxdp_binds),
         "hint": "XDP_SKB, XDP_DRV copy or XDP_DRV zero-copy"},
        {"field": "streams", "value": ax["streams"], "kind": "whole", "list": True, "min": 1, "max": 128,
         "hint": "parallel TCP streams of the iperf3 client"},
    ]  # fmt: skip
    errors = field_errors(checks)
    if on_vlab and "drv_zerocopy" in ax["bind"]:
        errors.append(
            "%s: bind: drv_zerocopy: veth (the virtual lab's DUT port) has no AF_XDP zero-copy; drop it from the bind "
            "axis (the report gives the reason in its cell)" % host
        )
    bad = [w for w in ax["window"] if not _WINDOW_RE.match(str(w))]
    if bad:
        errors.append(
            "window: %s is not a size: give bytes with an optional K, M or G suffix (256K, 4M), or default for the "
            "kernel's autotuning (iperf3 --window)" % _json(bad)
        )
    dut_cpus = dut.get("xdplab_dut_cpus")
    is_list = isinstance(dut_cpus, (list, tuple))
    used = [systems[s] for s in ax["system"] if isinstance(s, str) and s in systems and isinstance(systems[s], dict)]
    same_machine = host in (vlab or ()) and gen_host in (vlab or ())
    if gen is not None and same_machine and is_list and any(s.get("impl") == "tcp" for s in used):
        client = gen.get("xdplab_iperf3_client_cpus")
        client = _default(client, _default(gen.get("xdplab_generator_cpus"), []))
        both = [c for c in _cpu_ints(client) if c in _cpu_ints(dut_cpus)]
        if both:
            errors.append(
                "%s: xdplab_iperf3_client_cpus: %s overlaps the DUT CPUs %s (CPU %s) on the same machine: the client "
                "would be measured as DUT load; give it CPUs outside xdplab_dut_cpus"
                % (gen_host, _json(client), _json(dut_cpus), ", ".join(map(str, both)))
            )
    cores = [n for n in (_whole(c) for c in ax["cores"]) if n is not None]
    if is_list and cores and max(cores) > len(dut_cpus):
        errors.append(
            "%s: cores: the matrix runs up to %d cores, but xdplab_dut_cpus lists %d CPU(s) (%s); lower the cores axis "
            "or give the DUT more CPUs" % (host, max(cores), len(dut_cpus), _json(dut_cpus))
        )
    missing = [
        "experiment_systems: %s: impl %s has no trial implementation (impls: %s)"
        % (s, _json(_impl(systems[s])), ", ".join(impls))
        for s in ax["system"]
        if isinstance(s, str) and s in systems and _impl(systems[s]) not in impls
    ]
    if missing:
        errors.append("; ".join(missing))
    zerocopy = [s for s in ax["system"] if isinstance(s, str) and s in systems and isinstance(systems[s], dict)
                and systems[s].get("copy_mode") == "zerocopy"]  # fmt: skip
    if on_vlab and zerocopy:
        errors.append(
            "%s: system: %s: veth (the virtual lab's DUT port) has no AF_XDP zero-copy; use af_xdp_copy (AF_XDP copy "
            "mode)" % (host, ", ".join(zerocopy))
        )
    errors += _line_rate_errors(matrix, options.get("experiment_link_speed_gbit"))
    return errors


def _impl(system):
    impl = system.get("impl") if isinstance(system, dict) else None
    return impl if impl not in (None, "") else "(none)"


def _line_rate_errors(matrix, link_speed_gbit):
    """Offered loads no link of that speed carries: above its line rate at the sub-matrix's smallest frames."""
    speed = _number(link_speed_gbit)
    if not speed or speed <= 0:
        return []
    errors = []
    for sub in _sub_matrices(matrix):
        sizes = [n for n in (_whole(p) for p in sub.get("packet_len", [64])) if n is not None and n >= 64]
        loads = [x for x in (_number(m) for m in sub.get("offered_mpps", [])) if x is not None]
        if not sizes or not loads:
            continue
        ceiling = _record.wire_pps(speed, min(sizes)) / 1e6
        over = [x for x in loads if x > ceiling * 1.000001]
        if over:
            errors.append(
                "offered_mpps: %s is above the line rate of a %s Gbit/s link (experiment_link_speed_gbit) at %d-byte "
                "frames, %.3f Mpps; give loads at or below it, or 0 for as fast as the generator can"
                % (", ".join("%g" % x for x in over), "%g" % speed, min(sizes), ceiling)
            )
    return errors


def _cpu_role_errors(dut, gen, host, gen_host, vlab, online_cpus):
    """The DUT's CPUs, housekeeping's (a DUT's variable: the controller's processes on that machine) and, where the
    generator runs on the same machine (a virtual lab), the generator's senders: disjoint by _cpu_layout's rules."""
    roles = {
        "dut": (host, "xdplab_dut_cpus", dut.get("xdplab_dut_cpus")),
        "housekeeping": (host, "xdplab_housekeeping_cpus", dut.get("xdplab_housekeeping_cpus")),
    }
    same_machine = host in (vlab or ()) and gen_host in (vlab or ())
    own = dut.get("xdplab_dut_generator") if isinstance(dut.get("xdplab_dut_generator"), dict) else {}
    if gen is not None and same_machine and own.get("cpus") is not None:
        # this DUT's trials send from its own CPUs of the generator (xdplab_dut_generator over the generator host's)
        roles["generator"] = (host, "xdplab_dut_generator.cpus", own.get("cpus"))
    elif gen is not None and same_machine:
        roles["generator"] = (gen_host, "xdplab_generator_cpus", gen.get("xdplab_generator_cpus"))
    cpus = {role: _cpu_ints(value) for role, (_h, _f, value) in roles.items()}
    online = _online_count(online_cpus) if same_machine else None
    errors = []
    for a, b, both in _cpu_layout.overlaps(cpus, online):
        a_host, a_field, a_value = roles[a]
        b_host, b_field, b_value = roles[b]
        where = "on the same machine " if a_host != b_host else ""
        errors.append(
            "%s: %s: %s overlaps %s's %s %s %s(CPU %s): %s; give %s CPUs outside %s"
            % (b_host, b_field, _json(b_value), a_host, a_field, _json(a_value), where, format_cpu_list(both),
               _cpu_layout.OVERLAP_WHY, b_field, a_field)
        )  # fmt: skip
    return errors


# -- the forwarding experiment (playbooks/paper_forward.yml) ---------------------------------------------------------
#: RX/TX descriptors per ring each driver takes: mlx5 rounds to a power of two between 2^6 and 2^13 (en_ethtool.c
#: MLX5E_PARAMS_MINIMUM/MAXIMUM_LOG_{RQ,SQ}_SIZE); veth has no rings at all (None); any other driver 1 to 65535
RING_LIMITS = {"mlx5_core": (64, 8192), "veth": None}
RING_LIMITS_OTHER = (1, 65535)


def _port_driver(dut):
    """The driver of the DUT's ingress port (its entry of xdplab_dut_ports), veth where the inventory lists none."""
    ports = dut.get("xdplab_dut_ports") if isinstance(dut.get("xdplab_dut_ports"), (list, tuple)) else []
    for port in ports:
        if isinstance(port, dict) and port.get("name") == dut.get("xdplab_dut_interface"):
            return port.get("driver") or "(no driver given in xdplab_dut_ports)"
    return "veth"


def _generator_ports(others, gen_host, gen, dut, peers):
    """{port: (host, which field names it)} of every generator port the inventory names, on any other host."""
    ports = {}
    for name, hv in sorted((others or {}).items()):
        if not isinstance(hv, dict):
            continue
        for field in ("xdplab_generator_interface", "xdplab_generator_rx_interface"):
            if isinstance(hv.get(field), str) and hv.get(field):
                ports.setdefault(hv[field], (name, "its xdplab_generator_interface or xdplab_generator_rx_interface"))
    if gen is not None:
        for d in [dut] + list(peers):
            own = d.get("xdplab_dut_generator") if isinstance(d.get("xdplab_dut_generator"), dict) else {}
            if isinstance(own.get("interface"), str) and own.get("interface"):
                ports.setdefault(own["interface"], (gen_host, "%s's xdplab_dut_generator.interface"
                                                    % d.get("inventory_hostname")))  # fmt: skip
    return ports


def forward_errors(forward, dut, gen, systems, others=None, duts=(), vlab=()):
    """The forwarding experiment's bad input, each error naming the host, the field and its value: a second port where
    a system sends out of one (the registry's ``return_port: egress``), the egress port this DUT's own (not a port of
    the generator's where they are one machine, a virtual lab), ring sizes the ingress port's driver takes, testpmd
    ``mac``'s egress PCI port (``forward_mode: mac``), the cpumap's CPU outside the DUT's receive CPUs (the forwarding
    modes with a cpumap, _systems.FORWARD_MODES), and no queue-count axis.

    forward: {systems, ring_sizes, queues, vlab_queues} (paper_forward_systems, paper_forward_ring_sizes,
    paper_forward_queues and the virtual lab's vlab_queues); dut, gen, systems, others, duts, vlab: as
    ``input_errors``'s.
    """
    from ansible_collections.xdplab.testbed.plugins.module_utils._systems import FORWARD_MODES

    forward = forward if isinstance(forward, dict) else {}
    dut = dut or {}
    systems = systems if isinstance(systems, dict) else {}
    host = dut.get("inventory_hostname") or "dut"
    gen_host = dut.get("xdplab_generator_host")
    ingress = dut.get("xdplab_dut_interface")
    egress = dut.get("xdplab_dut_egress_interface") or ""
    names = [s for s in _as_list(forward.get("systems")) if isinstance(s, str)]
    entries = {s: systems[s] for s in names if isinstance(systems.get(s), dict)}
    driver = _port_driver(dut)
    errors = []

    # a second port where a system sends out of one
    egress_systems = [s for s, e in entries.items() if e.get("return_port") == "egress"]
    if egress_systems:
        if not egress or egress == ingress:
            errors.append(
                "%s: xdplab_dut_egress_interface: the systems %s send out of a second port, but "
                "xdplab_dut_egress_interface is '%s' and the ingress port (xdplab_dut_interface) is %s: name another "
                "port of this DUT as xdplab_dut_egress_interface and its peer on the generator %s as "
                "xdplab_generator_rx_interface (inventory host_vars)"
                % (host, ", ".join(egress_systems), egress, ingress, gen_host)
            )
        elif gen is not None and not gen.get("xdplab_generator_rx_interface"):
            errors.append(
                "%s: xdplab_generator_rx_interface: the systems %s send out of a second port (xdplab_dut_egress_interface "
                "%s of %s) and the frames come back on the generator's receive port, but xdplab_generator_rx_interface "
                "is '%s': name the peer of %s on the generator %s as xdplab_generator_rx_interface (inventory host_vars)"
                % (gen_host, ", ".join(egress_systems), egress, host, gen.get("xdplab_generator_rx_interface") or "",
                   egress, gen_host)
            )  # fmt: skip

    # a devmap resolves its ifindex on the host (network namespace) that runs it: a port of the generator is refused
    # where the hosts are one machine (a virtual lab's namespaces: its port names are the machine's; two machines
    # may well both have an ens5)
    if egress and host in (vlab or ()):
        on_machine = {h: v for h, v in (others or {}).items() if h in vlab}
        peers = _peers(on_machine, duts, host, gen_host) if duts else []
        owner = _generator_ports(on_machine, gen_host, gen if gen_host in vlab else None, dut, peers).get(egress)
        if owner is not None and owner[0] != host:
            errors.append(
                "%s: xdplab_dut_egress_interface %s is a port of %s (%s), not of this DUT: XDP_REDIRECT (a devmap) and "
                "a route can only send out of an interface of the host they run on. Name one of %s's ports."
                % (host, egress, owner[0], owner[1], host)
            )

    # ring sizes the driver takes
    ring_sizes = _as_list(forward.get("ring_sizes"))
    if ring_sizes:
        limits = RING_LIMITS.get(driver, RING_LIMITS_OTHER)
        sizes = [_whole(r) for r in ring_sizes]
        if limits is None:
            why = ("the %s driver has no RX/TX rings to size (ethtool -G: Operation not supported); leave "
                   "paper_forward_ring_sizes empty" % driver)  # fmt: skip
        elif any(n is None or n < limits[0] or n > limits[1] for n in sizes):
            why = "the driver takes %d to %d descriptors per ring" % limits
        else:
            why = None
        if why:
            errors.append("%s: paper_forward_ring_sizes: ring sizes %s for %s (driver %s): %s"
                          % (host, _json(ring_sizes), ingress, driver, why))  # fmt: skip

    # testpmd `mac` takes both ports: on hardware by PCI address (xdplab_dpdk_port, xdplab_dpdk_egress_port)
    dpdk_mac = [s for s, e in entries.items() if e.get("forward_mode") == "mac"]
    dpdk_port = dut.get("xdplab_dpdk_port") or ""
    dpdk_egress = dut.get("xdplab_dpdk_egress_port") or ""
    if dpdk_mac and dpdk_port and (not dpdk_egress or dpdk_egress == dpdk_port):
        errors.append(
            "%s: xdplab_dpdk_egress_port: the systems %s run testpmd `mac` from the ingress port (xdplab_dpdk_port %s) "
            "to the egress port, but xdplab_dpdk_egress_port is '%s'%s: give the PCI address of %s's port (lspci -D, "
            "or dpdk-devbind.py --status) in the inventory (host_vars)"
            % (host, ", ".join(dpdk_mac), dpdk_port, dpdk_egress, " (the ingress port's)" if dpdk_egress else "",
               egress or "the egress port")
        )  # fmt: skip

    # the cpumap's program receives on the trial's CPUs and forwards from the cpumap's CPU: another CPU of this DUT
    programs = []
    for entry in entries.values():
        mode = FORWARD_MODES.get(entry.get("forward")) or {}
        if mode.get("cpumap") and mode.get("program") not in programs:
            programs.append(mode.get("program"))
    if programs:
        cpu = dut.get("xdplab_dut_cpumap_cpu")
        if cpu is None:
            housekeeping = [n for n in (_whole(c) for c in _as_list(dut.get("xdplab_housekeeping_cpus"))) if n is not None]
            cpu = housekeeping[0] if housekeeping else ""
        dut_cpus = dut.get("xdplab_dut_cpus")
        if not re.match(r"^[0-9]+$", str(cpu)) or int(str(cpu)) in _cpu_ints(dut_cpus):
            errors.extend(
                "%s: xdplab_dut_cpumap_cpu: %s receives on the DUT's CPUs %s and forwards from the cpumap's CPU, "
                "xdplab_dut_cpumap_cpu (default: the first of xdplab_housekeeping_cpus), which is '%s': name one CPU "
                "of %s outside xdplab_dut_cpus as xdplab_dut_cpumap_cpu in the inventory (host_vars)"
                % (host, program, _json(dut_cpus), cpu, host)
                for program in programs
            )  # fmt: skip

    # seeds/004's multi-ring XDP_TX/REDIRECT (more TX rings than receive cores) as a queue-count axis: not built. Each
    # trial's rings are its cores (one RX queue per core; XDP_TX sends on the ring of the queue it received on, the
    # devmap redirect on the egress port's ring of the same CPU), so a queue count other than the cores is refused
    queues = _as_list(forward.get("queues"))
    if queues:
        if driver == "veth":
            where = (
                "On the virtual lab %s is a veth created with %s queue(s) (vlab_queues = the number of "
                "xdplab_dut_cpus): veth changes its rx/tx queue counts (never combined) only up to the "
                "numrxqueues/numtxqueues given at creation, refuses an RX count below the TX count of its peer while "
                "XDP is attached, and clears its XDP features when the TX queues of the peer outnumber its RX queues, "
                "so several rings per core need the vlab re-created per point with both ends of each pair set."
                % (ingress, "?" if forward.get("vlab_queues") is None else forward.get("vlab_queues"))
            )
        else:
            where = "On %s several TX rings per core need the XDP program to pick the ring (not built)." % driver
        errors.append(
            "%s: paper_forward_queues %s is not an axis of this experiment. seeds/004's 1 ring and 24 rings are mlx5 "
            "channels, one per core (hyper-threading off), which is this experiment's paper_forward_cores axis: each "
            "trial uses as many rings as cores, one RX queue per core, XDP_TX on the ring it received on, the devmap "
            "redirect on the egress port's ring of the same CPU. %s For more rings than cores nothing is built; for "
            "seeds/004's case leave paper_forward_queues empty and vary paper_forward_cores (e.g. [1, 24])."
            % (host, _json(queues), where)
        )
    return errors


def _as_list(value):
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


# -- the latency experiment (playbooks/paper_latency.yml) ------------------------------------------------------------
def _pps(mpps):
    """Mpps as frames/s without binary rounding (0.0001 Mpps is 100.0, not 100.00000000000001)."""
    return float(decimal.Decimal(repr(float(mpps))) * 1000000)


def latency_errors(matrix, max_pps):
    """The latency experiment's loads: every offered_mpps of the matrix above 0 (a paced rate) and at or below the
    stamping generator's ceiling, experiment_latency_max_pps (frames/s). Loads that are not numbers, and a ceiling
    that is not one, are the other checks' errors."""
    ceiling = _number(max_pps)
    loads = [_pps(x) for x in (_number(m) for m in axis(matrix, "offered_mpps", 0)) if x is not None]
    hint = (
        "(one paced xdplab-trafficgen lane; benchmarks/latency_cost.py measures it). Give loads at or below it "
        "(-e '{\"paper_latency_loads_mpps\": [0.0001, 0.5]}') or, on a faster generator, raise "
        "experiment_latency_max_pps."
    )
    errors = []
    over = [x for x in loads if ceiling is not None and x > ceiling]
    if over:
        errors.append(
            "offered_mpps: latency loads %s pps are above the stamping generator's ceiling experiment_latency_max_pps=%s "
            "pps %s" % (_pylist(over), max_pps, hint)
        )
    unpaced = [x for x in loads if x <= 0]
    if unpaced:
        errors.append(
            "offered_mpps: latency loads %s pps are 0 or less (unpaced): a latency trial needs a paced rate; give loads "
            "above 0 and at or below the stamping generator's ceiling experiment_latency_max_pps=%s pps "
            "(-e '{\"paper_latency_loads_mpps\": [0.0001, 0.5]}')" % (_pylist(unpaced), max_pps)
        )
    return errors


def _pylist(values):
    return "[%s]" % ", ".join(repr(v) for v in values)


# the routing experiment (issue 27, playbooks/paper_routing.yml)
ROUTING_TABLES = ("none", "single", "full")
# traffic_generator's destination lists hold up to this many addresses
ROUTING_MAX_DESTINATIONS = 65536
# Ethernet header and FCS: what a frame of packet_len bytes carries besides its IPv4 packet
ETH_OVERHEAD = 18


def routing_errors(matrix, options, dut, host="dut"):
    """The routing experiment's input: the ``table`` axis (none, single, full) only on systems that route (the stack,
    bpf/xdp_router), ``destinations`` whole numbers 0..65,536, the prefix file (experiment_routing_table_file) readable
    and every line of it an IPv4 prefix (the bad lines named, as module fib_routes names them on the DUT), the limit
    not negative, and the IPv4 packet of every packet_len within the DUT's MTU (xdplab_dut_mtu, default 1500: a longer
    one is not forwarded but answered FRAG_NEEDED)."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes, _systems

    errors = []
    tables = axis(matrix, "table", "none")
    bad = [t for t in tables if t not in ROUTING_TABLES]
    if bad:
        errors.append(
            "table: %s is not one of %s; the route table of a routing trial" % (_pylist(bad), ", ".join(ROUTING_TABLES))
        )
    counts = axis(matrix, "destinations", 0)
    bad = [d for d in counts if _whole(d) is None or not 0 <= _whole(d) <= ROUTING_MAX_DESTINATIONS]
    if bad:
        errors.append(
            "destinations: %s: give whole numbers from 1 to %d (the generator's list; 0: only the DUT's address)"
            % (_pylist(bad), ROUTING_MAX_DESTINATIONS)
        )
    systems = options.get("experiment_systems") or {}
    for sub in _sub_matrices(matrix):
        if not [t for t in sub.get("table", ["none"]) if t != "none"]:
            continue
        for name in sub.get("system", []):
            mode = (systems.get(name) or {}).get("forward")
            spec = _systems.FORWARD_MODES.get(mode, {})
            if (systems.get(name) or {}).get("impl") != "forward" or not (spec.get("router") or spec.get("routes")):
                errors.append(
                    "system: %s does not route (forward %s): a route table (the table axis) applies to linux_forward "
                    "and xdp_router; give it table none or leave it out" % (name, _json(mode))
                )
    limit = options.get("experiment_routing_table_limit", 0)
    if _whole(limit) is None or _whole(limit) < 0:
        errors.append("experiment_routing_table_limit: %s: give 0 (every prefix) or how many to install" % _json(limit))
        limit = 0
    path = options.get("experiment_routing_table_file")
    if "full" in tables or [d for d in counts if (_whole(d) or 0) > 0]:
        if not path:
            errors.append(
                "experiment_routing_table_file: not set; name the prefix file (one IPv4 prefix a line, plain or .gz): "
                "the full table and where the destinations are drawn"
            )
        else:
            try:
                _fib_routes.read_prefixes(str(path), limit=int(limit))
            except _fib_routes.FibRoutesError as exc:
                errors.append("experiment_routing_table_file: %s" % exc)
    errors += encap_mtu_errors(matrix, _default(dut.get("xdplab_dut_mtu"), 1500), host, overhead=0)
    return errors


# -- the DoS experiment (playbooks/paper_ddos.yml, issue 27) -----------------------------------------------------------
# what an encapsulation adds to the IP packet (IPIP's outer header): packet length + 20 must fit the MTU
ENCAP_OVERHEAD = 20


def encap_mtu_errors(matrix, mtu, host, overhead=ENCAP_OVERHEAD):
    """packet_len values whose IP packet (packet_len - 18) plus ``overhead`` bytes is over the DUT port's MTU: the
    one MTU check of the paper's experiments. ``overhead`` 20: an encapsulation's outer header (the DoS experiment);
    0: the plain IPv4 packet of the routing experiment (routing_errors), which a router answers with FRAG_NEEDED."""
    ceiling = _number(mtu)
    if ceiling is None:
        return [
            "%s: xdplab_dut_mtu: %s is not a number of bytes (the DUT port's MTU, 1500 on the virtual lab)" % (host, _json(mtu))
        ]
    lens = [x for x in (_number(v) for v in axis(matrix, "packet_len", 64)) if x is not None]
    over = [int(x) for x in lens if x - ETH_OVERHEAD + overhead > ceiling]
    if not over:
        return []
    if not overhead:
        return [
            "%s: packet_len: %s: the IPv4 packet (packet_len - %d bytes of Ethernet header and FCS) is over the DUT's "
            "MTU %s (xdplab_dut_mtu): the router answers FRAG_NEEDED instead of forwarding; give frames of at most %d "
            "bytes" % (host, _pylist(over), ETH_OVERHEAD, mtu, int(ceiling) + ETH_OVERHEAD)
        ]
    return [
        "%s: packet_len: %s bytes: the IP packet (packet_len - %d) + %d bytes is over the DUT port's MTU xdplab_dut_mtu=%s; "
        "give packet_len at most %d"
        % (host, _pylist(over), ETH_OVERHEAD, overhead, mtu, int(ceiling) + ETH_OVERHEAD - overhead)
    ]


def ddos_app_cpu_errors(dut, host):
    """The DoS experiment's application CPU, where given (xdplab_dut_cpumap_cpu), is one CPU number; left out, the
    trial picks it (_ddos.app_cpu)."""
    cpu = dut.get("xdplab_dut_cpumap_cpu")
    if cpu in (None, "") or re.match(r"^[0-9]+$", str(cpu)):
        return []
    return [
        "%s: xdplab_dut_cpumap_cpu: %s is not a CPU number: it is the DoS experiment's application CPU (the TCP_RR "
        "server's and xdp_ddos_filter's cpumap target); name one CPU of %s, or leave it out for the default (the first "
        "housekeeping CPU that no generator on this machine uses, else the DUT's last CPU)" % (host, _json(cpu), host)
    ]


def ddos_errors(matrix, ddos, host):
    """The DoS experiment's input: the attack port must not be the TCP_RR port (control and data: one connection), every
    attack rate (offered_mpps) at or below the generator's ceiling (xdplab_generator_max_pps, frames/s), and the flood's
    packet length + 20 within the MTU. ``ddos``: {tcp_rr_port, attack_port, max_pps, mtu}."""
    errors = []
    attack, rr = _number(ddos.get("attack_port")), _number(ddos.get("tcp_rr_port"))
    for field, key, value in (
        ("experiment_ddos_attack_port", "attack_port", attack),
        ("experiment_ddos_tcp_rr_port", "tcp_rr_port", rr),
    ):
        if value is None or not 1 <= value <= 65535 or value != int(value):
            errors.append("%s: %s: %s is not a port (1-65535)" % (host, field, _json(ddos.get(key))))
    if attack is not None and attack == rr:
        errors.append(
            "%s: experiment_ddos_attack_port: %s is the TCP_RR port (experiment_ddos_tcp_rr_port, its control and data "
            "connection): the flood would hit the measured connection; give another attack port (9, the default)"
            % (host, _json(ddos.get("attack_port")))
        )
    ceiling = _number(ddos.get("max_pps"))
    rates = [x for x in (_number(m) for m in axis(matrix, "offered_mpps", 0)) if x is not None]
    if ceiling is None:
        errors.append(
            "%s: xdplab_generator_max_pps: %s is not a number of frames/s (the generator's ceiling, defined in "
            "playbooks/group_vars/all/xdplab_experiment.yml)" % (host, _json(ddos.get("max_pps")))
        )
    else:
        over = [_pps(x) for x in rates if _pps(x) > ceiling]
        if over:
            errors.append(
                "%s: offered_mpps: attack rates %s pps are above the generator's ceiling xdplab_generator_max_pps=%s "
                "pps; give rates at or below it (-e '{\"paper_ddos_offered_mpps\": [0, 1, 2]}'), or on a faster "
                "generator raise xdplab_generator_max_pps in the inventory" % (host, _pylist(over), ddos.get("max_pps"))
            )
    errors += encap_mtu_errors(matrix, ddos.get("mtu"), host)
    return errors
