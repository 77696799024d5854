# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kind ``forward`` (issue 9, playbooks/paper_forward.yml) as a provider of the trial phases (plugin_utils/_trial.py):
the DUT forwards and the frames come back to the generator, which counts them at its receive port. The system entry's
``forward`` says how (module_utils/_systems.py FORWARD_MODES, filter forward_plan):

    xdp_tx            bpf/xdp_bench xdp_bench_tx, touch swapmac, count driver: back out of the ingress port
    xdp_redirect      bpf/xdp_forward xdp_fwd_redirect_map: swapmac, devmap tx_ports[0] = the egress port
    xdp_redirect_cpu  bpf/xdp_redirect_cpu: the cpumap's kthread on another CPU forwards to the egress port
    linux             the stack as a router: ip_forward, the destination's route via the generator's receive address
                      and its static neighbour (the vlab's), the ingress port without the destination address

The far side (bpf/xdp_bare_drop on the generator's port the frames come back to, counted by the driver: rx_counters;
T-Rex counts its own RX, rx_ports) is the generator host's: set up in the phase ``start`` before the generator starts,
counted in the phase ``far`` and taken down in ``stop`` and ``cleanup``, each run on the generator host. The measure
counts both sides over one window: the phase ``measure`` starts the DUT's port counters in the background with a
shared start on CLOCK_REALTIME (the window's lead ahead), ``far`` counts the far side in the foreground over the same
schedule, and ``collect`` collects the DUT's job and composes the measurement with its forwarding section (filter
forwarding_section). (Bracketing the far side's count by two DUT reads instead put both tasks' start-up into the
DUT's window, seconds in which the generator, sharing its CPU with Ansible, sent at another rate: the loss split then
missed up to 11 % of what was offered.) The record's forwarding section travels in measurement.details.forwarding
(trial_record lifts it to the record's forwarding).

The forwarding entries of the kinds dpdk and af_xdp (a ``forward`` key: testpmd, xdplab-xsk-bench) are counted the
same way by their providers (_kind_dpdk.py, _kind_af_xdp.py), with the process itself as a background job of the
trial (the functions below ``PROCESS_JOB``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shlex
import time

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.forwarding import forwarding_section
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes, _systems
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_common import failure

# the background job of the DUT's port counters (Phases.start_job), collected in the phase collect
DUT_JOB = "forward_dut_counters"
# how long the phase collect waits for it after the far side's count has ended
DUT_JOB_WAIT_S = 60


def _values(phases):
    """The forwarding trial's ports and addresses, from the play's variables (every phase, also after a setup that
    failed before the trial's values, and on the generator host)."""
    planned = phases.var("__experiment_planned")
    name = planned["point"]["system"]
    fwd = dict({"return_port": "egress"}, **phases.var("__experiment_systems", {})[name], name=name)
    gen = phases.var("__experiment_gen")
    housekeeping = [int(c) for c in phases.var("xdplab_housekeeping_cpus", []) or []]
    return {
        "fwd": fwd,
        "gen": gen,
        "egress": phases.var("xdplab_dut_egress_interface", "") or "",
        # where frames come back: the generator's own port (XDP_TX) or its receive port, the egress port's peer
        "rx_port": gen["interface"]
        if fwd["return_port"] == "ingress"
        else phases.host_var(gen["host"], "xdplab_generator_rx_interface"),
        "gen_rx_ip": phases.host_var(gen["host"], "xdplab_generator_rx_ip", "") or "",
        "gen_rx_mac": phases.host_var(gen["host"], "xdplab_generator_rx_mac", "") or "",
        "prefix": phases.var("xdplab_dut_prefix_length", phases.var("vlab_prefix_length", 30)),
        # the CPU whose cpumap kthread forwards (xdp_redirect_cpu): not one of the DUT's receive CPUs (validate.yml)
        "cpumap_cpu": phases.var("xdplab_dut_cpumap_cpu", (housekeeping + [""])[0]),
    }


def trex_rx_ports(phases, v=None):
    """T-Rex reports a port's counters only when it is one of backend_options.rx_ports: the trial's traffic names the
    port the frames come back on (the inventory names it by PCI address, a port of the options' ports, or by its
    number). Nothing for the other generators."""
    v = v or _values(phases)
    gen = v["gen"]
    if gen["backend"] != "trex":
        return
    ports = (gen.get("options") or {}).get("ports") or []
    port_of = dict(zip(ports, range(len(ports))))
    rx_port = port_of[v["rx_port"]] if v["rx_port"] in port_of else int(v["rx_port"])
    traffic = phases.state.setdefault("traffic", {})
    traffic["options"] = dict(traffic.get("options") or gen.get("options") or {}, rx_ports=[rx_port])


def _router(fwd):
    """Whether the system forwards by the stack (no XDP program): from its mode alone, so that the teardown can say it
    for an entry whose plan would not be made."""
    return bool(_systems.FORWARD_MODES.get(fwd.get("forward"), {}).get("router"))


def _stack_routes(fwd):
    """Whether the system needs the stack's router settings (ip_forward, the next hop's neighbour, the routes): the
    stack itself, and bpf/xdp_router, whose bpf_fib_lookup reads them (issue 27)."""
    spec = _systems.FORWARD_MODES.get(fwd.get("forward"), {})
    return bool(spec.get("router") or spec.get("routes"))


def _table(phases):
    """The point's route table (axis ``table``: none, single, full)."""
    return str(phases.var("__experiment_planned")["point"].get("table", "none"))


def _routes_args(phases, v, table):
    """fib_routes' arguments for the point's table (the routing experiment, playbooks/paper_routing.yml)."""
    return {
        "state": "present",
        "table": table,
        "src": phases.var("experiment_routing_table_file", None) if table == "full" else None,
        "limit": int(phases.var("experiment_routing_table_limit", 0) or 0),
        "next_hop": v["gen_rx_ip"],
    }


def _routes_stay(phases, table):
    """Whether the route table stays for the DUT's next trial: it has the same table, and this trial did not fail
    with experiment_stop_on_failure (then no trial follows). Installing 900,000 routes per trial is too slow, so the
    matrix is ordered by table and a table is removed when the next trial wants another one, or none follows."""
    planned = phases.var("__experiment_planned")
    pending = list(phases.var("__experiment_pending", []) or [])
    ids = [p.get("trial_id") for p in pending]
    if planned.get("trial_id") not in ids:
        return False
    failed = [f.get("trial_id") for f in phases.var("experiment_failed_trials", []) or [] if isinstance(f, dict)]
    if phases.flag("experiment_stop_on_failure") and planned.get("trial_id") in failed:
        return False
    following = pending[ids.index(planned["trial_id"]) + 1 :]
    if not following:
        return False
    nxt = following[0]["point"]
    system = (phases.var("__experiment_systems", {}) or {}).get(nxt.get("system"), {})
    return str(nxt.get("table", "none")) == table and _stack_routes(system)


def _fib_counts(phases):
    """bpf/xdp_router's counts per fib return code (module fib_counts) on the DUT's ingress port."""
    return phases.module("xdplab.testbed.fib_counts", {"interface": phases.var("xdplab_dut_interface")})


def _lab_nets(phases, v):
    """The lab's connected nets (the generator's and its receive port's): no destination may be in them."""
    import netaddr  # the controller's (requirements.txt); imported here so that the trial action loads without it

    prefix = int(v["prefix"])
    nets = []
    for address in (v["gen"].get("ip"), v["gen_rx_ip"], phases.var("xdplab_dut_ip", None)):
        if address:
            nets.append(str(netaddr.IPNetwork(f"{address}/{prefix}").cidr))
    return sorted(set(nets))


def _drawn_cached(src, limit, count, seed, exclude):
    """draw_in_table over the table's prefixes, kept in a file of the controller's temporary directory for the next
    trials (reading and parsing 901,899 prefixes takes seconds per trial): keyed by the file (path, size, mtime), the
    limit, the count, the seed and the exclusions, so a changed input draws again."""
    import json
    import tempfile

    try:
        st = os.stat(src)
    except (OSError, TypeError) as exc:
        raise _fib_routes.FibRoutesError(f"prefix file {src}: {exc}; give a readable file") from None
    key = json.dumps([os.path.abspath(src), st.st_size, st.st_mtime_ns, limit, count, seed, sorted(exclude)])
    path = os.path.join(tempfile.gettempdir(), f"xdplab-routing-{hashlib.sha256(key.encode()).hexdigest()[:20]}.json")
    with contextlib.suppress(OSError, ValueError):
        with open(path) as handle:
            cached = json.load(handle)
        if cached.get("key") == key:
            return cached["destinations"]
    prefixes = _fib_routes.read_prefixes(src, limit=limit)
    drawn = _fib_routes.draw_in_table(prefixes, count, seed, list(exclude) + list(_fib_routes.MARTIAN))
    with contextlib.suppress(OSError):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as handle:
            json.dump({"key": key, "destinations": drawn}, handle)
        os.replace(tmp, path)
    return drawn


def _routing_destinations(phases, v, count):
    """The point's destinations (axis ``destinations``): ``count`` addresses drawn in the table's prefixes
    (experiment_routing_table_file, its first experiment_routing_table_limit), seeded (experiment_routing_seed):
    every one has a covering route in either table, single and full send to the same list. Outside the martian
    space and the lab's nets; the generator gets the list (traffic_generator's destinations) and the record its
    count, seed and sha256."""
    src = phases.var("experiment_routing_table_file", None)
    limit = int(phases.var("experiment_routing_table_limit", 0) or 0)
    seed = int(phases.var("experiment_routing_seed", 1))
    exclude = _lab_nets(phases, v)
    try:
        drawn = _drawn_cached(src, limit, count, seed, exclude)
    except _fib_routes.FibRoutesError as exc:
        raise failure(f"the routing experiment's destinations: {exc}") from exc
    traffic = phases.state.setdefault("traffic", {})
    traffic["destinations"] = {"list": drawn}
    traffic["exclude"] = exclude
    return drawn


def _routing_setup(phases, v):
    """The point's route table (fib_routes: installed once, kept while the next trials use it) and, for
    bpf/xdp_router, the state the measure and collect read (state ``routing``)."""
    table = _table(phases)
    routing = {"table": table}
    count = int(phases.var("__experiment_planned")["point"].get("destinations", 0) or 0)
    destinations = _routing_destinations(phases, v, count) if count else []
    if destinations:
        routing["destinations"] = {
            "count": len(destinations),
            "seed": int(phases.var("experiment_routing_seed", 1)),
            "sha256": hashlib.sha256(("\n".join(destinations) + "\n").encode()).hexdigest(),
            "first": destinations[:3],
        }
    if table != "none":
        installed = phases.module(
            "xdplab.testbed.fib_routes", dict(_routes_args(phases, v, table), destinations=destinations)
        )
        routing.update({k: installed.get(k) for k in ("routes", "added", "removed", "install_s", "read_s", "triestat")})
        routing["installed_now"] = bool(installed.get("changed"))
    fwd = v["fwd"]
    plan_mode = _systems.FORWARD_MODES.get(fwd.get("forward"), {})
    if plan_mode.get("devmap_key") == "ifindex":
        routing["fib_lookup"] = fwd.get("fib_lookup", "direct")
        routing["count_fib"] = bool(fwd.get("count_fib", True))
    phases.state["routing"] = routing


def _routing_section(phases, routing):
    """The record's measurement.details.routing: table, routes, install_s (0 when an earlier trial installed it:
    installed_now false), the trie (fib_triestat's main table), the lookups' outcomes over the trial's window."""
    out = {k: val for k, val in routing.items() if k not in ("fib_before", "triestat")}
    trie = ((routing.get("triestat") or {}).get("tables") or {}).get("main")
    if trie is not None:
        out["trie"] = trie
    if routing.get("count_fib"):
        after = _fib_counts(phases)
        before = routing.get("fib_before") or {}
        out["fib_counts"] = _fib_routes.counts_delta(after.get("counts"), before.get("counts"))
        if before.get("monotonic") is not None:
            out["fib_counts_s"] = round(float(after["monotonic"]) - float(before["monotonic"]), 3)
    return out


def _external_setup(phases, fwd, tool, ports):
    """Another project's forwarding plane (xdp-tools' xdp-forward): loaded on the DUT's two ports in the system's
    mode (fib-direct, as the paper's xdp_fwd -D); the preflight said already when the tool is missing (the system's
    ``requires``), this says it again for a run without the preflight."""
    mode = fwd.get("fwd_mode", "fib-direct")
    quoted = " ".join(shlex.quote(p) for p in ports)
    script = (
        f"command -v {tool} >/dev/null || {{ echo '{tool} is not installed (Debian 12 xdp-tools 1.3.1 has none)' >&2; "
        f"exit 3; }}; {tool} load -f {shlex.quote(mode)} {quoted}"
    )
    phases.shell(script, f"{tool} on {', '.join(ports)}")
    return {"name": tool, "command": f"{tool} load -f {mode} {' '.join(ports)}"}


def _router_commands(phases, v, up):
    """The router's shell commands (as tasks/systems/forward/vars.yml had them). Up: the destination (xdplab_dut_ip,
    what the generator sends to) stops being local and is routed out of the egress port to the generator's receive
    address (static neighbour); the generator's address stays reachable through the ingress port, so reverse-path
    filtering passes. Down: the stack as found."""
    dut_ip, dut_if, prefix = phases.var("xdplab_dut_ip"), phases.var("xdplab_dut_interface"), v["prefix"]
    gen_ip = v["gen"]["ip"]
    if up:
        return (
            f"sysctl -qw net.ipv4.ip_forward=1; ip addr del {dut_ip}/{prefix} dev {dut_if} 2>/dev/null || true; "
            f"ip route replace {gen_ip}/32 dev {dut_if}; "
            f"ip neigh replace {v['gen_rx_ip']} lladdr {v['gen_rx_mac']} dev {v['egress']} nud permanent; "
            f"ip route replace {dut_ip}/32 via {v['gen_rx_ip']} dev {v['egress']}"
        )
    return (
        f"sysctl -qw net.ipv4.ip_forward=0; ip route del {dut_ip}/32 2>/dev/null || true; "
        f"ip route del {gen_ip}/32 dev {dut_if} 2>/dev/null || true; ip addr replace {dut_ip}/{prefix} dev {dut_if}"
    )


def _far_counter_attached(phases, v):
    """Whether the far side has a counting drop program of its own: not with T-Rex (it counts its own RX), nor in the
    latency experiment (its sink, tasks/latency/setup.yml, takes that place and drops and is counted alike)."""
    return v["gen"]["backend"] != "trex" and not phases.flag("experiment_latency")


def _egress_program(phases, egress):
    """xdp_program's arguments for the pass program on the egress port of a redirecting system."""
    return {
        "interface": egress,
        "state": "present",
        "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/xdp_bench.bpf.o",
        "program": "xdp_bench_pass",
        "mode": phases.var("xdplab_xdp_mode", "native"),
        "variables": {"touch_mode": phases.var("__experiment_touch_modes")["no_touch"],
                      "count_mode": phases.var("__experiment_count_modes")["driver"]},
    }  # fmt: skip


def _xdp_of(plan):
    """forward_plan's XDP program: {object, program, variables, map_entries}."""
    return plan["xdp"]


class ForwardProvider:
    """Kind ``forward``: see the module's docstring."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        v = _values(phases)
        fwd, egress, dut_if = v["fwd"], v["egress"], phases.var("xdplab_dut_interface")
        # the forwarding input, before any change on the DUT
        if fwd["return_port"] != "ingress" and (not egress or egress == dut_if):
            raise failure(
                f"system {trial['name']} (forward {fwd.get('forward')}) sends out of a second port: "
                f"xdplab_dut_egress_interface must name a port of {phases.task_vars['inventory_hostname']} other than its "
                f"ingress port {dut_if} (got '{egress}'); set it in the inventory (host_vars)"
            )
        try:
            plan = _systems.forward_plan(
                fwd,
                egress,
                v["cpumap_cpu"],
                phases.var("__experiment_touch_modes"),
                phases.var("__experiment_count_modes"),
            )
        except _systems.SystemsError as exc:
            raise failure(str(exc)) from exc
        ring_size = trial["point"].get("ring_size")
        if ring_size is not None:
            # the ring_size axis: RX/TX descriptors on the DUT's ports
            for interface in [dut_if] + ([egress] if fwd["return_port"] == "egress" else []):
                phases.module(
                    "xdplab.testbed.nic_settings",
                    {"interface": interface, "rings": {"rx": int(ring_size), "tx": int(ring_size)}, "unsupported": "fail"},
                )
        trex_rx_ports(phases, v)
        if _stack_routes(fwd):
            phases.shell(_router_commands(phases, v, up=True), "the stack as a router (ip_forward, a route via the "
                         "generator's receive port, no local destination)")  # fmt: skip
            _routing_setup(phases, v)
        if plan["router"]:
            return {"name": "ip_forward", "route": f"{phases.var('xdplab_dut_ip')}/32 via {v['gen_rx_ip']}"}
        if plan.get("external"):
            return _external_setup(phases, fwd, plan["external"], [dut_if, egress])
        xdp = _xdp_of(plan)
        attached = phases.module(
            "xdplab.testbed.xdp_program",
            {
                "interface": dut_if,
                "state": "present",
                "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/{xdp['object']}.bpf.o",
                "program": xdp["program"],
                "mode": phases.var("xdplab_xdp_mode", "native"),
                "variables": xdp["variables"],
                "map_entries": xdp["map_entries"],
            },
        )
        if _systems.FORWARD_MODES[plan["mode"]].get("devmap") and egress:
            # a driver sends redirected frames (ndo_xdp_xmit) only out of a port with an XDP program of its own
            # (virtio_net: -ENXIO otherwise; older i40e/ixgbe allocate their XDP TX rings with it): a pass program
            # counted by the driver, as the kernel's samples/bpf/xdp_redirect_map attaches
            phases.module("xdplab.testbed.xdp_program", _egress_program(phases, egress))
        keys = list(phases.var("__experiment_xdp_program_keys", [])) + ["map_entries"]
        return {k: val for k, val in attached.items() if k in keys}

    @staticmethod
    def far_setup(phases):
        """Phase start, on the generator host, before the generator starts: the counting drop program on the port the
        frames come back to."""
        v = _values(phases)
        if _far_counter_attached(phases, v):
            phases.module(
                "xdplab.testbed.xdp_program",
                {
                    "interface": v["rx_port"],
                    "state": "present",
                    "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/xdp_bare_drop.bpf.o",
                    "program": "xdp_bare_drop",
                    "mode": "native",
                },
            )
            # a NIC drops frames to another MAC unless promiscuous (qemu's virtio-net does; XDP_REDIRECT's swapped MACs
            # address the generator's send port), so the far side counts what reaches its port, whatever the MAC
            phases.shell(f"ip link set {shlex.quote(v['rx_port'])} promisc on", "the far side's port promiscuous")

    @staticmethod
    def far_teardown(phases):
        """Phases stop and cleanup, on the generator host: no far-side counter left (safe to run twice and after a
        failed setup)."""
        v = _values(phases)
        if _far_counter_attached(phases, v):
            phases.module("xdplab.testbed.xdp_program", {"interface": v["rx_port"], "state": "absent", "mode": "native"})
            phases.shell(f"ip link set {shlex.quote(v['rx_port'])} promisc off", "the far side's port back")

    @staticmethod
    def measure(phases, scheduled=None):
        """The window's start, shared by the far side and the DUT; the DUT's port counters over it in the background
        (collected by ``collect``); the far side counts in the phase ``far``. ``scheduled(start_at)``: what a
        forwarding process does once the window is known, before the counters start (testpmd's window end)."""
        trial = phases.trial
        v = _values(phases)
        lead = float(phases.var("experiment_window_lead"))
        warmup, interval = float(phases.var("experiment_warmup")), float(phases.var("experiment_interval"))
        samples = int(phases.var("experiment_samples"))
        start_at = time.time() + lead
        if scheduled:
            scheduled(start_at)
        routing = phases.state.get("routing")
        if routing is not None and routing.get("count_fib"):
            # bpf/xdp_router's counts per fib return code, read again by collect: what moved over the trial's window
            routing["fib_before"] = _fib_counts(phases)
        phases.start_job(
            DUT_JOB,
            "xdplab.testbed.rx_counters",
            {
                "devices": [phases.var("xdplab_dut_interface")],
                "extra_devices": [v["egress"]] if v["egress"] else [],
                "at": "dut",
                "count": "if_rx_packets",
                # the stack's own counters (nstat, softnet_stat of the DUT's CPUs): where a Linux router's packets went
                "stack": _router(v["fwd"]),
                "stack_cpus": trial["cpus"],
                "start_at": start_at,
                "warmup": phases.var("experiment_warmup"),
                "interval": phases.var("experiment_interval"),
                "samples": phases.var("experiment_samples"),
                # CPU snapshots at the window's edges, for the CPU usage of the record phase
                "cpu_window_cpus": trial["cpus"] if trial["forward_dut_cpu_window"] and trial["cpu_windowed"] else [],
            },
            limit_s=math.ceil(lead + warmup + interval * samples + 120),
        )
        phases.state["far"] = {"window": {"start_at": start_at}}
        return {}

    @staticmethod
    def far_count(phases):
        """Phase far, on the generator host: what comes back at its receive port over the window ``measure``
        scheduled (T-Rex: its per-port RX counter between two of the runner's interval records, read from the runner's
        output; the ports named as in the inventory)."""
        v = _values(phases)
        gen, rx_port = v["gen"], v["rx_port"]
        trex = gen["backend"] == "trex"
        return phases.module(
            "xdplab.testbed.rx_counters",
            {
                "devices": [rx_port],
                "extra_devices": [gen["interface"]] if gen["interface"] != rx_port else [],
                "source": "trex" if trex else "driver_counters",
                "trex_output": f"{phases.run_dir()}/{phases.trial['id']}.out" if trex else None,
                "trex_ports": (gen.get("options") or {}).get("ports") or [] if trex else None,
                "start_at": phases.state["far"]["window"]["start_at"],
                "warmup": phases.var("experiment_warmup"),
                "interval": phases.var("experiment_interval"),
                "samples": phases.var("experiment_samples"),
            },
        )

    @staticmethod
    def collect(phases):
        """Phase cpu, on the DUT: the DUT's count over the far side's window (its job has ended on every exit path),
        and the measurement: the far side's, with the forwarding section in its details."""
        from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PhaseFailure

        far = (phases.state.get("far") or {}).pop("counted", None)
        try:
            dut = phases.collect_job(DUT_JOB, DUT_JOB_WAIT_S)
        except PhaseFailure as exc:
            msg = exc.result.get("msg", "no message")
            raise failure(
                f"the DUT's port counters (rx_counters on {phases.task_vars['inventory_hostname']}, in the background) "
                f"failed: {msg}"
            ) from exc
        if not isinstance(far, dict):
            raise failure("the far side's count (the phase far, on the generator host) is not in the trial's state: "
                          "trial.yml runs it after the measure when the state has far.window")  # fmt: skip
        if not isinstance(dut.get("measurement"), dict):
            raise failure(f"the DUT's port counters (rx_counters on {phases.task_vars['inventory_hostname']}, in the "
                          "background) returned no measurement")  # fmt: skip
        v = _values(phases)
        try:
            section = forwarding_section(
                far, dut, phases.var("xdplab_dut_interface"), v["gen"]["interface"], v["fwd"]["return_port"]
            )
        except AnsibleFilterError as exc:
            raise failure(str(exc)) from exc
        measurement = dict(far["measurement"])
        measurement["details"] = dict(measurement["details"], forwarding=section)
        routing = phases.state.get("routing")
        if routing is not None:
            # the routing experiment (issue 27): the table, its install, the trie, the lookups' outcomes
            measurement["details"]["routing"] = _routing_section(phases, routing)
        # the DUT's CPU snapshots at its window's edges
        return {"cpu_window": dut.get("cpu_window"), "measurement": measurement}

    @staticmethod
    def teardown(phases):
        """Safe to run twice and after a failed setup: the program off the DUT port, the router undone."""
        v = _values(phases)
        phases.module(
            "xdplab.testbed.xdp_program",
            {"interface": phases.var("xdplab_dut_interface"), "state": "absent", "mode": phases.var("xdplab_xdp_mode", "native")},
        )
        if _systems.FORWARD_MODES.get(v["fwd"].get("forward"), {}).get("devmap") and v["egress"]:
            phases.module(
                "xdplab.testbed.xdp_program",
                {"interface": v["egress"], "state": "absent", "mode": phases.var("xdplab_xdp_mode", "native")},
            )
        external = _systems.FORWARD_MODES.get(v["fwd"].get("forward"), {}).get("external")
        if external:
            ports = " ".join(shlex.quote(p) for p in (phases.var("xdplab_dut_interface"), v["egress"]) if p)
            phases.shell(f"! command -v {external} >/dev/null || {external} unload {ports} || true",
                         f"{external} unloaded")  # fmt: skip
        if _stack_routes(v["fwd"]):
            phases.shell(_router_commands(phases, v, up=False), "the stack back as found (no ip_forward, no route, the "
                         "ingress address back)")  # fmt: skip
        table = _table(phases)
        if table != "none" and not _routes_stay(phases, table):
            # the route table of the module fib_routes (exactly its own routes: their proto), unless the DUT's next
            # trial uses the same table
            phases.module("xdplab.testbed.fib_routes", {"state": "absent"})


# -- a forwarding process (the forwarding entries of the kinds dpdk and af_xdp: testpmd, xdplab-xsk-bench) -------------
# Its module runs for the window in the background (the trial's job PROCESS_JOB, started by the measure: in the
# latency experiment testpmd's by the setup, before the generator) while the far side and the DUT's ports count as
# the forward kind's do (ForwardProvider.measure, the phase far); the phase collect collects the counters, then the
# process's own result: the record's measurement is the far side's, the process's own rate beside it
# (details.dut_process), the rest of the measure's result the process's (its version, command, CPU window).

# the trial's job of the forwarding process
PROCESS_JOB = "forward_dut_process"
# how long it may take to start forwarding (its start record), and then to say why it did not
START_TIMEOUT_S = 60
START_FAILED_WAIT_S = 30
# the latency experiment: testpmd, started in setup before the generator (the histogram covers the generator's whole
# run), may run for the generator's run and this lead (the sink's setup and the generator's start after testpmd's:
# 7-8 s under load here, when 86 frames at the end of a 100 pps run were lost with a 6 s margin) ...
LATENCY_LEAD_S = 30
# ... but its window ends this long after the generator's end (latency) or the far side's window (window_end_file)
END_MARGIN_S = 2
# testpmd's window_end_file (module testpmd): a time on CLOCK_REALTIME, its window ends at its first sample past it
WINDOW_END_FILE = "/run/xdplab/testpmd/trial.window_end"


def margin_samples(phases):
    """How many samples longer than the far side's window the process runs (its start, the window's lead)."""
    return math.ceil((6 + float(phases.var("experiment_window_lead"))) / float(phases.var("experiment_interval")))


def process_samples(phases):
    """The process's window in samples: the far side's and the margin; in the latency experiment at most the
    generator's whole run, the lead and the margin."""
    interval = float(phases.var("experiment_interval"))
    if phases.flag("experiment_latency"):
        base = math.ceil((float(phases.trial["seconds"]) + LATENCY_LEAD_S) / interval)
    else:
        base = int(phases.var("experiment_samples"))
    return base + margin_samples(phases)


def process_limit_s(phases):
    """How long the process's background job may run in all."""
    warmup, interval = float(phases.var("experiment_warmup")), float(phases.var("experiment_interval"))
    return math.ceil(warmup + interval * process_samples(phases) + START_TIMEOUT_S + 120)


def process_started(phases):
    """Whether this trial's forwarding process runs already (the latency experiment's testpmd, from the setup)."""
    return PROCESS_JOB in (phases.state.get("jobs") or {})


def start_process(phases, spec, args):
    """Start the forwarding process (``spec``: name, module, started_path, started_regex: what it writes once it
    forwards) in the background with the module's ``args``, and wait until it forwards; fails with its own message
    when it does not (its job is ended by the teardown)."""
    # no transcript of an earlier run: the wait would find that one's start record
    _remove_file(phases, spec["started_path"])
    phases.start_job(PROCESS_JOB, spec["module"], args, limit_s=process_limit_s(phases))
    if _wait_started(phases, spec):
        return
    deadline = time.monotonic() + START_FAILED_WAIT_S
    said = phases.job_result(PROCESS_JOB)
    while said is None and time.monotonic() < deadline:
        time.sleep(0.5)
        said = phases.job_result(PROCESS_JOB)
    msg = (said or {}).get("msg") or f"it still ran; see {spec['started_path']}"
    raise failure(
        f"{spec['name']} did not start forwarding within {START_TIMEOUT_S} s (no '{spec['started_regex']}' in "
        f"{spec['started_path']}): {msg}"
    )


def measure_process(phases, spec, args, window_end=False):
    """The measure of a forwarding process: started (unless the setup started it), then counted as the forward kind
    counts; ``window_end``: the process ends its window END_MARGIN_S after the far side's (testpmd's
    window_end_file; not in the latency experiment, where it ends with the generator: write_window_end)."""
    if not process_started(phases):
        start_process(phases, spec, args)
    if not window_end or phases.flag("experiment_latency"):
        return ForwardProvider.measure(phases)
    warmup, interval = float(phases.var("experiment_warmup")), float(phases.var("experiment_interval"))
    samples = int(phases.var("experiment_samples"))

    def end_after_the_far_side(start_at):
        write_window_end(phases, start_at + warmup + interval * samples)

    return ForwardProvider.measure(phases, end_after_the_far_side)


def write_window_end(phases, end):
    """testpmd's window ends at its first sample END_MARGIN_S past ``end`` (its window_end_file): on this machine
    written here, over SSH by the connection's own command (a module run took 2.4-2.8 s while the generator and
    testpmd kept both CPUs of the virtual lab busy, raw 0.11 s)."""
    text = f"{end + END_MARGIN_S:.3f}\n"
    if phases.on_this_machine():
        tmp = f"{WINDOW_END_FILE}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, WINDOW_END_FILE)
        phases.changed = True
    else:
        phases.shell(f"printf '%s\\n' {shlex.quote(text.strip())} > {shlex.quote(WINDOW_END_FILE)}",
                     "testpmd's window end (window_end_file)")  # fmt: skip


def collect_process(phases, name):
    """Phase cpu: the counters (ForwardProvider.collect), then the process's own result, its window ending after the
    far side's; the measurement is the far side's with the process's own rate beside it (details.dut_process)."""
    counted = ForwardProvider.collect(phases)
    job = (phases.state.get("jobs") or {}).get(PROCESS_JOB) or {}
    own = phases.collect_job(PROCESS_JOB, job.get("limit_s") or process_limit_s(phases))
    own_measurement = own.get("measurement") or {}
    measurement = dict(counted["measurement"])
    measurement["details"] = dict(
        measurement["details"],
        dut_process={
            "name": name,
            "pps": own_measurement.get("pps"),
            "source": own_measurement.get("source"),
            "window": own_measurement.get("window"),
        },
    )
    return dict(own, measurement=measurement)


class ForwardingProcess:
    """What a kind whose forwarding entries are a process (dpdk: testpmd, af_xdp: xdplab-xsk-bench) shares with the
    forward kind: the far side of a forwarding entry on the generator host, and the collect of the process's own
    result. A subclass names its process's spec (``PROCESS``: TESTPMD, XSK_BENCH)."""

    PROCESS = None

    @staticmethod
    def far_setup(phases):
        """Phase start (generator host): a forwarding entry's far side."""
        if forward_entry(phases):
            ForwardProvider.far_setup(phases)

    @staticmethod
    def far_teardown(phases):
        """Phases stop and cleanup (generator host): no far-side counter of a forwarding entry left."""
        if forward_entry(phases):
            ForwardProvider.far_teardown(phases)

    @staticmethod
    def far_count(phases):
        return ForwardProvider.far_count(phases)

    @classmethod
    def collect(cls, phases):
        """Phase collect: a forwarding entry's counters and the process's own result."""
        return collect_process(phases, cls.PROCESS["name"])


def forward_entry(phases):
    """The planned trial's system entry when it forwards (a ``forward`` key), else None (known also when the trial
    failed before its values)."""
    entry = phases.var("__experiment_systems", {}).get(phases.var("__experiment_planned")["point"]["system"]) or {}
    return entry if "forward" in entry else None


def _wait_started(phases, spec):
    """Whether the process wrote its start record within START_TIMEOUT_S (on this machine: read here, and not
    waited for once the job has ended; over SSH: wait_for)."""
    path, regex = spec["started_path"], spec["started_regex"]
    if not phases.on_this_machine():
        from ansible_collections.xdplab.testbed.plugins.plugin_utils._trial import PhaseFailure

        try:
            phases.module("ansible.builtin.wait_for", {"path": path, "search_regex": regex, "timeout": START_TIMEOUT_S})
        except PhaseFailure:
            return False
        return True
    pattern = re.compile(regex)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                if pattern.search(fh.read()):
                    return True
        except FileNotFoundError:
            pass
        if phases.job_result(PROCESS_JOB) is not None:
            return False
        time.sleep(0.1)
    return False


def _remove_file(phases, path):
    if phases.on_this_machine():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        phases.module("ansible.builtin.file", {"path": path, "state": "absent"})
