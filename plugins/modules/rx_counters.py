#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rx_counters
short_description: Count frames where they arrive (the generator's receive ports) and snapshot a host's port counters
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - The far-side counter of the forwarding experiments (issue 9). On each of O(devices) (the generator's receive
    ports) a cheap counting drop program (bpf/xdp_bare_drop, attached by M(xdplab.testbed.xdp_program)) drops every
    frame and the driver counts it (veth C(rx_queue_N_xdp_drops), mlx5 C(rxN_xdp_drop), names from
    plugins/module_utils/_driver_counters.py). O(count=xdp_drop) reads those; any other value names an
    C(ethtool -S) counter (C({queue}) for a per-queue one) or an interface statistic prefixed C(if_)
    (C(if_rx_packets) is /sys/class/net/DEV/statistics/rx_packets).
  - Each snapshot reads C(ethtool -i) (the driver), the driver's statistics (C(ethtool -S)'s names and values) and
    the interface statistics of every device of O(devices) and O(extra_devices), timed on CLOCK_MONOTONIC. The
    driver's statistics are read in this process (the SIOCETHTOOL ioctl C(ethtool -S) makes, tens of microseconds)
    between two reads of the interface statistics, whose midpoint is kept; only where the kernel refuses the ioctl
    is O(ethtool) run as a process (tens of milliseconds under load, during which a bursty sender moves thousands of
    frames). Each device's C(read) in RV(snapshot) says which, and C(own_spread) how far its own counters moved
    during the driver read (the midpoint's uncertainty).
  - Three uses. O(snapshot_only=true) returns RV(snapshot) and waits for nothing. O(since) (an earlier
    RV(snapshot) of the same devices) returns what was counted between it and now, without sleeping, so two hosts
    (the generator's receive side and the DUT) can be bracketed around one measuring task. Neither samples like
    every measuring module (O(warmup), then O(samples) intervals).
  - "O(start_at) gives the warm-up's start on CLOCK_REALTIME: two calls on two hosts with the same O(start_at),
    O(warmup), O(interval) and O(samples) (one of them in the background, C(async)) take their snapshots at the same
    instants, within the hosts' clock offset. The forwarding experiments count the DUT's ports so, over the far
    side's window: bracketing them around the far side's task instead would add the tasks' start-up to the DUT's
    window, a time in which the rates differ. RV(measurement)'s C(window.realtime_start) is when the window opened."
  - "RV(measurement) is the one measurement shape, C(source) C({kind: driver_counters, at: O(at), counter, devices});
    RV(agreement) compares the count with the receiving interfaces' own C(if_rx_packets) over the same window."
  - "With O(source=trex) (hardware, the generator is T-Rex) the far side is T-Rex's per-port RX counter instead:
    O(devices) name T-Rex ports (PCI addresses of O(trex_ports) or port numbers), and a snapshot is the newest
    C(interval) record of the runner xdplab-trex-run (backend C(trex) of M(xdplab.testbed.traffic_generator)) in
    O(trex_output): each port's cumulative C(ipackets) / C(opackets) / C(ierrors) / C(oerrors) from
    C(STLClient.get_stats()), timed by the runner's CLOCK_MONOTONIC on this host when it asked the server. The window
    is therefore the runner's sampling (one record per second), and C(source) is C({kind: trex_port_counters, at:
    generator_rx, counter: ipackets, devices, ports}). RV(agreement) is null there: a T-Rex port's C(ipackets) is
    the NIC's own counter, with no second counter on the generator to compare it with (the DUT's counters bound it
    instead, in the record's forwarding section)."
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
  - xdplab.testbed.sampling
  - xdplab.testbed.sampling.cpu_window
  - xdplab.testbed.measurement
