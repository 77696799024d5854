# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kind ``dpdk``'s provider for its drop entries (issue 26): dpdk-testpmd in rxonly mode owns the DUT port, one
forwarding lcore per core of the trial plus a main lcore for control, and measures its own RX rate over the window
(module testpmd, in the foreground). On hardware the port is a PCI address (xdplab_dpdk_port); on the virtual lab a
vdev (net_af_xdp or net_af_packet, xdplab_dpdk_vdev_driver) over the DUT's kernel interface. The SIMD variant (the
system's ``simd``) picks EAL --force-max-simd-bitwidth and the port's devargs.

A PCI port the kernel's systems use too (the VM lab's virtio-net port: role dpdk's ``dpdk_bind_at: trial``) is
bound to its userspace driver for this trial only and given back after it, with the role nic's settings again (the
driver comes back with its defaults): the modules the role dpdk's entry points ``bind``/``unbind`` and the role nic
call (pci_driver, nic_settings), with those roles' variables.

A forwarding entry (``forward: dpdk``, paper_forward.yml) runs testpmd in its ``forward_mode`` instead, in the
background beside the far side's count (_kind_forward.py's forwarding process):
  mac      two ports (the paper's choice): ingress -> egress (xdplab_dut_egress_interface, or the PCI port
           xdplab_dpdk_egress_port), the destination MAC the generator's receive port's (--eth-peer)
  macswap  one port: swap the MACs, back out of the ingress port
Its window ends END_MARGIN_S after the far side's (window_end_file). In the latency experiment its histogram covers the
generator's whole run: the setup starts testpmd before the generator, and the measure ends its window a margin after
the generator's end.
"""

from __future__ import annotations

import re
import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.xdplab.testbed.plugins.plugin_utils import _kind_forward
from ansible_collections.xdplab.testbed.plugins.plugin_utils._kind_common import failure, napi_to, nic_cpus

# the role dpdk's defaults that its entry points bind and unbind read, and the role nic's that its main entry point
# reads (the trial included those roles, so their defaults applied; tests/unit checks these against the files)
DPDK_ROLE_DEFAULTS = {
    "dpdk_bind_at": "setup",
    "dpdk_bind_vfio_noiommu": False,
    "dpdk_bind_record_dir": "/run/xdplab/pci_driver",
    "dpdk_unbind_driver": "",
}
NIC_ROLE_DEFAULTS = {"nic_ntuple_port_base": 12, "nic_unsupported": "fail", "nic_verify_only": False, "nic_verify_fail": True}

# role dpdk's bind.yml: a device address in domain:bus:slot.function form
PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
# role nic's ports.yml: the optional keys of a port passed on to nic_settings as they are
NIC_PORT_KEYS = ("pci", "mac", "channels", "rings", "pause", "private_flags", "ntuple_rules", "irq_cpus", "irq_affinity",
                 "irq_name_patterns")  # fmt: skip


def input_error(trial, bitwidths, main_lcore):
    """The input check before any change on the DUT: the system's SIMD variant has an entry in
    xdplab_dpdk_max_simd_bitwidth and the trial has as many CPUs as cores besides the main lcore. None when fine."""
    system = trial["system"]
    if system.get("simd") in bitwidths and len(trial["cpus"]) == trial["cores"]:
        return None
    return (
        f"system {trial['name']}: SIMD variant '{system.get('simd')}' needs an entry in xdplab_dpdk_max_simd_bitwidth "
        f"({list(bitwidths)}), and {trial['cores']} forwarding lcores need as many DUT CPUs besides the main lcore "
        f"{main_lcore} (have {trial['dpdk_cpus']})"
    )


def forward_input_error(trial, fwd, egress, settings):
    """A forwarding entry's input check (before any change on the DUT): mac with two ports (return_port egress, a
    second DUT port; with a PCI port its egress PCI address), macswap with one (return_port ingress). ``settings``:
    host, interface, dpdk_port, egress_port. None when fine."""
    mode = fwd.get("forward_mode") or ""
    ok = (
        mode in ("mac", "macswap")
        and (mode == "mac") == (fwd["return_port"] == "egress")
        and (fwd["return_port"] == "ingress" or (egress and egress != settings["interface"]))
        and (fwd["return_port"] == "ingress" or not settings["dpdk_port"] or settings["egress_port"])
    )
    if ok:
        return None
    return (
        f"system {trial['name']}: a DPDK forwarding entry needs forward_mode mac (two ports, return_port egress) or "
        f"macswap (one port, return_port ingress), got forward_mode '{mode}' return_port '{fwd['return_port']}'; mac "
        f"sends out of a second port: xdplab_dut_egress_interface must name a port of {settings['host']} other than its "
        f"ingress port {settings['interface']} (got '{egress}'), and with a PCI port (xdplab_dpdk_port "
        f"{settings['dpdk_port']}) xdplab_dpdk_egress_port must give the egress port's PCI address"
    )


def two_ports(system):
    """testpmd ``mac``: each port's frames leave the other port (the ingress and the egress port)."""
    return system.get("forward_mode", "") == "mac"


