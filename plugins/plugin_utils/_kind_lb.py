# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kind ``lb`` (issue 27, item 3; playbooks/paper_lb.yml) as a provider of the trial phases (plugin_utils/_trial.py): a
load balancer on the DUT, one VIP per core (VIP i: the DUT's address and the port of the generator's flow i), each
with ``lb_reals_per_vip`` reals; the encapsulated packets come back to the generator, which counts them and checks
their outer destination. The system entry's ``lb`` says which:

    bpf     bpf/xdp_lb (Katran's per-packet work: VIP hash, per-CPU LRU, a 65,537-slot Maglev ring per VIP, IPIP by
           bpf_xdp_adjust_head, XDP_TX): back out of the ingress port (return_port ingress), like xdp_tx
    ipvsadm the kernel's IPVS (module ipvs_service: ipvsadm -s sh -b sh-port, tunnel mode -i, rp_filter 0): the stack
           routes each IPIP packet to its real, and the reals' net is routed via the generator's receive address out
           of the egress port (return_port egress), like linux_forward

Everything else is the forward kind's (plugin_utils/_kind_forward.py): the DUT's port counters over the far side's
window in the background, the far side's count in the phase ``far``, the forwarding section. The far side's program is
bpf/xdp_lb_check instead of xdp_bare_drop: it drops every frame (the driver counts the drops, as for xdp_bare_drop)
and counts, per frame, whether it is IPIP with a right outer checksum, the balancer's outer source and an outer
destination that is a real of the VIP the inner packet was sent to (module xdp_lb_config fills its maps with the same
plan). The record's ``lb`` section (carried in measurement.details.lb, lifted by module_utils/_record.py): the plan
(VIPs, reals, ring size, fill, hash), the balancer's own counters over the trial (xdp: LRU hits and misses, per-VIP
packets; ipvs: ipvsadm --stats' InPkts per service), and the far side's check (its verdicts and ``all_reals``: every
IPIP frame's outer destination a real of its VIP).
"""

from __future__ import annotations

import shlex

from ansible_collections.xdplab.testbed.plugins.module_utils import _lb
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_common import failure

ForwardProvider = _kind_forward.ForwardProvider


def settings(phases, cores=None):
    """The trial's load-balancer plan's inputs (the experiment's lb_* variables)."""
    return {
        "vip_ip": phases.var("xdplab_dut_ip"),
        "port_base": int(phases.var("xdplab_port_base", 12)),
        "vips": int(cores if cores is not None else phases.trial["cores"]),
        "reals_per_vip": int(phases.var("lb_reals_per_vip", 100)),
        "reals_net": str(phases.var("lb_reals_net", "10.200.0.0/16")),
    }


def sources_spec(phases, s):
    """traffic_generator's ``sources`` for the trial (lb_sources addresses drawn seeded from lb_sources_within), or
    None for the generator's one source address (lb_sources 0)."""
    count = int(phases.var("lb_sources", 0) or 0)
    if not count:
        return None
    within = phases.var("lb_sources_within", ["172.16.0.0/12"])
    return {
        "count": count,
        "seed": int(phases.var("lb_sources_seed", 27)),
        "within": [within] if isinstance(within, str) else list(within),
    }


def _entry(phases):
    entry = _kind_forward.forward_entry(phases) or {}
    return dict({"return_port": "ingress", "lb": _lb.MODE_BPF}, **entry)


def _route_commands(phases, v, s, up):
    """IPVS: the reals' net routed out of the egress port via the generator's receive address (a permanent neighbour),
    so the far side receives what IPVS sends to the reals; the route's source is the VIP's address, which IPVS's tunnel
    takes as the outer source (the far side's check expects the balancer's address, as xdp_lb writes it); undone at
    teardown."""
    egress, via, mac = v["egress"], v["gen_rx_ip"], v["gen_rx_mac"]
    if up:
        return (f"ip neigh replace {via} lladdr {mac} dev {egress} nud permanent; "
                f"ip route replace {s['reals_net']} via {via} dev {egress} src {s['vip_ip']}")  # fmt: skip
    return f"ip route del {s['reals_net']} 2>/dev/null || true"


def input_errors(phases, entry, s):
    """This trial's bad input, before any change (the same checks as the playbook's first play)."""
    trial = phases.trial
    lb_in = {"systems": [trial["name"]], "reals_per_vip": s["reals_per_vip"], "reals_net": s["reals_net"]}
    return _lb.lb_errors(lb_in, {trial["name"]: entry}, [trial["packet_len"]], [trial["cores"]],
                         mtu=int(phases.var("xdplab_dut_mtu", 1500)), host=phases.task_vars["inventory_hostname"])  # fmt: skip


class LbProvider:
    """Kind ``lb``: see the module's docstring."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        entry = _entry(phases)
        s = settings(phases)
        errors = input_errors(phases, entry, s)
        if errors:
            raise failure("; ".join(errors))
        v = _kind_forward._values(phases)
        dut_if = phases.var("xdplab_dut_interface")
        sources = sources_spec(phases, s)
        if sources:
            # the clients: the generator's frames walk lb_sources source addresses (traffic_generator's sources)
            traffic = phases.state.setdefault("traffic", {})
            traffic.update(sources=sources, exclude=[s["reals_net"]])
        if entry["lb"] == _lb.MODE_IPVS:
            if not v["egress"] or v["egress"] == dut_if:
                raise failure(f"system {trial['name']} (IPVS, tunnel mode) sends to the reals out of a second port: "
                              "xdplab_dut_egress_interface must name a port other than the ingress port "
                              f"{dut_if} (got '{v['egress']}')")  # fmt: skip
            done = phases.module("xdplab.testbed.ipvs_service", dict(s, state="present", interfaces=[dut_if, v["egress"]]))
            phases.shell(_route_commands(phases, v, s, up=True), "the reals' net via the generator's receive address")
            return {"name": "ip_vs", "scheduler": "sh (sh-port)", "forward": "tunnel (IPIP)", "lb_plan": _plan_summary(s),
                    "ipvsadm": done["support"].get("ipvsadm"), "commands": len(done.get("commands") or [])}  # fmt: skip
        attached = phases.module(
            "xdplab.testbed.xdp_program",
            {
                "interface": dut_if,
                "state": "present",
                "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/{_lb.BALANCER['object']}",
                "program": _lb.BALANCER["program"],
                "mode": phases.var("xdplab_xdp_mode", "native"),
            },
        )
        filled = phases.module("xdplab.testbed.xdp_lb_config", dict(s, interface=dut_if))
        keys = list(phases.var("__experiment_xdp_program_keys", []))
        return dict({k: val for k, val in attached.items() if k in keys}, lb_plan=filled["plan"])

    @staticmethod
    def far_setup(phases):
        """Phase start, on the generator host: bpf/xdp_lb_check where the encapsulated frames come back, its maps
        filled with the trial's plan, the port promiscuous (as the forward kind's far side)."""
        v = _kind_forward._values(phases)
        if v["gen"]["backend"] == "trex":
            raise failure("the load-balancer experiment checks the outer destination with an XDP program on the "
                          "generator's receive port: not with T-Rex (which owns its ports)")  # fmt: skip
        phases.module(
            "xdplab.testbed.xdp_program",
            {
                "interface": v["rx_port"],
                "state": "present",
                "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/{_lb.CHECK['object']}",
                "program": _lb.CHECK["program"],
                "mode": "native",
            },
        )
        phases.module("xdplab.testbed.xdp_lb_config", dict(settings(phases), interface=v["rx_port"], role="check"))
        phases.shell(f"ip link set {shlex.quote(v['rx_port'])} promisc on", "the far side's port promiscuous")

    @staticmethod
    def far_teardown(phases):
        ForwardProvider.far_teardown(phases)

    @staticmethod
    def measure(phases):
        return ForwardProvider.measure(phases)

    @staticmethod
    def far_count(phases):
        """Phase far: the forward kind's count, then the check program's verdicts (over the trial: its maps are new
        with each trial's far side)."""
        counted = ForwardProvider.far_count(phases)
        v = _kind_forward._values(phases)
        check = phases.module("xdplab.testbed.xdp_lb_config", {"interface": v["rx_port"], "role": "check", "state": "read"})
        return dict(counted, lb_check=check["counters"])

    @staticmethod
    def collect(phases):
        far = (phases.state.get("far") or {}).get("counted") or {}
        check = far.get("lb_check") or {}
        collected = ForwardProvider.collect(phases)
        entry = _entry(phases)
        s = settings(phases)
        if entry["lb"] == _lb.MODE_IPVS:
            stats = phases.module("xdplab.testbed.ipvs_service", dict(s, state="stats"))["stats"]
            per_vip = [{"service": x["addr"], "in_packets": (x.get("values") or {}).get("InPkts")} for x in stats["services"]]
            own = {"ip_vs": {"totals": stats["totals"], "per_vip": per_vip}}
        else:
            counters = phases.module("xdplab.testbed.xdp_lb_config", {"interface": phases.var("xdplab_dut_interface"),
                                                                      "state": "read"})["counters"]  # fmt: skip
            own = {"counters": {k: counters[k] for k in _lb.STATS}, "per_vip": counters.get("per_vip", [])}
            own["lru_hits"], own["lru_misses"] = counters["lru_hit"], counters["lru_miss"]
        ipip = sum(check.get(k, 0) for k in _lb.CHECK_STATS if k != "not_ipip")
        section = dict(
            own,
            system=entry["lb"],
            plan=dict(_plan_summary(s), sources=sources_spec(phases, s)),
            counted_over="the trial (setup to the far side's window end), not only the window",
            outer_dst_check=dict(
                check,
                method="bpf/xdp_lb_check on the generator's receive port: every frame, not a sample",
                ipip=ipip,
                all_reals=bool(ipip) and check.get("real_ok", 0) == ipip,
            ),
        )
        measurement = dict(collected["measurement"])
        measurement["details"] = dict(measurement["details"], lb=section)
        return dict(collected, measurement=measurement)

    @staticmethod
    def teardown(phases):
        """Safe to run twice and after a failed setup: the program off the DUT port; IPVS's services and route gone,
        rp_filter as found."""
        entry = _entry(phases)
        dut_if = phases.var("xdplab_dut_interface")
        if entry["lb"] == _lb.MODE_IPVS:
            v = _kind_forward._values(phases)
            cores = (phases.state.get("trial") or {}).get("cores") or phases.var("__experiment_planned")["point"].get("cores", 1)
            s = settings(phases, cores)
            phases.module("xdplab.testbed.ipvs_service", dict(s, state="absent", interfaces=[dut_if, v["egress"]]))
            if v["egress"]:
                phases.shell(_route_commands(phases, v, s, up=False), "the reals' route gone")
            return
        phases.module("xdplab.testbed.xdp_program", {"interface": dut_if, "state": "absent",
                                                     "mode": phases.var("xdplab_xdp_mode", "native")})  # fmt: skip


def _plan_summary(s):
    vips, per = s["vips"], s["reals_per_vip"]
    return {"vips": vips, "reals_per_vip": per, "reals": vips * per, "reals_net": s["reals_net"], "ring_size": _lb.RING_SIZE,
            "ring_fill": "maglev", "vip_ports": [s["port_base"] + i for i in range(vips)]}  # fmt: skip
