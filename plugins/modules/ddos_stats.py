#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ddos_stats
short_description: Where the DUT dropped a UDP flood, and what each CPU did meanwhile (the DoS experiment)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Over the measurement window (doc fragment xdplab.testbed.sampling) reads, in the module's network namespace, the
    UDP counters of C(/proc/net/snmp) (C(UdpNoPorts), C(UdpInErrors), C(UdpRcvbufErrors), C(UdpInDatagrams)) and TCP's
    (C(TcpRetransSegs), ...), the driver's XDP drop counters of O(interface) (C(ethtool -S), where the driver has
    them), the C(ddos_stats) map of bpf/xdp_ddos_filter.bpf.c where that program is attached, and every CPU's
    C(/proc/stat).
  - Its measurement's pps is the drop rate that the system's own counter saw (O(drop_at)); C(dut) holds all of them.
options:
  interface:
    description: The DUT's port.
    type: str
    required: true
  drop_at:
    description: >-
      Which counter is the system's: V(program) (the XDP program's C(ddos_stats) map), V(driver) (the driver's XDP
      drop counter: a program without that map), V(stack) (C(UdpNoPorts): no XDP program), V(none) (the control
      row: the flood is not sent to the DUT).
    type: str
    choices: [program, driver, stack, none]
    required: true
  map_name:
    description: The XDP program's per-CPU drop map (key 0 dropped, key 1 redirected).
    type: str
    default: ddos_stats
extends_documentation_fragment:
  - xdplab.testbed.sampling
  - xdplab.testbed.sampling.cpu_window
attributes:
  check_mode:
    support: full
    description: Only reads.
  diff_mode:
    support: none
    description: Only reads.
