# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kind ``af_xdp``'s provider for its drop entries (issue 26): the project's benchmark xdplab-xsk-bench
(bpf/xsk_bench.c), one AF_XDP socket per RX queue of the trial, each polled by a thread on that queue's DUT CPU, which
measures itself (module xsk_bench, in the foreground); or a user's AF_XDP binary (a custom system of the kind:
xdplab_custom_systems {kind: af_xdp, binary, args}), copied from the controller to the DUT, one process per queue
(module afxdp_user) while the driver's per-queue XDP_REDIRECT counters count what reached its sockets.

The bench (rxdrop, txpush, l2fwd: the point's ``mode`` axis, else the system's ``mode``) and the bind (XDP_SKB, XDP_DRV
copy, XDP_DRV zero-copy: the point's ``bind`` axis, __experiment_afxdp_binds, else the system's copy_mode and
xdplab_afxdp_xdp_mode) are the experiment's (playbooks/vars/afxdp.yml). txpush needs no offered load: the generator
sends a trickle (xdplab_afxdp_txpush_offered_pps, the state's ``traffic``) instead of its full rate.

A forwarding entry (``forward: af_xdp``, mode l2fwd, paper_forward.yml): the bench runs in the background, its window
longer than the far side's by a margin, while the frames are counted where they come back (_kind_forward.py's
forwarding process). xdplab-xsk-bench's l2fwd sends back out of the queue it received on: return_port ingress.
"""

from __future__ import annotations

import os

from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_common import copy_to_host, failure, napi_to, nic_cpus

BENCH = "bin/xdplab-xsk-bench"
# the bench as a forwarding process: its first record (module xsk_bench: <run_dir>/<name>.out) once the sockets are
# bound
XSK_BENCH = {
    "name": "xdplab-xsk-bench",
    "module": "xdplab.testbed.xsk_bench",
    "started_path": "/run/xdplab/xsk_bench/xsk_bench.out",
    "started_regex": '"type": ?"start"',
}


def afxdp_run(trial, binds, xdp_mode):
    """What the benchmark runs in this trial: {mode, xdp_mode, copy_mode} (the point's axes, else the system's)."""
    point, system = trial["point"], trial["system"]
    run = {"mode": point.get("mode", system.get("mode", "rxdrop"))}
    if "bind" in point:
        if point["bind"] not in binds:
            raise failure(
                f"system {trial['name']}: bind '{point['bind']}' is not one of the AF_XDP binds ({', '.join(binds)}); "
                "fix the matrix's bind axis (playbooks/vars/afxdp.yml, xdplab_afxdp_binds)"
            )
        run.update(binds[point["bind"]])
    else:
        run.update(xdp_mode=xdp_mode, copy_mode=system.get("copy_mode"))
    return run


def bench_args(trial, run, settings):
    """xsk_bench's arguments for the measurement. ``settings``: binary, interface, poll, warmup, interval, samples,
    gen_mac, gen_ip, dut_ip (txpush sends a UDP template to the generator's port, at the point's packet_len)."""
    txpush = run["mode"] == "txpush"
    return {
        "state": "measured",
        "binary": settings["binary"],
        "interface": settings["interface"],
        "mode": run["mode"],
        "copy_mode": run["copy_mode"],
        "xdp_mode": run["xdp_mode"],
        # threads sleep in poll() instead of spinning: on the virtual lab they share the DUT CPUs with the NAPI threads
        # that fill their rings (spinning starves them: ~0.09 vs ~2.5 Mpps)
        "poll": settings["poll"],
        "queues": list(range(trial["cores"])),
        "cpus": trial["cpus"],
        "warmup": settings["warmup"],
        "interval": settings["interval"],
        "samples": int(settings["samples"]),
        "dst_mac": settings["gen_mac"] if txpush else None,
        "src_ip": settings["dut_ip"] if txpush else None,
        "dst_ip": settings["gen_ip"] if txpush else None,
        "packet_len": trial["packet_len"] if txpush else None,
    }


class AfXdpProvider(_kind_forward.ForwardingProcess):
    """Kind ``af_xdp`` (the module's docstring)."""

    PROCESS = XSK_BENCH

    @staticmethod
    def setup(phases):
        trial = phases.trial
        system = trial["system"]
        if trial["custom"]:
            # the user's binary, copied from the controller (its path and sha256 are in the system's `given`, for
            # the record's provenance); it runs for the measurement only
            phases.module(
                "ansible.builtin.file", {"path": os.path.dirname(system["binary"]), "state": "directory", "mode": "0755"}
            )
            copy_to_host(phases, system["given"]["binary"], system["binary"], "0755")
            program = {"binary": system["binary"], "args": system["args"], "count": "driver redirect", "given": system["given"]}
        else:
            run = _run(phases)
            program = {
                "system": trial["kind"],
                "mode": run["mode"],
                "bind": trial["point"].get("bind"),
                "copy_mode": run["copy_mode"],
                "xdp_mode": run["xdp_mode"],
                "binary": f"{phases.var('xdplab_bpf_prefix')}/{BENCH}",
            }
            if "forward" in system:
                fwd = dict({"return_port": "egress"}, **_kind_forward.forward_entry(phases))
                # the forwarding input, before any change on the DUT
                if run["mode"] != "l2fwd" or fwd["return_port"] != "ingress":
                    raise failure(
                        f"system {trial['name']}: an AF_XDP forwarding entry runs xdplab-xsk-bench's l2fwd, which sends "
                        "back out of the queue it received on (mode l2fwd, return_port ingress); got mode "
                        f"'{run['mode']}' and return_port '{fwd['return_port']}'"
                    )
                _kind_forward.trex_rx_ports(phases)
            if run["mode"] == "txpush":
                phases.state["traffic"] = {"rate_pps": phases.var("xdplab_afxdp_txpush_offered_pps")}
        cpus = nic_cpus(phases)
        if cpus:
            napi_to(phases, cpus)
            program["nic_cpus"] = cpus
        return program

    @staticmethod
    def measure(phases):
        trial = phases.trial
        if trial["custom"]:
            return _user_measure(phases)
        gen = phases.var("__experiment_gen")
        settings = {
            "binary": f"{phases.var('xdplab_bpf_prefix')}/{BENCH}",
            "interface": phases.var("xdplab_dut_interface"),
            "poll": phases.var("xdplab_afxdp_poll"),
            "warmup": phases.var("experiment_warmup"),
            "interval": phases.var("experiment_interval"),
            "samples": phases.var("experiment_samples"),
            "gen_mac": gen.get("mac"),
            "gen_ip": gen.get("ip"),
            "dut_ip": phases.var("xdplab_dut_ip"),
        }
        if "forward" in trial["system"]:
            # the bench forwards for the far side's window and a margin
            settings["samples"] = int(settings["samples"]) + _kind_forward.margin_samples(phases)
            return _kind_forward.measure_process(phases, XSK_BENCH, bench_args(trial, _run(phases), settings))
        return phases.module("xdplab.testbed.xsk_bench", bench_args(trial, _run(phases), settings))

    @staticmethod
    def teardown(phases):
        """Every exit path (reads the system's entry, not the trial's values): no user's process, no benchmark and
        no XDP program left, the NIC's work back on the DUT's CPUs."""
        planned = phases.var("__experiment_planned")
        system = phases.var("__experiment_systems", {})[planned["point"]["system"]]
        interface = phases.var("xdplab_dut_interface")
        if system.get("custom"):
            phases.module("xdplab.testbed.afxdp_user", {"state": "absent"})
        phases.module("xdplab.testbed.xsk_bench", {"state": "absent", "interface": interface})
        phases.module("xdplab.testbed.xdp_program", {"interface": interface, "state": "absent"})
        if nic_cpus(phases):
            napi_to(phases, phases.var("xdplab_dut_cpus", []))


def _run(phases):
    return afxdp_run(phases.trial, phases.var("__experiment_afxdp_binds", {}), phases.var("xdplab_afxdp_xdp_mode"))


def _user_measure(phases):
    """A user's AF_XDP binary: one process per queue of the trial, pinned to that queue's CPU, started now (the
    generator sends) and stopped after the window (fails when one ended before the window did); counted by the
    driver's per-queue XDP_REDIRECT counters (veth counts rx_queue_N_xdp_redirect only for frames redirected into a
    socket). The trial's teardown stops whatever still runs."""
    trial = phases.trial
    system = trial["system"]
    interface = phases.var("xdplab_dut_interface")
    started = phases.module(
        "xdplab.testbed.afxdp_user",
        {
            "state": "started",
            "binary": system["binary"],
            "args": system["args"],
            "interface": interface,
            "queues": list(range(trial["cores"])),
            "cpus": trial["cpus"],
        },
    )
    # the command it runs, in the record's program
    phases.state["program"] = dict(phases.state.get("program") or {}, command=started.get("command"))
    measured = phases.module(
        "xdplab.testbed.xdp_stats",
        {
            "interface": interface,
            "count": "driver",
            "action": "redirect",
            "warmup": phases.var("experiment_warmup"),
            "interval": phases.var("experiment_interval"),
            "samples": phases.var("experiment_samples"),
        },
    )
    phases.module("xdplab.testbed.afxdp_user", {"state": "stopped"})
    return measured