options:
  devices:
    description: The ports whose frames are counted, in the module's network namespace.
    type: list
    elements: str
    required: true
  extra_devices:
    description:
      - Ports only snapshotted, not counted (the generator's sending port, whose C(tx_queue_N_xdp_xmit_errors)
        are the frames the DUT's ring refused; the DUT's ports).
    type: list
    elements: str
    default: []
  count:
    description:
      - V(xdp_drop) the driver's XDP drop counter (a counting drop program must be attached), or a counter name.
    type: str
    default: xdp_drop
  at:
    description: Where this counts, for RV(measurement)'s C(source.at).
    type: str
    choices: [generator_rx, dut]
    default: generator_rx
  snapshot_only:
    description: Return RV(snapshot) only.
    type: bool
    default: false
  since:
    description: An earlier RV(snapshot); the result covers the time from it to now.
    type: dict
  ethtool:
    description: Path or name of the ethtool binary.
    type: str
    default: ethtool
  source:
    description:
      - V(driver_counters) reads the interfaces of this host (ethtool -S, /sys statistics); V(trex) reads T-Rex's
        per-port counters from the runner's output O(trex_output) (see the description).
    type: str
    choices: [driver_counters, trex]
    default: driver_counters
  trex_output:
    description:
      - With O(source=trex), the runner's JSON lines on this host, C(<run_dir>/<name>.out) of the
        M(xdplab.testbed.traffic_generator) run (run_dir and name as given to it).
    type: path
  trex_ports:
    description:
      - With O(source=trex), the PCI addresses of the T-Rex ports in trex_cfg.yaml order (backend_options.ports),
        so that O(devices) and O(extra_devices) may name ports by PCI address.
    type: list
    elements: str
    default: []
  start_at:
    description:
      - When the warm-up starts, in seconds since the epoch (CLOCK_REALTIME), so that measurements on several hosts
        share one window. The module sleeps until then; one that starts later has a shorter warm-up, and one that
        starts after O(start_at) + O(warmup) fails (give a start further ahead).
      - Not with O(snapshot_only) or O(since).
    type: float
  stack:
    description:
      - Also read the Linux stack's own counters at the window's edges (nstat's C(/proc/net/snmp) and
        C(/proc/net/netstat) of the module's network namespace, and C(/proc/net/softnet_stat) per CPU) and return what
        moved in RV(stack). For the DUT of a Linux forwarding trial, where the stack's packets went.
    type: bool
    default: false
  stack_cpus:
    description: With O(stack), the CPUs whose softnet_stat lines RV(stack) keeps (default all).
    type: list
    elements: int
  trex_wait:
    description:
      - With O(source=trex), seconds to wait for the runner's next interval record (its first one comes after its
        warm-up and one interval).
    type: float
    default: 10.0
requirements:
  - ethtool on the target
seealso:
  - module: xdplab.testbed.ethtool_stats
  - module: xdplab.testbed.xdp_program
notes:
  - On hardware with T-Rex the far side is T-Rex's per-port RX counters instead (O(source=trex)).
"""

EXAMPLES = r"""
- name: Before the measurement, on the generator
  xdplab.testbed.rx_counters:
    devices: [veth-tg1]
    extra_devices: [veth-tg0]
    snapshot_only: true
  register: far_before

- name: After it, what came back
  xdplab.testbed.rx_counters:
    devices: [veth-tg1]
    extra_devices: [veth-tg0]
    since: "{{ far_before.snapshot }}"
  register: far

- name: The DUT's ports over the far side's window (the same start_at and schedule, in the background)
  xdplab.testbed.rx_counters:
    devices: [veth-dut0]
    extra_devices: [veth-dut1]
    at: dut
    count: if_rx_packets
    start_at: "{{ window_opens }}"
    warmup: 1
    interval: 1
    samples: 3
  async: 60
  poll: 0
  register: dut_job

- name: On hardware, T-Rex's RX counter of its second port over 3 s (the runner of trial t1 must be running)
  xdplab.testbed.rx_counters:
    source: trex
    devices: ["0000:03:00.1"]
    extra_devices: ["0000:03:00.0"]
    trex_ports: ["0000:03:00.0", "0000:03:00.1"]
    trex_output: /run/xdplab/generator/dut/t1.out
    interval: 1
    samples: 3
  register: far
"""

RETURN = r"""
cpu_window:
  description:
    - "With O(cpu_window_cpus): two M(xdplab.testbed.cpu_usage) snapshots of those CPUs (C(cpus)), C(start) taken just
      after the window's first counter read and C(end) just after its last. Pass them as cpu_usage's
      O(xdplab.testbed.cpu_usage#module:since) and O(xdplab.testbed.cpu_usage#module:until)."
  returned: when O(cpu_window_cpus) is not empty
  type: dict
  sample: {cpus: [1], start: {version: 1, time: 6940.51}, end: {version: 1, time: 6942.52}}
snapshot:
  description:
    - "C({t, realtime, devices: {dev: {driver, stats, read, own_spread}}}): C(t) on CLOCK_MONOTONIC (C(realtime) the
      same instant on CLOCK_REALTIME), C(stats) ethtool -S plus
      C(if_*) (at the driver read's midpoint), C(read) V(ioctl) or V(ethtool) (how the driver's statistics were
      read), C(own_spread) how far each C(if_*) moved during that read."
  returned: always
  type: dict
  sample: {t: 1234.5, devices: {veth-tg1: {driver: veth, stats: {rx_queue_0_xdp_drops: 10, if_rx_packets: 10}}}}