def testpmd_ports(system, cores, settings):
    """testpmd's ports: the PCI port(s) with the SIMD variant's devargs, or the vdev(s) over the DUT's interface(s)
    with one queue per core. ``settings``: dpdk_port, egress_port, devargs, vdev_driver, interface, egress_interface."""
    two = two_ports(system)
    if settings["dpdk_port"]:
        pci_args = f",{settings['devargs']}" if settings["devargs"] else ""
        return [settings["dpdk_port"] + pci_args] + ([settings["egress_port"] + pci_args] if two else [])
    vdev_args = f",start_queue=0,queue_count={cores}"
    driver = settings["vdev_driver"]
    return [f"{driver}0,iface={settings['interface']}{vdev_args}"] + (
        [f"{driver}1,iface={settings['egress_interface']}{vdev_args}"] if two else []
    )


def testpmd_extra_args(system, gen_mac, gen_rx_mac):
    """testpmd ``mac``: each port's frames leave the other port with the MAC of the generator's port behind it."""
    return [f"--eth-peer=0,{gen_mac}", f"--eth-peer=1,{gen_rx_mac}"] if two_ports(system) else []


def bind_errors(devices):
    """Role dpdk's bind.yml check (before any change): the devices' addresses in domain:bus:slot.function form."""
    bad = [str(d.get("pci")) for d in devices if not PCI_ADDRESS.match(str(d.get("pci", "")))]
    if not bad:
        return None
    return f"dpdk_bind_devices: {', '.join(bad)} not PCI addresses in domain:bus:slot.function form (e.g. 0000:03:00.0)"


def bound_device(result):
    """Role dpdk's bind.yml: what one pci_driver bind says (dpdk_bound_devices' item); ``previous``: the kernel
    driver the device goes back to (the record's, kept from the first bind)."""
    record = result.get("record") or {}
    return {
        "pci": result.get("address"),
        "driver": result.get("driver"),
        "previous": record.get("driver") or result.get("previous"),
        "interfaces": record.get("interfaces", []),
        "noiommu": result.get("noiommu"),
        "iommu_group": result.get("iommu_group"),
        "seconds": result.get("seconds"),
    }


def nic_settings_args(port, port_base, unsupported, verify):
    """Role nic's ports.yml: one port's nic_settings arguments."""
    args = {k: port[k] for k in NIC_PORT_KEYS if k in port}
    args.update(
        interface=port["name"],
        ntuple_udp_flows=port.get("ntuple_udp_flows", 0),
        ntuple_port_base=port_base,
        ntuple_purge=port.get("ntuple_purge", False),
        unsupported=unsupported,
        verify=verify,
    )
    return args


def drift_message(host, drift):
    """Role nic's verify.yml: a drifted NIC refused."""
    items = "; ".join(f"{d['interface']} {d['item']} expected {d['expected']}, actual {d['actual']}" for d in drift)
    return (
        f"{host} drifted from its NIC tuning, refusing to measure: {items}. Run the nic role again (or fix the "
        "inventory) before measuring."
    )


