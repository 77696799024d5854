# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kind ``ddos`` (issue 27, playbooks/paper_ddos.yml): inline DoS mitigation under TCP_RR, the XDP paper's section 5.

The phases keep their structure; what this kind does in each:

    setup    (DUT)        the TCP_RR server (module tcp_rr, pinned to the application CPU: xdplab_dut_cpumap_cpu,
                          default the first housekeeping CPU no generator on this machine uses, else the DUT's last
                          CPU: _ddos.app_cpu) and the system's filter on the DUT port: none (the stack
                          drops the flood as UdpNoPorts), bpf/xdp_ddos_filter.bpf.c (drops the attack port, cpumaps the
                          rest to the application CPU) or xdp-tools' ``xdp-filter`` (``load -p allow``, then ``port
                          -m dst -p udp`` of the attack port: it drops on the receiving CPU and passes the rest there;
                          xdp-tools 1.3.1's ``xdp-bench redirect-cpu -p l4-filter`` does not load on this kernel, see
                          docs/BENCHMARKS.md). The state's ``traffic`` makes the generator's normal
                          run the flood: UDP to the attack port (port_base), at the point's rate (a baseline point, rate
                          0, offers experiment_ddos_baseline_pps instead of the generator's full speed); the control row
                          sends it to a sink on the generator host instead of the DUT.
    start    (generator)  far_setup: the control row's sink (a veth pair of the generator's namespace whose far end
                          drops in XDP), then the TCP_RR client as a background job of the phases (module tcp_rr,
                          state measured: warm-up, then experiment_samples samples of experiment_interval seconds);
                          then the generator starts the flood.
    measure  (DUT)        module ddos_stats over the same window: where the flood was dropped (the program's map, the
                          driver's XDP drop counter, UdpNoPorts/UdpInErrors/RcvbufErrors) and every CPU's busy share.
    stop     (generator)  side_collect: the client's result (its job), then the flood stops; the record gets the
                          ``ddos`` section (record_extra).
    teardown (DUT)        the server and the filter go.
"""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils import _ddos, _systems
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_common import failure

# the control row's sink on the generator host: the flood leaves SINK, its peer SINK_PEER drops it in XDP
SINK = "xdpddos-snk0"
SINK_PEER = "xdpddos-snk1"
SINK_MAC = "02:dd:05:00:00:01"
FILTERS = ("none", "program", "xdp_filter")
# the project's filter (bpf/xdp_ddos_filter.bpf.c): its object under <prefix>/lib/bpf and its program
FILTER_PROGRAM = "xdp_ddos_filter"


def _app_cpu(phases):
    """(cpu, chosen_because) of the application (_ddos.app_cpu): the generator's CPUs count where the DUT and its
    generator host are one machine (both in the inventory group vlab): its senders (this DUT's, xdplab_dut_generator
    over the host's xdplab_generator_cpus), its receive NAPI threads (xdplab_generator_rx_cpus) and the TCP_RR client."""
    gen = phases.var("__experiment_gen", {})
    vlab = (phases.var("groups", {}) or {}).get("vlab") or []
    same_machine = phases.var("inventory_hostname") in vlab and gen.get("host") in vlab
    senders = list(gen.get("cpus") or [])
    used = senders + list(phases.host_var(gen.get("host"), "xdplab_generator_rx_cpus", senders) or [])
    used += list(phases.host_var(gen.get("host"), "xdplab_tcp_rr_client_cpus", senders) or [])
    try:
        return _ddos.app_cpu(phases.var("xdplab_dut_cpumap_cpu"), phases.var("xdplab_housekeeping_cpus", []),
                             phases.var("xdplab_dut_cpus", []), used, same_machine)  # fmt: skip
    except _ddos.DdosError as exc:
        raise failure(str(exc)) from exc


def _settings(phases):
    system = phases.var("__experiment_systems", {})[phases.var("__experiment_planned")["point"]["system"]]
    app_cpu, because = _app_cpu(phases)
    return {
        "system": system,
        "filter": system.get("filter", "none"),
        "app_cpu": app_cpu,
        "app_cpu_because": because,
        "port": int(phases.var("experiment_ddos_tcp_rr_port", 12865)),
        "attack_port": int(phases.var("experiment_ddos_attack_port", 9)),
        "binary": f"{phases.var('xdplab_bpf_prefix')}/bin/xdplab-tcp-rr",
        "run_dir": f"{phases.var('xdplab_generator_run_dir')}/tcp_rr",
    }


def _tx_csum_state(phases, interface):
    """Where far_setup keeps the generator port's TX checksum setting (on/off) for far_teardown."""
    return f"{phases.var('xdplab_generator_run_dir')}/ddos-tx-csum.{interface}"


class DdosProvider:
    """Kind ``ddos``: see the module's docstring."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        v = _settings(phases)
        if v["filter"] not in FILTERS:
            raise failure(f"system {trial['name']}: filter {v['filter']!r} is not one of {', '.join(FILTERS)}")
        interface = phases.var("xdplab_dut_interface")
        server = phases.module(
            "xdplab.testbed.tcp_rr",
            {"state": "present", "addr": phases.var("xdplab_dut_ip"), "port": v["port"], "cpu": v["app_cpu"],
             "binary": v["binary"], "run_dir": v["run_dir"]},
        )  # fmt: skip
        program = {
            "system": trial["kind"],
            "filter": v["filter"],
            "drop_at": v["system"].get("drop_at"),
            "app_cpu": v["app_cpu"],
            "attack_port": v["attack_port"],
            "tcp_rr_server": {"command": server.get("command")},
        }
        if v["filter"] == "program":
            attached = phases.module(
                "xdplab.testbed.xdp_program",
                {
                    "interface": interface,
                    "state": "present",
                    "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/{FILTER_PROGRAM}.bpf.o",
                    "program": FILTER_PROGRAM,
                    "mode": phases.var("xdplab_xdp_mode", "native"),
                    "variables": {"attack_port_min": v["attack_port"], "attack_port_max": v["attack_port"],
                                  "app_cpu": v["app_cpu"], "count_mode": 1},
                    "map_entries": {"cpu_map": _systems.cpumap_entries(v["app_cpu"], v["system"].get("cpumap_qsize", 2048))},
                },
            )  # fmt: skip
            program.update({k: attached[k] for k in phases.var("__experiment_xdp_program_keys", []) if k in attached})
        else:
            phases.module("xdplab.testbed.xdp_program", {"interface": interface, "state": "absent"})
        if v["filter"] == "xdp_filter":
            # xdp-tools' xdp-filter: its maps are pinned in a bpffs, which `ip netns exec` does not have (it mounts a
            # /sys of its own): one is mounted for the script; the attached program keeps its maps after it
            mode = phases.var("xdplab_xdp_mode", "native")
            done = phases.shell(
                "command -v xdp-filter >/dev/null || { echo 'xdp-filter is not installed: apt-get install xdp-tools' >&2;"
                " exit 1; }; mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf; "
                f"xdp-filter load -m {mode} -p allow {interface}; xdp-filter port -m dst -p udp {v['attack_port']}; "
                "dpkg-query -W -f '${Version}' xdp-tools 2>/dev/null || true",
                "xdp-tools' xdp-filter on the DUT port",
            )
            program["peer"] = {
                "tool": "xdp-filter",
                "commands": [
                    f"xdp-filter load -m {mode} -p allow {interface}",
                    f"xdp-filter port -m dst -p udp {v['attack_port']}",
                ],
                "xdp_tools_version": (done.get("stdout") or "").strip().splitlines()[-1:] or None,
            }
        traffic = {
            "port_base": v["attack_port"],
            "rate_pps": trial["rate_pps"] or int(phases.var("experiment_ddos_baseline_pps", 1)),
        }
        if v["system"].get("sink"):
            traffic.update(interface=SINK, dst_mac=SINK_MAC)
        phases.state["traffic"] = traffic
        return program

    @staticmethod
    def far_setup(phases):
        """On the generator host, before the flood: the control row's sink, then the TCP_RR client (a job)."""
        v = _settings(phases)
        if v["system"].get("sink"):
            phases.shell(
                f"ip link del {SINK} 2>/dev/null || true; ip link add {SINK} type veth peer name {SINK_PEER}; "
                f"ip link set {SINK_PEER} address {SINK_MAC}; ip link set {SINK} up; ip link set {SINK_PEER} up",
                "the control row's sink pair",
            )
            phases.module(
                "xdplab.testbed.xdp_program",
                {"interface": SINK_PEER, "state": "present", "mode": "native", "program": "xdp_bare_drop",
                 "object": f"{phases.var('xdplab_bpf_prefix')}/lib/bpf/xdp_bare_drop.bpf.o"},
            )  # fmt: skip
        gen = phases.var("__experiment_gen")
        # the client's TCP checksums in software for the trial: veth leaves them to the receiver (CHECKSUM_PARTIAL),
        # and a frame that XDP redirects (the filter's cpumap) reaches the stack as a new skb without that mark, so
        # its TCP checksum is wrong (TcpInCsumErrors) and no connection opens. Every row sends the same way; the
        # setting the port had is put back by far_teardown
        state = _tx_csum_state(phases, gen["interface"])
        phases.shell(
            f"mkdir -p $(dirname {state}); [ -e {state} ] || ethtool -k {gen['interface']} | "
            f"awk '/^tx-checksumming:/ {{print $2}}' > {state}; ethtool -K {gen['interface']} tx off",
            "software TCP checksums on the generator's port",
        )
        cpus = phases.host_var(gen["host"], "xdplab_tcp_rr_client_cpus", gen.get("cpus")) or []
        warmup = float(phases.var("experiment_warmup"))
        duration = float(phases.var("experiment_interval")) * int(phases.var("experiment_samples"))
        phases.start_job(
            "tcp_rr",
            "xdplab.testbed.tcp_rr",
            {"state": "measured", "addr": phases.var("xdplab_dut_ip"), "port": v["port"],
             "cpu": int(cpus[0]) if cpus else None, "warmup": warmup, "duration": duration,
             "interval": float(phases.var("experiment_interval")), "binary": v["binary"]},
            limit_s=warmup + duration + 60,
        )  # fmt: skip

    @staticmethod
    def side_collect(phases):
        """On the generator host, before the flood stops: the client's result."""
        warmup = float(phases.var("experiment_warmup"))
        duration = float(phases.var("experiment_interval")) * int(phases.var("experiment_samples"))
        return {"tcp_rr": phases.collect_job("tcp_rr", warmup + duration + 30).get("tcp_rr")}

    @staticmethod
    def record_extra(phases, summary):
        """The record's ``ddos`` section."""
        v = _settings(phases)
        measured = phases.measured()
        side = phases.state.get("side") or {}
        attack = {
            "port": v["attack_port"],
            "offered_pps": phases.trial["rate_pps"],
            "achieved_pps": summary.get("offered_pps"),
            "to": "sink" if v["system"].get("sink") else "dut",
        }
        dut = dict(measured.get("dut") or {})
        gen = phases.var("__experiment_gen")
        roles = {
            "dut": phases.trial["cpus"],
            "app": [v["app_cpu"]],
            "generator": gen.get("cpus") or [],
            "client": phases.host_var(gen["host"], "xdplab_tcp_rr_client_cpus", gen.get("cpus")) or [],
        }
        # one machine (the virtual lab): every party's CPU is in the DUT's /proc/stat
        dut["cpus"] = _ddos.cpu_parties(dut.get("cpus") or [], roles)
        app = {"cpu": v["app_cpu"], "chosen_because": v["app_cpu_because"]}
        return {"ddos": _ddos.section(side.get("tcp_rr") or {}, dut, attack, v["system"], app)}

    @staticmethod
    def measure(phases):
        v = _settings(phases)
        return phases.module(
            "xdplab.testbed.ddos_stats",
            {"interface": phases.var("xdplab_dut_interface"), "drop_at": v["system"].get("drop_at", "stack"),
             **phases.sampling()},
        )  # fmt: skip

    @staticmethod
    def far_teardown(phases):
        """The control row's sink goes, and the generator port's TX checksum setting is put back (safe twice)."""
        gen = phases.var("__experiment_gen")
        state = _tx_csum_state(phases, gen["interface"])
        phases.shell(
            f"ip link del {SINK} 2>/dev/null || true; if [ -s {state} ]; then ethtool -K {gen['interface']} tx "
            f"$(cat {state}); fi; rm -f {state}",
            "removing the control row's sink pair, the generator port's TX checksum setting put back",
        )

    @staticmethod
    def teardown(phases):
        v = _settings(phases)
        interface = phases.var("xdplab_dut_interface")
        phases.module("xdplab.testbed.tcp_rr", {"state": "absent", "run_dir": v["run_dir"]})
        phases.module("xdplab.testbed.xdp_program", {"interface": interface, "state": "absent"})