requirements:
  - ethtool on the target (the driver's counters; without it they are left out with a warning)
"""

EXAMPLES = r"""
- name: The flood's drops over four 3-second samples
  xdplab.testbed.ddos_stats:
    interface: xdplab-dut0
    drop_at: stack
    warmup: 2
    interval: 3
    samples: 4
"""

RETURN = r"""
measurement:
  description: The one measurement shape (doc fragment xdplab.testbed.measurement); pps = the drops O(drop_at) counted.
  type: dict
  returned: always
dut:
  description: >-
    C(dropped) {xdp_program_pps, xdp_driver_pps, udp_no_ports_pps, udp_in_errors_pps, udp_rcvbuf_errors_pps},
    C(stack) (what moved in /proc/net/snmp, UDP and TCP), C(program) ({dropped, redirected, dropped_per_cpu} or null),
    C(cpus) ([{cpu, busy, user, system, softirq}] every CPU over the window), C(seconds).
  type: dict
  returned: always
cpu_window:
  description: The CPU snapshots at the window's edges (with O(cpu_window_cpus)).
  type: dict
  returned: with cpu_window_cpus
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpustat as cpustat
from ansible_collections.xdplab.testbed.plugins.module_utils import _ddos as ddos
from ansible_collections.xdplab.testbed.plugins.module_utils import _driver_counters as driver_counters
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement
from ansible_collections.xdplab.testbed.plugins.module_utils import _stack as stack


class DdosStats:
    def __init__(self, module, clock=time.monotonic, sleep=time.sleep):
        self.module = module
        self.p = module.params
        self.clock = clock
        self.result = {"changed": False}
        try:
            self.sampler = measurement.Sampler.from_params(self.p, clock=clock, sleep=sleep)
            self.sampler.validate()
        except measurement.SamplingError as exc:
            module.fail_json(msg=str(exc))
        self.ethtool = module.get_bin_path("ethtool")
        self.driver = None
        self.map_id = None

    def find(self):
        interface = self.p["interface"]
        try:
            ifindex = socket.if_nametoindex(interface)
        except OSError:
            self.module.fail_json(msg=f"interface {interface} does not exist in this network namespace")
        if self.ethtool:
            try:
                self.driver = ethtool.driver_info(self.module.run_command, interface, ethtool=self.ethtool).get("driver")
            except ethtool.EthtoolError as exc:
                self.module.warn(f"ethtool -i {interface}: {exc}; the driver's XDP counters are left out")
        else:
            self.module.warn("ethtool is not installed: the driver's XDP counters are left out (apt-get install ethtool)")
        prog_id, _mode = libbpf.attached_program(ifindex)
        if prog_id:
            found = libbpf.find_prog_map(prog_id, name=self.p["map_name"])
            self.map_id = found["id"] if found else None
        if self.p["drop_at"] == "program" and self.map_id is None:
            self.module.fail_json(
                msg=f"drop_at program: no XDP program with a {self.p['map_name']} map is attached on {interface} "
                "(attach xdp_ddos_filter.bpf.o with xdplab.testbed.xdp_program), or count with drop_at driver"
            )
        if self.p["drop_at"] == "driver" and driver_counters.xdp_counter_names(self.driver) is None:
            self.module.fail_json(
                msg=f"drop_at driver: driver {self.driver or 'unknown'} of {interface} has no XDP counters in ethtool -S"
            )

    def read(self):
        snap = {"snmp": stack.read()["snmp"], "cpu": cpustat.take()[0], "driver": None, "program": None}
        if self.ethtool and driver_counters.xdp_counter_names(self.driver) is not None:
            stats = ethtool.stats(self.module.run_command, self.p["interface"], ethtool=self.ethtool)
            snap["driver"] = driver_counters.total_xdp_packets(stats, self.driver, action="drop")
        if self.map_id is not None:
            snap["program"] = ddos.program_totals(libbpf.read_percpu_array(self.map_id))
        return snap

    def run(self):
        self.find()
        snaps = self.sampler.run(self.read)
        (t0, first), (t1, last) = snaps[0], snaps[-1]
        seconds = t1 - t0
        moved = ddos.moved(first["snmp"], last["snmp"], ddos.SNMP_DROPS + ddos.SNMP_TCP)
        program = None
        if first["program"] is not None and last["program"] is not None:
            program = ddos.moved(first["program"][0], last["program"][0], ddos.PROGRAM_KEYS)
            program["dropped_per_cpu"] = ddos.moved(first["program"][1], last["program"][1], last["program"][1])
        driver = None
        if first["driver"] is not None and last["driver"] is not None:
            driver = ddos.moved({"d": first["driver"]}, {"d": last["driver"]}, ("d",))["d"]
        dropped = ddos.where_dropped(moved, program, driver, seconds)
        per_cpu, _all = cpustat.usage_between(first["cpu"], last["cpu"], sorted(last["cpu"]["cpus"]))
        self.result["dut"] = {
            "dropped": dropped,
            "stack": moved,
            "program": program,
            "driver": self.driver,
            "cpus": [{k: row[k] for k in ("cpu", "busy", "user", "system", "softirq")} for row in per_cpu],
            "seconds": round(seconds, 6),
        }

        def count(snap):
            drop_at = self.p["drop_at"]
            if drop_at == "program":
                return snap["program"][0]["dropped"]
            if drop_at == "driver":
                return snap["driver"] or 0
            if drop_at == "stack":
                return snap["snmp"].get("UdpNoPorts", 0)
            return 0

        source = {
            "kind": {"program": "program_map", "driver": "driver_counters", "stack": "snmp", "none": "none"}[self.p["drop_at"]],
            "at": measurement.AT_DUT,
            "interface": self.p["interface"],
            "drop_at": self.p["drop_at"],
        }
        samples = measurement.samples_from_counts(snaps, count)
        packets = count(last) - count(first)
        self.result["measurement"] = measurement.measurement(
            packets / seconds if seconds > 0 else 0.0,
            measurement.window_of(t0, t1),
            source,
            packets=packets,
            samples=samples,
            details={"dropped": dropped},
        )
        if self.sampler.cpu_window is not None:
            self.result["cpu_window"] = self.sampler.cpu_window
        return self.result


def argument_spec():
    return dict(
        measurement.SAMPLING_ARGUMENT_SPEC,
        **measurement.CPU_WINDOW_ARGUMENT_SPEC,
        interface={"type": "str", "required": True},
        drop_at={"type": "str", "choices": ["program", "driver", "stack", "none"], "required": True},
        map_name={"type": "str", "default": "ddos_stats"},
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**DdosStats(module).run())


if __name__ == "__main__":
    main()