measurement:
  description: The one measurement shape of what O(devices) counted (null with O(snapshot_only)).
  returned: always
  type: dict
  sample: {pps: 61530.0, packets: 184592, source: {kind: driver_counters, at: generator_rx}}
counted:
  description:
    - "C({packets, per_rxq, counter, own_counter, own_packets, agreement_pct}) over the window."
    - Null with O(snapshot_only).
  returned: always
  type: dict
deltas:
  description: "C({dev: {counter: delta}}) of every device over the window (null with O(snapshot_only))."
  returned: always
  type: dict
stack:
  description:
    - "With O(stack): C({snmp: {name: delta}, softnet: {cpu: {processed, dropped, time_squeeze, ...}}, drops: {name:
      delta}}) over the window, only what moved; C(drops) the stack's drop counters among them (IpOutNoRoutes,
      IpInDiscards, TcpExtIPReversePathFilter, ...). C(softnet) is the whole host's (not per namespace)."
  returned: with O(stack) and not O(snapshot_only)
  type: dict
  sample: {snmp: {IpInReceives: 2400000, IpForwDatagrams: 2400000}, softnet: {"1": {processed: 2400000}}, drops: {}}
agreement:
  description: "Percent by which the count differs from the devices' own C(if_rx_packets) (null without traffic)."
  returned: always
  type: float
  sample: 0.0