class DpdkProvider(_kind_forward.ForwardingProcess):
    """Kind ``dpdk``, its drop entries (the module's docstring)."""

    @staticmethod
    def setup(phases):
        trial = phases.trial
        system = trial["system"]
        bitwidths = phases.var("xdplab_dpdk_max_simd_bitwidth", {})
        error = input_error(trial, bitwidths, phases.var("xdplab_dpdk_main_lcore"))
        if error:
            raise failure(error)
        port = phases.var("xdplab_dpdk_port", "")
        forwarding = "forward" in system
        if forwarding:
            fwd = _kind_forward.forward_entry(phases)
            fwd = dict({"return_port": "egress"}, **fwd)
            error = forward_input_error(
                trial,
                fwd,
                phases.var("xdplab_dut_egress_interface", "") or "",
                {
                    "host": phases.task_vars.get("inventory_hostname"),
                    "interface": phases.var("xdplab_dut_interface"),
                    "dpdk_port": port,
                    "egress_port": phases.var("xdplab_dpdk_egress_port", "") or "",
                },
            )
            if error:
                raise failure(error)
        bound = _bind(phases) if _per_trial(phases) else None
        two = two_ports(system)
        program = {
            "system": trial["kind"],
            "simd": system["simd"],
            "forward_mode": system.get("forward_mode", "rxonly"),
            "testpmd": phases.var("xdplab_dpdk_testpmd"),
            "max_simd_bitwidth": bitwidths[system["simd"]],
            "devargs": _devargs(phases, system),
            "main_lcore": phases.var("xdplab_dpdk_main_lcore"),
            "no_huge": phases.flag("xdplab_dpdk_no_huge"),
            "dpdk_build": phases.var("dpdk_provenance", {}),
            # the PCI address(es) it took, with the userspace driver and the kernel driver they go back to (a port
            # bound per trial; null when the role bound them at setup, or for a vdev)
            "bound": bound,
            "pci": ([port] + ([phases.var("xdplab_dpdk_egress_port")] if two else [])) if port else None,
        }
        if forwarding:
            _kind_forward.trex_rx_ports(phases)
        cpus = nic_cpus(phases)
        if cpus and not port:
            napi_to(phases, cpus)
            program["nic_cpus"] = cpus
        if forwarding and phases.flag("experiment_latency"):
            # the latency experiment: the histogram covers the generator's whole run, so testpmd forwards before the
            # generator starts (and until a margin after it ended: the measure writes that end)
            changed = phases.changed
            _kind_forward.start_process(phases, TESTPMD, _testpmd_args(phases))
            phases.changed = changed
        return program

    @staticmethod
    def measure(phases):
        changed = phases.changed
        if "forward" in phases.trial["system"]:
            if _kind_forward.process_started(phases) and phases.flag("experiment_latency"):
                # testpmd, started in setup, forwards until the generator has ended (now that its end is known)
                # instead of for a lead long enough for any start-up (LATENCY_LEAD_S)
                _kind_forward.write_window_end(phases, time.time() + float(phases.trial["seconds"]))
            measured = _kind_forward.measure_process(phases, TESTPMD, _testpmd_args(phases), window_end=True)
        else:
            measured = phases.module("xdplab.testbed.testpmd", _testpmd_args(phases))
        # testpmd runs for the measurement only and leaves the port as found
        phases.changed = changed
        return measured

    @staticmethod
    def teardown(phases):
        """Every exit path (safe after a failed setup or measure; reads the system's entry, not the trial's values):
        testpmd stopped, a port bound for the trial given back with the NIC settings again, net_af_xdp's programs
        gone from the DUT's ports, the NIC's work back on the DUT's CPUs."""
        planned = phases.var("__experiment_planned")
        system = phases.var("__experiment_systems", {})[planned["point"]["system"]]
        phases.module("xdplab.testbed.testpmd", {"state": "absent", "name": "trial"})
        port = phases.var("xdplab_dpdk_port", "")
        if _per_trial(phases):
            _unbind(phases)
            # the driver came back with its defaults (queues, rings, IRQ affinity): the nic role's settings again, so
            # the next trial measures the tuned port
            if phases.var("nic_ports", []):
                _nic(phases)
        if not port:
            interfaces = [phases.var("xdplab_dut_interface")]
            if two_ports(system):
                interfaces.append(phases.var("xdplab_dut_egress_interface"))
            for interface in interfaces:
                phases.module(
                    "xdplab.testbed.xdp_program",
                    {"interface": interface, "state": "absent", "mode": phases.var("xdplab_xdp_mode", "native")},
                )
        if nic_cpus(phases) and not port:
            napi_to(phases, phases.var("xdplab_dut_cpus", []))


# testpmd as a forwarding process: its transcript (module testpmd: <run_dir>/<name>.log) once `start` has answered
TESTPMD = {
    "name": "testpmd",
    "module": "xdplab.testbed.testpmd",
    "started_path": "/run/xdplab/testpmd/trial.log",
    "started_regex": "packet forwarding - ports=",
}
DpdkProvider.PROCESS = TESTPMD


