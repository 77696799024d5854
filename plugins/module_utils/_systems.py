# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The registry of system kinds: what the trial runner needs to know about each, in one place (issue 26).

A *system* is one entry of ``experiment_systems`` (``xdp``, ``dpdk_vector``, ``linux_raw``, ...) or of the
inventory's ``xdplab_custom_systems`` (a user's own XDP program). Its *kind* names the directory of the role's
task files that set it up, measure it and tear it down (roles/experiment/tasks/systems/<kind>/); everything else
that depends on the kind is here, so that no task file and no Jinja expression names a system:

- which DUT CPUs a trial of it uses (DPDK keeps its main lcore out);
- whether its measure task brackets its own CPU window (``cpu_windowed``) and whether a paced trial reads the XDP
  program's BPF run time;
- how much longer its generator runs (a forwarding system's window lead);
- what its measure task returns about the program that ran, for the record's provenance;
- which matrix axes it varies (only ``xdp``'s benchmark program has a touch mode);
- what the read-only preflight must check for it (the XDP mode of the DUT port, DPDK's port);
- which of its entries may come from the inventory (``xdplab_custom_systems``) and with which keys.

Pure Python (no Ansible import): the filters in plugins/filter/systems.py expose it; tests/unit/test_systems.py
tests it.
"""

from __future__ import annotations

import math
import os
import string
from dataclasses import dataclass, field

from ansible_collections.xdplab.testbed.plugins.module_utils import _netfilter
from ansible_collections.xdplab.testbed.plugins.module_utils._libbpf import file_sha256


@dataclass(frozen=True)
class Kind:
    """One kind of system under test (a directory tasks/systems/<name>/ of the role experiment)."""

    name: str
    # one sentence for errors and docs
    summary: str
    # the measure task brackets its own CPU window (its module's cpu_window_cpus): True, False or 'unpaced_or_no_bpf'
    # (XDP: at a paced load with experiment_cpu_bpf_stats the window is read around the BPF run time instead)
    cpu_windowed: object = False
    # a paced trial reads the XDP program's BPF run time (kernel.bpf_stats_enabled) beside the CPU time
    bpf_stats_when_paced: bool = False
    # DPDK: its main lcore is not one of the trial's forwarding CPUs
    excludes_main_lcore: bool = False
    # {record key: key of the measure task's result} kept in the record's provenance.program
    measure_provenance: dict = field(default_factory=dict)
    # matrix axes with a meaning for this kind beyond the common ones (system, cores, packet_len, action,
    # offered_mpps): the others are pinned to their default by system_matrix
    axes: tuple = ()
    # what the read-only preflight checks for this kind: 'xdp_mode' (the DUT port's XDP mode), 'dpdk_port'
    preflight: tuple = ()
    # forwarding (tasks/systems/forward): the DUT's port counters bracket the trial's CPU window (the XDP and Linux
    # forwarders; a forwarding process brackets its own)
    forward_dut_cpu_window: bool = False
    # a forwarding process that ends its own window once the far side's is known (testpmd's window_end_file)
    process_window_end: bool = False
    # the latency experiment's sink is on the DUT's ingress port (no DUT program in between)
    sink_at_dut: bool = False
    # a custom system of this kind is a BPF object the role bpf_programs builds (source) or installs (object)
    custom_bpf_object: bool = False
    # keys a custom system (xdplab_custom_systems) of this kind may have, with one sentence each; () = no custom
    # systems of this kind
    custom_keys: dict = field(default_factory=dict)


KINDS = {
    kind.name: kind
    for kind in (
        Kind(
            "xdp",
            "an XDP program attached to the DUT port, counted by its map or by the driver",
            cpu_windowed="unpaced_or_no_bpf",
            bpf_stats_when_paced=True,
            axes=("touch",),
            preflight=("xdp_mode",),
            custom_bpf_object=True,
            custom_keys={
                "kind": "xdp",
                "source": "the program's C source on the controller, built on the target with the project's flags",
                "object": "a prebuilt BPF object on the controller (instead of source)",
                "program": "the XDP program's name in the object (required)",
                "variables": "its .rodata variables to set, {name: value}",
                "label": "its name in tables and figures (default: the system's name)",
            },
        ),
        Kind(
            "dpdk",
            "DPDK's testpmd on the DUT port (rxonly, or forwarding with `forward`)",
            cpu_windowed=True,
            excludes_main_lcore=True,
            process_window_end=True,
            # rx_paths: per port, the burst mode the driver reports or the RX path it printed (net_virtio: module testpmd)
            measure_provenance={"dpdk_version": "version", "command": "command", "rx_paths": "rx_paths"},
            preflight=("dpdk_port",),
        ),
        Kind(
            "af_xdp",
            "the AF_XDP benchmark xdplab-xsk-bench on the DUT port's queues",
            measure_provenance={"bind_mode": "bind_mode", "version": "version", "command": "command"},
            axes=("mode", "bind"),
            custom_keys={
                "kind": "af_xdp",
                "binary": "the user's AF_XDP program on the controller, copied to the DUT; one process per trial queue",
                "args": "its arguments, a list; {interface}, {queue} and {cpu} are replaced per process",
                "label": "its name in tables and figures (default: the system's name)",
            },
        ),
        Kind(
            "linux",
            "the Linux stack dropping in netfilter (raw table, after conntrack, or a user's nftables ruleset)",
            cpu_windowed=True,
            custom_keys={
                "kind": "linux",
                "ruleset": "an nftables ruleset file on the controller (nft -f syntax), loaded into the DUT's namespace; "
                "counted by its drop rules that have a counter before the drop",
                "label": "its name in tables and figures (default: the system's name)",
            },
        ),
        Kind(
            "forward",
            "forwarding back to the generator (XDP_TX, XDP_REDIRECT, cpumap, Linux ip_forward)",
            cpu_windowed=True,
            forward_dut_cpu_window=True,
            # the routing experiment (issue 27): the route table (none, single, full) and the generator's destinations
            axes=("table", "destinations"),
        ),
        Kind("tcp", "TCP streams (iperf3) into a server on the DUT", axes=("program", "streams", "window")),
        Kind(
            "latency_floor",
            "the generator straight to its own sink, no DUT (the latency experiment's floor)",
            sink_at_dut=True,
        ),
        # issue 27 (paper_ddos, plugin_utils/_kind_ddos.py): TCP_RR on the DUT while the generator floods it
        Kind(
            "ddos",
            "TCP_RR (xdplab-tcp-rr) into a server on the DUT while the generator floods it with UDP to a closed port",
            cpu_windowed=True,
        ),
        # issue 27 (paper_lb.yml): a load balancer, its encapsulated packets counted where they come back
        # (plugin_utils/_kind_lb.py)
        Kind(
            "lb",
            "a load balancer (xdp_lb: IPIP and XDP_TX; IPVS: ipvsadm -s sh, tunnel mode), counted where the "
            "encapsulated packets come back",
            cpu_windowed=True,
            forward_dut_cpu_window=True,
        ),
    )
}

# the matrix axes every kind has; the others are the kinds' own (Kind.axes) and their defaults
COMMON_AXES = ("system", "cores", "packet_len", "action", "offered_mpps")
AXIS_DEFAULTS = {"touch": "no_touch", "mode": "rxdrop", "bind": "drv_copy", "program": "none", "streams": 1, "window": "default"}
# the routing experiment (issue 27): no route table of the module fib_routes, one destination (the DUT's address)
AXIS_DEFAULTS.update({"table": "none", "destinations": 0})


class SystemsError(ValueError):
    """A system entry that cannot run; the message names the field and the value."""


def kind_of(system, name="?"):
    """The Kind of an ``experiment_systems`` entry (its ``impl``) or raise naming the system."""
    impl = (system or {}).get("impl")
    if impl not in KINDS:
        raise SystemsError(f"experiment_systems: {name}: impl {impl!r} has no trial implementation (kinds: {', '.join(KINDS)})")
    return KINDS[impl]


def _whole(value):
    try:
        return not isinstance(value, bool) and int(str(value)) >= 0
    except ValueError:
        return False


def _int_list(values):
    return [int(v) for v in (values or [])]


def trial_values(planned, systems, settings):
    """The one trial object of a planned trial (filter ``experiment_trials``'s item): everything the trial's tasks
    read, decided once. ``settings`` holds the inventory's and the role's values it depends on:
    dut_cpus, dpdk_main_lcore, dut_interface, warmup, interval, samples, generator_slack, window_lead,
    cpu_bpf_stats, now (UTC text)."""
    point = planned["point"]
    name = point["system"]
    if name not in systems:
        raise SystemsError(f"system: {name!r} is not one of experiment_systems ({', '.join(sorted(systems))})")
    system = dict(systems[name], name=name)
    kind = kind_of(system, name)
    cores = int(point.get("cores", 1))
    dut_cpus = _int_list(settings.get("dut_cpus"))
    main_lcore = int(settings.get("dpdk_main_lcore", 0) or 0)
    dpdk_cpus = [c for c in dut_cpus if c != main_lcore]
    rate = round(float(point.get("offered_mpps", 0) or 0) * 1_000_000)
    bpf_stats = bool(settings.get("cpu_bpf_stats", True))
    warmup = float(settings.get("warmup", 2))
    interval = float(settings.get("interval", 1))
    samples = int(settings.get("samples", 5))
    seconds = warmup + interval * samples + float(settings.get("generator_slack", 10))
    if "forward" in system:
        # a forwarding system's far side and DUT count over one window that opens this long after its start
        seconds += float(settings.get("window_lead", 10))
    # XDP: at a paced load with bpf_stats the window is read around the BPF run time instead (trial.yml's cpu.yml)
    paced_bpf = kind.cpu_windowed == "unpaced_or_no_bpf"
    windowed = (rate == 0 or not bpf_stats) if paced_bpf else bool(kind.cpu_windowed)
    return {
        "record": planned,
        "id": planned["trial_id"],
        "label": f"{planned['index']}/{planned['total']}",
        "point": point,
        "repetition": planned["repetition"],
        "name": name,
        "system": system,
        "kind": kind.name,
        # cores = flows = RX queues = DUT CPUs used: the first `cores` of the DUT's CPUs (DPDK: of those other
        # than its main lcore)
        "cores": cores,
        "cpus": (dpdk_cpus if kind.excludes_main_lcore else dut_cpus)[:cores],
        "dpdk_cpus": dpdk_cpus,
        # offered load in frames/s (axis offered_mpps; 0: as fast as the generator can)
        "rate_pps": rate,
        "packet_len": int(point.get("packet_len", 64)),
        "action": point.get("action", "drop"),
        "touch": point.get("touch", "no_touch"),
        "seconds": math.ceil(seconds),
        "started_at": settings.get("now"),
        # at a paced load, the XDP program's BPF run time too (bpf_stats costs ~20 ns per packet: not at full rate)
        "cpu_bpf_interfaces": ([settings.get("dut_interface")] if kind.bpf_stats_when_paced and rate > 0 and bpf_stats else []),
        "cpu_windowed": windowed,
        # what the measure task says about the program that ran ({record key: result key})
        "from_measure": dict(kind.measure_provenance),
        "custom": bool(system.get("custom")),
        "process_window_end": kind.process_window_end,
        "forward_dut_cpu_window": kind.forward_dut_cpu_window,
    }


def kind_info(system, name="?"):
    """The registry's entry for a system's kind as a mapping (the filter kind_of)."""
    kind = kind_of(system, name)
    return {
        "name": kind.name,
        "summary": kind.summary,
        "excludes_main_lcore": kind.excludes_main_lcore,
        "axes": list(kind.axes),
        "preflight": list(kind.preflight),
        "forward_dut_cpu_window": kind.forward_dut_cpu_window,
        "process_window_end": kind.process_window_end,
        "sink_at_dut": kind.sink_at_dut,
        "custom_keys": sorted(kind.custom_keys),
    }


def measured_provenance(trial, measured):
    """The record's provenance.program additions from the measure task's result (Kind.measure_provenance)."""
    return {key: measured[src] for key, src in trial.get("from_measure", {}).items() if src in (measured or {})}


def kinds_in(matrix_systems, systems):
    """The kinds of the systems a matrix names (unknown names left out: validation reports them)."""
    out = []
    for name in matrix_systems or []:
        impl = (systems.get(name) or {}).get("impl")
        if impl in KINDS and impl not in out:
            out.append(impl)
    return out


def needs(matrix_systems, systems, check):
    """Whether any system of the matrix needs preflight check ``check`` ('xdp_mode', 'dpdk_port')."""
    return any(check in KINDS[k].preflight for k in kinds_in(matrix_systems, systems))


def _xdp_custom_errors(where, entry):
    """A user's XDP program: one of source or object, a file each, the program's name, variables a mapping."""
    errors = []
    has_source, has_object = bool(entry.get("source")), bool(entry.get("object"))
    if has_source == has_object:
        errors.append(
            f"{where}: give exactly one of source (a C file, built on the target) or object (a prebuilt "
            f".bpf.o); got {'both' if has_source else 'neither'}"
        )
    for key in ("source", "object"):
        path = entry.get(key)
        if path and not os.path.isfile(str(path)):
            errors.append(f"{where}: {key}: {path} is not a file on the controller")
    if not entry.get("program"):
        errors.append(f"{where}: program: missing; name the XDP program in the object (its function name)")
    if entry.get("variables") is not None and not isinstance(entry.get("variables"), dict):
        errors.append(f"{where}: variables: must be a mapping {{name: value}}, got {entry.get('variables')!r}")
    return errors


def _linux_custom_errors(where, entry):
    """A user's nftables ruleset: a file on the controller that is plausibly one (_netfilter.nft_ruleset_problems)."""
    path = entry.get("ruleset")
    if not path:
        return [f"{where}: ruleset: missing; name the nftables ruleset file (nft -f syntax) on the controller"]
    if not os.path.isfile(str(path)):
        return [f"{where}: ruleset: {path} is not a file on the controller"]
    try:
        with open(str(path), encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{where}: ruleset: {path} is not a readable text file ({exc})"]
    return [f"{where}: ruleset: {path} {problem}" for problem in _netfilter.nft_ruleset_problems(text)]


AFXDP_PLACEHOLDERS = ("interface", "queue", "cpu")


def _af_xdp_custom_errors(where, entry):
    """A user's AF_XDP binary: an executable file on the controller, args a list of strings whose placeholders are
    {interface}, {queue} and {cpu}."""
    errors = []
    path = entry.get("binary")
    if not path:
        errors.append(f"{where}: binary: missing; name the AF_XDP program on the controller")
    elif not os.path.isfile(str(path)):
        errors.append(f"{where}: binary: {path} is not a file on the controller")
    elif not os.access(str(path), os.X_OK):
        errors.append(f"{where}: binary: {path} is not executable (chmod +x)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        return [*errors, f"{where}: args: must be a list of strings, got {args!r}"]
    for arg in args:
        try:
            fields = [f for _lit, f, _spec, _conv in string.Formatter().parse(str(arg)) if f is not None]
        except ValueError as exc:
            errors.append(f"{where}: args: {arg!r}: {exc} (a doubled brace is a brace)")
            continue
        unknown = [f for f in fields if f not in AFXDP_PLACEHOLDERS]
        if unknown:
            errors.append(
                f"{where}: args: {arg!r}: unknown placeholder(s) {', '.join(unknown)} "
                f"(known: {', '.join('{' + p + '}' for p in AFXDP_PLACEHOLDERS)})"
            )
    return errors


# the checks of a custom system's entry by kind (the kinds with custom_keys)
_CUSTOM_CHECKS = {"xdp": _xdp_custom_errors, "linux": _linux_custom_errors, "af_xdp": _af_xdp_custom_errors}


def custom_errors(custom, builtin):
    """Every problem of ``xdplab_custom_systems`` (a mapping of name: entry), each naming the field and value.

    ``builtin`` may already hold them (an entry with ``custom``: systems merged once before, as ab_compare passes
    its systems to the role): that is not shadowing."""
    if custom in (None, "", {}):
        return []
    if not isinstance(custom, dict):
        return [f"xdplab_custom_systems: must map a system name to its entry, got {custom!r}"]
    errors = []
    for name, entry in custom.items():
        where = f"xdplab_custom_systems: {name}"
        if name in builtin and not (builtin[name] or {}).get("custom"):
            errors.append(
                f"{where}: the name shadows the built-in system {name!r} "
                f"({builtin[name].get('label', builtin[name].get('impl'))}); give your system another name"
            )
            continue
        if not isinstance(entry, dict):
            errors.append(f"{where}: must be a mapping like {{kind: xdp, source: PATH, program: NAME}}, got {entry!r}")
            continue
        kind = entry.get("kind")
        takes = {k: v for k, v in KINDS.items() if v.custom_keys}
        if kind not in takes:
            errors.append(f"{where}: kind: {kind!r} is not a kind a custom system can have (kinds: {', '.join(takes)})")
            continue
        allowed = KINDS[kind].custom_keys
        unknown = sorted(set(entry) - set(allowed))
        if unknown:
            errors.append(f"{where}: unknown key(s) {', '.join(unknown)} (a {kind} system takes: {', '.join(allowed)})")
        errors += _CUSTOM_CHECKS[kind](where, entry)
    return errors


def custom_programs(custom):
    """The role bpf_programs' ``bpf_programs_custom``: ``[{name, source or object, program}]`` of every custom system
    whose kind is a BPF object (Kind.custom_bpf_object) and that names a source or an object."""
    out = []
    for name, entry in (custom or {}).items():
        if not isinstance(entry, dict) or entry.get("kind") not in KINDS:
            continue
        if KINDS[entry["kind"]].custom_bpf_object and (entry.get("source") or entry.get("object")):
            out.append(dict({k: entry[k] for k in ("source", "object", "program") if k in entry}, name=name))
    return out


def custom_object_path(prefix, name):
    """Where the role bpf_programs installs a custom system's object on the target."""
    return f"{prefix}/lib/bpf/custom/{name}.bpf.o"


def with_custom(builtin, custom, prefix):
    """experiment_systems with the inventory's custom systems added (as entries of their kind).

    A custom XDP system is counted by the driver's counters (the program needs no map); its entry carries the
    installed object on the target, the program, its variables and, for the record's provenance, the user's path
    and its sha256. A custom linux system (a user's nftables ruleset) carries the file's path, the tables it
    declares and, in ``given``, the path and its sha256. Raises SystemsError listing every problem (custom_errors)."""
    errors = custom_errors(custom, builtin)
    if errors:
        raise SystemsError("; ".join(errors))
    merged = dict(builtin)
    for name, entry in (custom or {}).items():
        merged[name] = _CUSTOM_ENTRIES[entry["kind"]](name, entry, prefix)
    return merged


def _xdp_custom_entry(name, entry, prefix):
    given = os.path.normpath(str(entry.get("source") or entry.get("object")))
    return {
        "impl": entry["kind"],
        "custom": True,
        "count": "driver",
        "label": entry.get("label", name),
        "object": custom_object_path(prefix, name),
        "program": entry["program"],
        "variables": dict(entry.get("variables") or {}),
        "given": {"source" if entry.get("source") else "object": str(given), "sha256": file_sha256(given)},
    }


def _linux_custom_entry(name, entry, _prefix):
    """A user's nftables ruleset: loaded as it is (mode ruleset), its tables (what teardown removes, what the
    measure task counts in) read from the file here, once."""
    path = os.path.normpath(str(entry["ruleset"]))
    with open(path, encoding="utf-8") as fh:
        tables = _netfilter.nft_ruleset_tables(fh.read())
    return {
        "impl": entry["kind"],
        "custom": True,
        "mode": _netfilter.RULESET_MODE,
        "label": entry.get("label", name),
        "ruleset": path,
        "tables": tables,
        "given": {"ruleset": path, "sha256": file_sha256(path)},
    }


def custom_binary_path(prefix, name):
    """Where the trial copies a custom AF_XDP system's binary on the target."""
    return f"{prefix}/bin/custom/{name}"


def _af_xdp_custom_entry(name, entry, prefix):
    """A user's AF_XDP binary: copied to the target (binary), run once per queue with args, counted by the driver's
    XDP_REDIRECT counters."""
    path = os.path.normpath(str(entry["binary"]))
    return {
        "impl": entry["kind"],
        "custom": True,
        "count": "driver",
        "label": entry.get("label", name),
        "binary": custom_binary_path(prefix, name),
        "args": [str(a) for a in entry.get("args") or []],
        "given": {"binary": path, "sha256": file_sha256(path)},
    }


# a custom system's entry in the run's systems, by kind
_CUSTOM_ENTRIES = {"xdp": _xdp_custom_entry, "linux": _linux_custom_entry, "af_xdp": _af_xdp_custom_entry}


def system_matrix(names, axes, systems, dut_cpus, dpdk_main_lcore=0):
    """A matrix (list of sub-matrices) running ``names`` over ``axes``, each kind on the axes it has.

    Systems of one kind share a sub-matrix; the axes a kind does not vary (Kind.axes) are pinned to their default
    (only the XDP benchmark has a touch mode); a kind that keeps a CPU for itself (DPDK's main lcore) runs the
    cores it can. Unknown system names go into a sub-matrix of their own so that validation names them."""
    groups = {}
    for name in names or []:
        impl = (systems.get(name) or {}).get("impl")
        custom = bool((systems.get(name) or {}).get("custom"))
        groups.setdefault((impl, custom), []).append(name)
    cpus = [int(c) for c in (dut_cpus or []) if _whole(c)]
    usable_dpdk = len([c for c in cpus if c != int(dpdk_main_lcore or 0)])
    out = []
    for (impl, custom), members in groups.items():
        kind = KINDS.get(impl)
        sub = {"system": members}
        for axis, values in axes.items():
            if axis == "system":
                continue
            if axis in COMMON_AXES or kind is None or (axis in kind.axes and not custom):
                sub[axis] = list(values)
            else:
                sub[axis] = [AXIS_DEFAULTS.get(axis, values[0] if values else None)]
        if kind is not None and kind.excludes_main_lcore and "cores" in sub:
            # a value that is not a whole number stays: the input checks name it
            sub["cores"] = [c for c in sub["cores"] if not _whole(c) or int(c) <= usable_dpdk]
            if not sub["cores"]:
                continue
        out.append(sub)
    return out


# The forward kind's modes (a system's `forward`): the XDP program that forwards (its object under lib/bpf, program,
# .rodata variables by name of __experiment_touch_modes/__experiment_count_modes, which of its maps the trial fills),
# or the stack as a router (ip_forward, a route via the generator's receive address).
FORWARD_MODES = {
    "xdp_tx": {"object": "xdp_bench", "program": "xdp_bench_tx", "touch": "swapmac", "count": "driver"},
    "xdp_redirect": {"object": "xdp_forward", "program": "xdp_fwd_redirect_map", "devmap": True},
    "xdp_redirect_cpu": {"object": "xdp_redirect_cpu", "program": "xdp_redirect_cpu", "devmap": True, "cpumap": True},
    "linux": {"router": True},
    # the router (issue 27, paper_routing): bpf_fib_lookup, the devmap keyed by the egress ifindex; the stack's
    # router settings too (ip_forward: bpf_fib_lookup answers FWD_DISABLED without it; the next hop's neighbour)
    "xdp_router": {"object": "xdp_router", "program": "xdp_router", "devmap": True, "devmap_key": "ifindex", "routes": True},
    # xdp-tools' xdp-forward (1.4 and newer; not in Debian 12's xdp-tools 1.3.1): loaded on both ports, fib-direct
    "xdp_tools": {"external": "xdp-forward", "routes": True},
    # forwarding processes of their own kinds (testpmd `mac`/`macswap`, xdplab-xsk-bench l2fwd): the forward kind's
    # code gives them the far side and the window (plugin_utils/_kind_forward.py ForwardingProcess), not a program
    "dpdk": {"process": True},
    "af_xdp": {"process": True},
}


# bpf/xdp_router's lookup (.rodata direct): BPF_FIB_LOOKUP_DIRECT (the main table, no rules; xdp_fwd -D) or full
FIB_LOOKUPS = {"direct": 1, "full": 0}


def forward_plan(system, egress, cpumap_cpu, touch_modes, count_modes):
    """What a forwarding trial sets up for its system's ``forward`` mode: ``{mode, router, xdp, process}`` where ``xdp``
    is xdp_program's object/program/variables/map_entries (None for the router and for a process), ``router`` True for
    the stack, ``process`` True for a forwarding process of its own kind (dpdk, af_xdp)."""
    mode = (system or {}).get("forward")
    if mode not in FORWARD_MODES:
        raise SystemsError(
            f"experiment_systems: {system.get('name', '?')}: forward {mode!r} is not a forwarding mode of the forward "
            f"kind ({', '.join(FORWARD_MODES)})"
        )
    spec = FORWARD_MODES[mode]
    if spec.get("process"):
        if system.get("impl") == "forward":
            raise SystemsError(
                f"experiment_systems: {system.get('name', '?')}: forward {mode!r} is a forwarding process of the kind "
                f"{mode} (impl: {mode}), not of the forward kind"
            )
        return {"mode": mode, "router": False, "xdp": None, "process": True}
    if spec.get("router"):
        return {"mode": mode, "router": True, "xdp": None, "process": False}
    if spec.get("external"):
        return {"mode": mode, "router": False, "xdp": None, "process": False, "external": spec["external"]}
    variables, maps = {}, {}
    if "touch" in spec:
        variables = {"touch_mode": touch_modes[spec["touch"]], "count_mode": count_modes[spec["count"]]}
    if spec.get("cpumap"):
        variables = {"remote_cpu": cpumap_cpu}
        maps["cpu_map"] = cpumap_entries(cpumap_cpu, system.get("cpumap_qsize", 2048), "xdp_cpumap_fwd")
    if spec.get("devmap_key") == "ifindex":
        # bpf/xdp_router: the lookup's egress ifindex is the key; .rodata: the lookup's flags, the counters
        lookup = system.get("fib_lookup", "direct")
        if lookup not in FIB_LOOKUPS:
            raise SystemsError(
                f"experiment_systems: {system.get('name', '?')}: fib_lookup {lookup!r} is not one of {', '.join(FIB_LOOKUPS)}"
            )
        variables = {"direct": FIB_LOOKUPS[lookup], "count_fib": 1 if system.get("count_fib", True) else 0}
        maps["tx_ports"] = {egress: egress}
    elif spec.get("devmap"):
        maps["tx_ports"] = {"0": egress}
    xdp = {"object": spec["object"], "program": spec["program"], "variables": variables, "map_entries": maps}
    return {"mode": mode, "router": False, "xdp": xdp, "process": False}


def cpumap_entries(cpu, qsize, program=None):
    """xdp_program's map_entries for the cpumap of bpf/xdp_cpumap.h (xdp_redirect_cpu, xdp_ddos_filter): one entry,
    the CPU that takes the frames, its queue size and the program its kthread runs (None: the frames go to the
    stack there)."""
    return {str(cpu): {"qsize": int(qsize), "program": program}}