"""

import os
import re
from time import monotonic, sleep, time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool_ioctl as ethtool_ioctl
from ansible_collections.xdplab.testbed.plugins.module_utils import _forwarding as forwarding
from ansible_collections.xdplab.testbed.plugins.module_utils import _measurement as measurement
from ansible_collections.xdplab.testbed.plugins.module_utils import _process as process
from ansible_collections.xdplab.testbed.plugins.module_utils import _stack as stack
from ansible_collections.xdplab.testbed.plugins.module_utils import _trex as trex

TREX_COUNTER = "ipackets"
TREX_POLL_S = 0.05

_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]{1,15}$")


class RxCounters:
    """Does the work; main() only wires it."""

    OWN_SPREAD = forwarding.IF_PREFIX + "rx_packets"

    def __init__(self, module, clock=monotonic, wait=sleep, sysfs="/sys/class/net", realtime=time):
        self.module, self.p = module, module.params
        self.clock, self.sleep, self.sysfs, self.realtime = clock, wait, sysfs, realtime
        self.devices = list(dict.fromkeys(self.p["devices"]))
        self.extra = [d for d in dict.fromkeys(self.p["extra_devices"]) if d not in self.devices]
        self.result = {"changed": False, "measurement": None, "counted": None, "deltas": None, "agreement": None}
        self.trex = self.p["source"] == "trex"
        self.ports = {}
        # the newest runner record read so far (source trex: every snapshot is a newer one)
        self.last_mono = None
        # per device: its in-process driver statistics reader (None: the kernel refused the ioctl, run ethtool -S)
        self.readers = {}

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def validate(self):
        if not self.devices:
            self.fail("devices must name at least one receive port")
        if self.trex:
            return self.validate_trex()
        bad = [d for d in self.devices + self.extra if not _NAME.match(str(d))]
        if bad:
            self.fail(f"invalid interface name(s) {bad}: at most 15 characters, letters, digits and _.:@+-")
        for dev in self.devices + self.extra:
            if not os.path.isdir(os.path.join(self.sysfs, dev)):
                here = ", ".join(sorted(os.listdir(self.sysfs))) if os.path.isdir(self.sysfs) else "?"
                self.fail(f"interface {dev} does not exist on this host (network namespace); interfaces here: {here}. "
                          f"Run the task on the host that owns it (delegate_to the generator for its receive ports)")

    def validate_trex(self):
        if not self.p["trex_output"]:
            self.fail("source trex reads the runner's output: give trex_output (<run_dir>/<name>.out of the "
                      "traffic_generator run, on the generator host)")
        try:
            self.ports = {d: trex.port_number(d, self.p["trex_ports"]) for d in self.devices + self.extra}
        except trex.TrexError as exc:
            self.fail(f"devices: {exc}")

    def trex_snapshot(self):
        """The newest runner interval record after the last one read, as a snapshot (waits up to trex_wait)."""
        deadline = self.clock() + self.p["trex_wait"]
        path = self.p["trex_output"]
        while True:
            try:
                with open(path) as fh:
                    records = trex.intervals(process.json_records(fh.read()))
            except OSError:
                records = []
            newer = [r for r in records if self.last_mono is None or float(r["mono"]) > self.last_mono]
            if newer:
                break
            if self.clock() >= deadline:
                self.fail(f"no new interval record of xdplab-trex-run in {path} within {self.p['trex_wait']:g} s "
                          f"({len(records)} so far): the generator (traffic_generator backend trex) must be running "
                          f"for this trial, past its warm-up; its .err file next to the output says why it is not")
            self.sleep(TREX_POLL_S)
        try:
            snap = trex.far_snapshot(newer[-1], self.ports)
        except trex.TrexError as exc:
            self.fail(str(exc))
        self.last_mono = snap["t"]
        return snap

    def if_stats(self, dev):
        out = {}
        for name in forwarding.IF_STATS:
            try:
                with open(os.path.join(self.sysfs, dev, "statistics", name)) as fh:
                    out[forwarding.IF_PREFIX + name] = int(fh.read().strip())
            except (OSError, ValueError):
                continue
        return out

    def reader(self, dev):
        """The in-process reader of dev's driver statistics, or None where the kernel refuses the ioctl."""
        if dev not in self.readers:
            try:
                self.readers[dev] = ethtool_ioctl.DriverStats(dev)
            except OSError:
                self.readers[dev] = None
        return self.readers[dev]

    def driver_stats(self, dev):
        """(ethtool -S's {name: value} of dev, how it was read): the ioctl in this process, else the ethtool process."""
        reader = self.reader(dev)
        if reader is not None:
            try:
                return reader.read(), "ioctl"
            except OSError:
                self.readers[dev] = None
        return ethtool.stats(self.module.run_command, dev, ethtool=self.p["ethtool"]), "ethtool"

    def read_device(self, dev):
        """The driver's counters (ethtool -S) and the interface's own, read around them: each own counter is the mean
        of a read just before and just after the driver's, its value at the driver read's midpoint, so the agreement
        of the two does not depend on how long that read took; own_spread is how far they moved meanwhile."""
        try:
            driver = ethtool.driver_info(self.module.run_command, dev, ethtool=self.p["ethtool"]).get("driver", "")
            before = self.if_stats(dev)
            stats, how = self.driver_stats(dev)
            after = self.if_stats(dev)
        except ethtool.EthtoolError as exc:
            self.fail(f"cannot read the counters of {dev}: {exc}")
        stats.update({k: (before[k] + v) // 2 if k in before else v for k, v in after.items()})
        spread = {k: v - before[k] for k, v in after.items() if k in before}
        return {"driver": driver, "stats": stats, "read": how, "own_spread": spread}

    def snapshot(self):
        if self.trex:
            return self.trex_snapshot()
        t0, r0 = self.clock(), self.realtime()
        devices = {d: self.read_device(d) for d in self.devices + self.extra}
        snap = {"t": (t0 + self.clock()) / 2.0, "realtime": (r0 + self.realtime()) / 2.0, "devices": devices}
        if self.p.get("stack"):
            try:
                snap["stack"] = stack.read()
            except (OSError, stack.StackError) as exc:
                self.fail(f"cannot read the stack's counters (/proc/net/snmp, netstat, softnet_stat): {exc}")
        return snap

    def check_since(self, since):
        if not isinstance(since, dict) or "t" not in since or not isinstance(since.get("devices"), dict):
            self.fail("since must be the snapshot an earlier call returned (keys t and devices)")
        missing = [d for d in self.devices + self.extra if d not in since["devices"]]
        if missing:
            self.fail(f"since has no snapshot of {missing}: take it with the same devices and extra_devices")

    def count(self, before, after):
        try:
            return forwarding.counted(
                {"devices": {d: before["devices"][d] for d in self.devices}},
                {"devices": {d: after["devices"][d] for d in self.devices}},
                TREX_COUNTER if self.trex else self.p["count"],
            )
        except ValueError as exc:
            self.fail(f"{exc}; attach a counting drop program to the receive ports (bpf/xdp_bare_drop) or name a "
                      f"counter with count")

    def source(self):
        if self.trex:
            return {"kind": "trex_port_counters", "at": self.p["at"], "counter": TREX_COUNTER, "devices": self.devices,
                    "ports": [self.ports[d] for d in self.devices]}
        return {"kind": "driver_counters", "at": self.p["at"], "counter": self.p["count"], "devices": self.devices}

    def per_port(self, first, last, seconds):
        """{device: {port, packets, pps}} of the counted T-Rex ports over the window (source trex)."""
        out = {}
        for dev in self.devices:
            n = forwarding.deltas(first["devices"][dev]["stats"], last["devices"][dev]["stats"]).get(TREX_COUNTER, 0)
            out[dev] = {"port": self.ports[dev], "packets": n, "pps": n / seconds}
        return out

    def between(self, snaps):
        """Result over [(t, snapshot), ...]: the first and last bound the window."""
        first, last = snaps[0][1], snaps[-1][1]
        seconds = last["t"] - first["t"]
        if seconds <= 0:
            self.fail(f"the window between the two snapshots is {seconds:.6f} s: pass a snapshot taken earlier")
        total = self.count(first, last)
        samples = []
        for (_ta, a), (_tb, b) in zip(snaps, snaps[1:]):
            n = self.count(a, b)["packets"]
            dt = b["t"] - a["t"]
            samples.append({"t": round(b["t"] - first["t"], 6), "seconds": round(dt, 6), "packets": n,
                            "pps": n / dt if dt > 0 else 0.0})
        per_rxq = [{"queue": q["queue"], "device": q["device"], "pps": q["packets"] / seconds}
                   for q in total["per_rxq"]]
        window = measurement.window_of(first["t"], last["t"], first.get("realtime"))
        details = {"own_counter": total["own_counter"], "own_packets": total["own_packets"],
                   "agreement_pct": total["agreement_pct"], "counter_names": total["counter"],
                   # how the driver's counters were read, and how far the devices' own rx_packets moved during
                   # the first and the last driver read (the bound of the midpoint's error in own_packets)
                   "driver_read": sorted({snap["devices"][d].get("read", "ethtool") for snap in (first, last)
                                          for d in self.devices}),
                   "own_read_spread_packets": sum(snap["devices"][d].get("own_spread", {}).get(self.OWN_SPREAD, 0)
                                                  for snap in (first, last) for d in self.devices)}
        if self.trex:
            total.update(own_counter=None, own_packets=None, agreement_pct=None)
            details = {"own_counter": None, "own_packets": None, "agreement_pct": None, "counter_names": TREX_COUNTER,
                       "per_port": self.per_port(first, last, seconds),
                       "agreement_note": "T-Rex's ipackets is the port's own counter: no second counter to compare"}
        if self.p.get("stack") and "stack" in first and "stack" in last:
            self.result["stack"] = stack.delta(first["stack"], last["stack"], self.p.get("stack_cpus"))
        self.result.update(
            counted=total,
            deltas=forwarding.device_deltas(first, last),
            agreement=total["agreement_pct"],
            measurement=measurement.measurement(
                total["packets"] / seconds, window, self.source(), packets=total["packets"], per_rxq=per_rxq,
                samples=samples, details=details),
        )

    def run(self):
        self.validate()
        if self.p["snapshot_only"] and self.p["since"]:
            self.fail("snapshot_only and since exclude each other")
        if self.p["start_at"] is not None and (self.p["snapshot_only"] or self.p["since"]):
            self.fail("start_at schedules a sampled window: not with snapshot_only or since")
        if self.p["snapshot_only"]:
            self.result["snapshot"] = self.snapshot()
            return self.result
        if self.p["since"]:
            self.check_since(self.p["since"])
            self.last_mono = float(self.p["since"]["t"]) if self.trex else None
            now = self.snapshot()
            self.result["snapshot"] = now
            self.between([(self.p["since"]["t"], self.p["since"]), (now["t"], now)])
            return self.result
        try:
            sampler = measurement.Sampler.from_params(self.p, clock=self.clock, sleep=self.sleep, realtime=self.realtime)
            snaps = sampler.run(self.snapshot)
        except measurement.SamplingError as exc:
            self.fail(str(exc))
        self.result["snapshot"] = snaps[-1][1]
        if sampler.cpu_window is not None:
            self.result["cpu_window"] = sampler.cpu_window
        self.between(snaps)
        return self.result


def argument_spec():
    return dict(
        measurement.SAMPLING_ARGUMENT_SPEC,
        **measurement.CPU_WINDOW_ARGUMENT_SPEC,
        devices=dict(type="list", elements="str", required=True),
        extra_devices=dict(type="list", elements="str", default=[]),
        count=dict(type="str", default="xdp_drop"),
        at=dict(type="str", choices=[measurement.AT_GENERATOR_RX, measurement.AT_DUT], default="generator_rx"),
        snapshot_only=dict(type="bool", default=False),
        since=dict(type="dict"),
        ethtool=dict(type="str", default="ethtool"),
        source=dict(type="str", choices=["driver_counters", "trex"], default="driver_counters"),
        trex_output=dict(type="path"),
        trex_ports=dict(type="list", elements="str", default=[]),
        trex_wait=dict(type="float", default=10.0),
        start_at=dict(type="float"),
        stack=dict(type="bool", default=False),
        stack_cpus=dict(type="list", elements="int"),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**RxCounters(module).run())


if __name__ == "__main__":
    main()