def _testpmd_args(phases):
    """testpmd for the measurement: rxonly in the foreground, its own RX rate over the window; a forwarding entry's
    in the background, its window the far side's with a margin (the longest it may run: it ends with the far side's
    window, or in the latency experiment with the generator, by its window_end_file)."""
    trial = phases.trial
    system = trial["system"]
    gen = phases.var("__experiment_gen")
    mbufs = phases.var("xdplab_dpdk_mbufs", 0)
    forwarding = "forward" in system
    return {
        "state": "measured",
        "binary": phases.var("xdplab_dpdk_testpmd"),
        "name": "trial",
        "ports": testpmd_ports(system, trial["cores"], _port_settings(phases, system)),
        "forward_mode": system.get("forward_mode", "rxonly"),
        "lcores": [int(phases.var("xdplab_dpdk_main_lcore", 0))] + trial["cpus"],
        "nb_cores": trial["cores"],
        "rxq": trial["cores"],
        "txq": trial["cores"],
        "rss": "udp",
        "max_simd_bitwidth": phases.var("xdplab_dpdk_max_simd_bitwidth", {})[system["simd"]],
        "no_huge": phases.flag("xdplab_dpdk_no_huge"),
        # testpmd's default pool is sized for 32 ports (about 380 MB of 2M pages): a small DUT (the VM lab) names less
        "mbufs": mbufs if int(mbufs or 0) > 0 else None,
        "extra_args": testpmd_extra_args(system, gen.get("mac"), phases.host_var(gen["host"], "xdplab_generator_rx_mac", "")),
        "warmup": phases.var("experiment_warmup"),
        "interval": phases.var("experiment_interval"),
        "samples": _kind_forward.process_samples(phases) if forwarding else phases.var("experiment_samples"),
        "window_end_file": _kind_forward.WINDOW_END_FILE if forwarding else None,
    }


def _role_var(phases, name):
    return phases.var(name, {**DPDK_ROLE_DEFAULTS, **NIC_ROLE_DEFAULTS}[name])


def _per_trial(phases):
    """A PCI port bound for each trial (role dpdk's dpdk_bind_at: trial) with devices to bind."""
    return bool(
        phases.var("xdplab_dpdk_port", "")
        and _role_var(phases, "dpdk_bind_at") == "trial"
        and phases.var("dpdk_bind_devices", [])
    )


def _devargs(phases, system):
    return (phases.var("xdplab_dpdk_devargs", {}) or {}).get(system["simd"], "")


def _port_settings(phases, system):
    return {
        "dpdk_port": phases.var("xdplab_dpdk_port", ""),
        "egress_port": phases.var("xdplab_dpdk_egress_port", ""),
        "devargs": _devargs(phases, system),
        "vdev_driver": phases.var("xdplab_dpdk_vdev_driver"),
        "interface": phases.var("xdplab_dut_interface"),
        "egress_interface": phases.var("xdplab_dut_egress_interface"),
    }


def _bind(phases):
    """Role dpdk's entry point ``bind``: each device of dpdk_bind_devices to its userspace driver (module pci_driver;
    the driver it had is recorded on the host); what is bound (its dpdk_bound_devices)."""
    devices = phases.var("dpdk_bind_devices", [])
    error = bind_errors(devices)
    if error:
        raise failure(error)
    return [
        bound_device(
            phases.module(
                "xdplab.testbed.pci_driver",
                {
                    "address": device["pci"],
                    "driver": device.get("driver", "vfio-pci"),
                    "vfio_noiommu": _role_var(phases, "dpdk_bind_vfio_noiommu"),
                    "record_dir": _role_var(phases, "dpdk_bind_record_dir"),
                },
            )
        )
        for device in devices
    ]


def _unbind(phases):
    """Role dpdk's entry point ``unbind``: each device of dpdk_bind_devices back to the kernel driver recorded when it
    was bound (module pci_driver, state restored)."""
    driver = _role_var(phases, "dpdk_unbind_driver")
    for device in phases.var("dpdk_bind_devices", []):
        phases.module(
            "xdplab.testbed.pci_driver",
            {
                "address": device["pci"],
                "state": "restored",
                "driver": driver or None,
                "record_dir": _role_var(phases, "dpdk_bind_record_dir"),
            },
        )


def _nic(phases):
    """Role nic's main entry point: with nic_verify_only, the drift check only (fails on drift with
    nic_verify_fail); else a read-only pass over every port before the first change (its preflight; the port list
    itself was checked when the role ran at the play's start), then the settings."""
    ports = phases.var("nic_ports", [])
    port_base = _role_var(phases, "nic_ntuple_port_base")
    unsupported = _role_var(phases, "nic_unsupported")
    verified = [
        phases.module("xdplab.testbed.nic_settings", nic_settings_args(port, port_base, unsupported, True)) for port in ports
    ]
    if boolean(_role_var(phases, "nic_verify_only"), strict=False):
        drift = [d for result in verified for d in result.get("drift") or []]
        if drift and boolean(_role_var(phases, "nic_verify_fail"), strict=False):
            raise failure(drift_message(phases.task_vars.get("inventory_hostname"), drift))
        return
    for port in ports:
        phases.module("xdplab.testbed.nic_settings", nic_settings_args(port, port_base, unsupported, False))
