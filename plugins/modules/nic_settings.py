#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_settings
short_description: Channels, rings, pause frames, private flags, n-tuple rules and IRQ affinity of a NIC port
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Brings one network interface to the settings a benchmark needs, through C(ethtool) and C(/proc/irq), and
    reports what differs (drift) without changing anything when O(verify=true).
  - Reads everything first, validates every requested value against what the device offers (queue and ring
    maximums from C(ethtool -l)/C(-g), private flag names from C(--show-priv-flags), IRQs from C(/proc/interrupts),
    online CPUs), and only then changes anything; a bad value fails naming it, before any change.
  - Operations the driver does not implement (C(Operation not supported), e.g. pause frames, rings, n-tuple rules
    on veth) fail, or with O(unsupported=skip) are listed in RV(skipped_items) with the reason.
  - "Order of changes: channels, rings, pause, private flags, n-tuple (feature on, conflicting rules deleted,
    missing rules added), IRQ affinity."
attributes:
  check_mode:
    support: full
    description: Reports what would change (RV(drift), RV(commands)) without running it.
  diff_mode:
    support: full
    description: Before and after of every requested setting.
options:
  interface:
    description: Interface name, in the module's network namespace.
    type: str
    required: true
  pci:
    description:
      - Expected PCI address of the port (C(0000:03:00.0), as C(ethtool -i) shows it in bus-info). The module fails
        when the interface sits elsewhere, so an inventory cannot tune the wrong port.
    type: str
  mac:
    description: Expected MAC address of the interface (fails when it differs, as on a wrong port).
    type: str
  channels:
    description: Queue counts (C(ethtool -L)). Only the keys given are set.
    type: dict
    suboptions:
      combined:
        description: Combined channels.
        type: int
      rx:
        description: RX-only channels.
        type: int
      tx:
        description: TX-only channels.
        type: int
      other:
        description: Other channels.
        type: int
  rings:
    description: Ring sizes (C(ethtool -G)). Only the keys given are set.
    type: dict
    suboptions:
      rx:
        description: RX ring entries.
        type: int
      tx:
        description: TX ring entries.
        type: int
      rx_mini:
        description: RX mini ring entries.
        type: int
      rx_jumbo:
        description: RX jumbo ring entries.
        type: int
  pause:
    description: Pause frame settings (C(ethtool -A)). The benchmarks want all three off.
    type: dict
    suboptions:
      autoneg:
        description: Pause autonegotiation.
        type: bool
      rx:
        description: Honour received pause frames.
        type: bool
      tx:
        description: Send pause frames.
        type: bool
  private_flags:
    description: Driver private flags (C(ethtool --set-priv-flags)), for mlx5 C(rx_cqe_compress) and C(rx_striding_rq)
      set to false.
    type: dict
  ntuple_rules:
    description:
      - n-tuple rules C(ethtool -N IF flow-type FLOW_TYPE dst-port DST_PORT action QUEUE). A rule with the same
        flow type and destination port that steers elsewhere is deleted and replaced. Turns the C(ntuple) feature on.
    type: list
    elements: dict
    suboptions:
      flow_type:
        description: Flow type.
        type: str
        choices: [udp4, tcp4, udp6, tcp6]
        default: udp4
      dst_port:
        description: Destination port.
        type: int
        required: true
      queue:
        description: RX queue the flow is steered to.
        type: int
        required: true
  ntuple_udp_flows:
    description:
      - Shorthand for the benchmark flows, N rules C(flow-type udp4 dst-port PORT_BASE+i action i) for i in 0..N-1
        (flow i of the generator to queue i, as the paper's C(udp_for_benchmarks.py) numbers its streams). Added to
        O(ntuple_rules).
    type: int
    default: 0
  ntuple_port_base:
    description: First destination port of O(ntuple_udp_flows).
    type: int
    default: 12
  ntuple_purge:
    description: Also delete n-tuple rules that O(ntuple_rules) does not list.
    type: bool
    default: false
  irq_affinity:
    description: CPUs each RX queue's interrupt is pinned to (C(/proc/irq/N/smp_affinity_list)).
    type: list
    elements: dict
    suboptions:
      queue:
        description: Queue (channel) number.
        type: int
        required: true
      cpus:
        description: CPUs the queue's IRQ may run on.
        type: list
        elements: int
        required: true
  irq_cpus:
    description: Shorthand for O(irq_affinity), queue q's IRQ pinned to CPU C(irq_cpus[q]) for q in 0..len-1.
    type: list
    elements: int
  irq_name_patterns:
    description:
      - Names of a queue's IRQ in C(/proc/interrupts), with C({queue}), C({interface}) and C({pci}) filled in; the
        first that exists wins. Default by driver, e.g. mlx5_core C(mlx5_comp{queue}@pci:{pci}), i40e
        C(i40e-{interface}-TxRx-{queue}).
    type: list
    elements: str
  unsupported:
    description: What to do when the driver does not implement a requested operation (EOPNOTSUPP, or no per-queue
      IRQs). V(fail) stops; V(skip) lists it in RV(skipped_items) with the reason and carries on.
    type: str
    choices: [fail, skip]
    default: fail
  verify:
    description: Change nothing; return every requested setting that differs in RV(drift) (the drift check).
    type: bool
    default: false
  ethtool:
    description: Path or name of the ethtool binary.
    type: str
    default: ethtool
requirements:
  - ethtool on the target, root
seealso:
  - module: xdplab.testbed.ethtool_stats
"""

EXAMPLES = r"""
- name: ConnectX-5 port as in the XDP paper (6 queues, no pause, no CQE compression, no striding RQ)
  xdplab.testbed.nic_settings:
    interface: mlx5p1
    pci: "0000:03:00.0"
    channels: {combined: 6}
    rings: {rx: 1024, tx: 1024}
    pause: {autoneg: false, rx: false, tx: false}
    private_flags: {rx_cqe_compress: false, rx_striding_rq: false}
    # UDP destination port 12 + i -> queue i (the generator's flow i), i = 0..5
    ntuple_udp_flows: 6
    # queue q's completion IRQ (mlx5_compQ@pci:0000:03:00.0) on CPU q
    irq_cpus: [0, 1, 2, 3, 4, 5]

- name: Drift check of a veth end (what veth does not support is skipped, with the reason)
  xdplab.testbed.nic_settings:
    interface: veth-dut0
    channels: {rx: 1, tx: 1}
    pause: {autoneg: false, rx: false, tx: false}
    unsupported: skip
    verify: true
  register: nic

- name: Refuse a drifted port
  ansible.builtin.assert:
    that: nic.drift | length == 0
    fail_msg: "{{ nic.drift }}"
"""

RETURN = r"""
interface:
  description: Interface name.
  returned: always
  type: str
  sample: mlx5p1
driver:
  description: Driver (C(ethtool -i)).
  returned: always
  type: str
  sample: mlx5_core
bus_info:
  description: PCI address (C(ethtool -i) bus-info; empty for virtual devices).
  returned: always
  type: str
  sample: "0000:03:00.0"
drift:
  description: Requested settings that differ from the device (before any change); in verify mode nothing was changed.
  returned: always
  type: list
  elements: dict
  contains:
    interface:
      description: The interface.
      type: str
    item:
      description: Setting, e.g. C(channels.combined), C(ntuple.udp4.dst_port=12), C(irq_affinity.queue3).
      type: str
    expected:
      description: Requested value.
      type: raw
    actual:
      description: Value on the device.
      type: raw
  sample: [{interface: veth-dut0, item: channels.rx, expected: 2, actual: 1}]
skipped_items:
  description: Requested settings the device does not support, with the reason (O(unsupported=skip)).
  returned: always
  type: list
  elements: dict
  sample: [{interface: veth-dut0, item: pause, reason: "driver veth: ethtool -a veth-dut0: Operation not supported"}]
commands:
  description: Changes run (or, in check mode and verify mode, that would run), in order.
  returned: always
  type: list
  elements: str
  sample: ["ethtool -L mlx5p1 combined 6", "echo 0 > /proc/irq/120/smp_affinity_list"]
state:
  description: The requested settings as read from the device after the changes.
  returned: always
  type: dict
  sample: {channels: {rx: 2, tx: 2}}
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import format_cpu_list, parse_cpu_list

_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$")
_RING_KEYS = {"rx": "rx", "tx": "tx", "rx_mini": "rx mini", "rx_jumbo": "rx jumbo"}
_RING_ARGS = {"rx": "rx", "tx": "tx", "rx_mini": "rx-mini", "rx_jumbo": "rx-jumbo"}
_PAUSE_KEYS = {"autoneg": "autonegotiate", "rx": "rx", "tx": "tx"}
# the setting an ethtool write belongs to (a refusal at apply time is named by it)
_SET_ITEMS = {"-L": "channels", "-G": "rings", "-A": "pause", "--set-priv-flags": "private_flags",
              "-K": "ntuple_rules", "-N": "ntuple_rules"}
# drivers whose rings are split virtqueues: a size that is not a power of two fails with ENOMEM
_POWER_OF_TWO_RINGS = ("virtio_net",)


def valid_mac(value):
    """Unicast 48-bit MAC (netaddr when importable on the target, else the same rule by hand)."""
    if not isinstance(value, str) or not _MAC.match(value.strip()):
        return False
    try:
        import netaddr

        eui = netaddr.EUI(value.strip())
        first = int(eui.words[0])
    except ImportError:
        first = int(value.strip()[:2], 16)
    except (ValueError, TypeError):
        return False
    return not first & 1


class NicSettings:
    """Does the work; main() only wires it."""

    SYSFS = "/sys"
    PROCFS = "/proc"

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.ifname = self.p["interface"]
        self.bin = self.p["ethtool"]
        self.result = {"changed": False, "interface": self.ifname, "driver": "", "bus_info": "", "drift": [],
                       "skipped_items": [], "commands": [], "state": {}}
        self.before, self.after = {}, {}
        self.actions = []  # (description, callable)

    # -- helpers ---------------------------------------------------------------------------------------------
    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def eth(self, *args):
        return ethtool.run_ethtool(self.module.run_command, [self.bin, *[str(a) for a in args]])

    def read_text(self, path):
        with open(path) as fh:
            return fh.read()

    def write_text(self, path, text):
        with open(path, "w") as fh:
            fh.write(text)

    def unsupported(self, item, reason):
        if self.p["unsupported"] == "skip":
            self.result["skipped_items"].append({"interface": self.ifname, "item": item, "reason": reason})
            return
        self.fail(f"{self.ifname}: {item} is not supported: {reason}. Leave {item} out for this port, "
                  f"or set unsupported=skip (nic_unsupported: skip) to carry on without it")

    def drift(self, item, expected, actual):
        self.result["drift"].append({"interface": self.ifname, "item": item, "expected": expected, "actual": actual})

    def plan(self, argv_or_desc, action):
        self.actions.append((argv_or_desc, action))

    # -- input -------------------------------------------------------------------------------------------------
    def expand_shorthands(self):
        p = self.p
        rules = list(p["ntuple_rules"] or [])
        if p["ntuple_udp_flows"] < 0:
            self.fail(f"ntuple_udp_flows must be zero or more, got {p['ntuple_udp_flows']}")
        rules += [{"flow_type": "udp4", "dst_port": p["ntuple_port_base"] + i, "queue": i}
                  for i in range(p["ntuple_udp_flows"])]
        p["ntuple_rules"] = rules or None
        irqs = list(p["irq_affinity"] or [])
        irqs += [{"queue": q, "cpus": [cpu]} for q, cpu in enumerate(p["irq_cpus"] or [])]
        p["irq_affinity"] = irqs or None

    def validate_input(self):
        self.expand_shorthands()
        p = self.p
        if not re.match(r"^[A-Za-z0-9_.:@+-]{1,15}$", self.ifname):
            self.fail(f"interface {self.ifname!r} is not a valid interface name (at most 15 characters)")
        if p["pci"] is not None and not ethtool.valid_pci(p["pci"]):
            self.fail(f"pci {p['pci']!r} is not a PCI address: write domain:bus:device.function like 0000:03:00.0 "
                      f"(ethtool -i {self.ifname} shows it as bus-info)")
        if p["mac"] is not None and not valid_mac(p["mac"]):
            self.fail(f"mac {p['mac']!r} is not a unicast MAC address: write six hex octets like ec:0d:9a:00:00:01")
        for group in ("channels", "rings"):
            for key, value in (p[group] or {}).items():
                if value is not None and value < 0:
                    self.fail(f"{group}.{key} must be zero or more, got {value}")
        if p["channels"] and all(v is None for v in p["channels"].values()):
            p["channels"] = None
        for i, rule in enumerate(p["ntuple_rules"] or []):
            if not 0 <= rule["dst_port"] <= 65535 or rule["queue"] < 0:
                self.fail(f"ntuple_rules[{i}]: dst_port must be 0..65535 and queue >= 0, got {rule}")
        ports = [(r["flow_type"], r["dst_port"]) for r in p["ntuple_rules"] or []]
        dup = sorted({f"{f} dst-port {d}" for f, d in ports if ports.count((f, d)) > 1})
        if dup:
            self.fail(f"ntuple_rules: more than one rule for {', '.join(dup)}")
        flags = p["private_flags"] or {}
        bad = {k: v for k, v in flags.items() if not isinstance(v, bool)
               and str(v).lower() not in ("on", "off", "true", "false", "yes", "no")}
        if bad:
            self.fail(f"private_flags must map flag names to true/false, got {bad}")
        if p["irq_affinity"]:
            online = parse_cpu_list(self.read_text(os.path.join(self.SYSFS, "devices/system/cpu/online")))
            queues = [e["queue"] for e in p["irq_affinity"]]
            if len(set(queues)) != len(queues):
                self.fail(f"irq_affinity names a queue more than once: {queues}")
            for e in p["irq_affinity"]:
                if not e["cpus"]:
                    self.fail(f"irq_affinity queue {e['queue']}: cpus must not be empty")
                missing = sorted(set(e["cpus"]) - set(online))
                if missing:
                    self.fail(f"irq_affinity queue {e['queue']}: CPU(s) {missing} are not online on this host "
                              f"(online: {format_cpu_list(online)})")

    @staticmethod
    def as_bool(value):
        return value if isinstance(value, bool) else str(value).lower() in ("on", "true", "yes")

    # -- reading and planning ----------------------------------------------------------------------------------
    def identify(self):
        if not os.path.exists(os.path.join(self.SYSFS, "class/net", self.ifname)):
            names = sorted(os.listdir(os.path.join(self.SYSFS, "class/net")))
            self.fail(f"interface {self.ifname} does not exist in this network namespace; interfaces here: "
                      f"{', '.join(names)}")
        try:
            info = ethtool.parse_driver_info(self.eth("-i", self.ifname))
        except ethtool.EthtoolError as exc:
            self.fail(str(exc))
        self.result["driver"] = info.get("driver", "")
        self.result["bus_info"] = info.get("bus-info", "")
        if self.p["pci"] and self.result["bus_info"].lower() != self.p["pci"].lower():
            self.fail(f"{self.ifname} is at PCI address {self.result['bus_info'] or '(none)'} "
                      f"(driver {self.result['driver']}), not {self.p['pci']}: fix pci in the inventory or the "
                      f"interface name")
        if self.p["mac"]:
            mac = self.read_text(os.path.join(self.SYSFS, "class/net", self.ifname, "address")).strip().lower()
            want = self.p["mac"].strip().lower().replace("-", ":")
            if mac != want:
                self.fail(f"{self.ifname} has MAC {mac}, not {want}: fix mac in the inventory or the interface name")

    def plan_channels(self):
        want = {k: v for k, v in (self.p["channels"] or {}).items() if v is not None}
        if not want:
            return None
        try:
            ch = ethtool.parse_channels(self.eth("-l", self.ifname))
        except ethtool.EthtoolUnsupported as exc:
            self.unsupported("channels", f"driver {self.result['driver']}: {exc}")
            return None
        cur, mx = ch.get("current", {}), ch.get("max", {})
        for key, value in want.items():
            if mx.get(key) is None:
                self.fail(f"{self.ifname}: channels.{key}={value} but the device has no {key} channels (maximum n/a "
                          f"in ethtool -l; it offers {', '.join(k for k, v in mx.items() if v) or 'none'})")
            if value > mx[key]:
                self.fail(f"{self.ifname}: channels.{key}={value} exceeds the maximum {mx[key]} "
                          f"(ethtool -l {self.ifname}); lower channels.{key}")
        self.before["channels"] = {k: cur.get(k) for k in want}
        self.after["channels"] = dict(want)
        diff = {k: v for k, v in want.items() if cur.get(k) != v}
        for k, v in diff.items():
            self.drift(f"channels.{k}", v, cur.get(k))
        if diff:
            argv = ["-L", self.ifname, *[x for k, v in diff.items() for x in (k, v)]]
            self.plan(argv, None)
        return {**cur, **want}

    def plan_rings(self):
        want = {k: v for k, v in (self.p["rings"] or {}).items() if v is not None}
        if not want:
            return
        try:
            rings = ethtool.parse_rings(self.eth("-g", self.ifname))
        except ethtool.EthtoolUnsupported as exc:
            self.unsupported("rings", f"driver {self.result['driver']}: {exc}")
            return
        cur, mx = rings.get("current", {}), rings.get("max", {})
        for key, value in want.items():
            top = mx.get(_RING_KEYS[key])
            if top is None or (isinstance(top, int) and value > top):
                self.fail(f"{self.ifname}: rings.{key}={value} exceeds the maximum {top if top is not None else 'n/a'} "
                          f"(ethtool -g {self.ifname}); lower rings.{key}")
            if self.result["driver"] in _POWER_OF_TWO_RINGS and (value < 1 or value & (value - 1)):
                self.fail(f"{self.ifname}: rings.{key}={value}: driver {self.result['driver']} keeps its rings in split "
                          f"virtqueues, whose size is a power of two (it refuses {value} with ENOMEM); use a power "
                          f"of two up to {top}")
        self.before["rings"] = {k: cur.get(_RING_KEYS[k]) for k in want}
        self.after["rings"] = dict(want)
        diff = {k: v for k, v in want.items() if cur.get(_RING_KEYS[k]) != v}
        for k, v in diff.items():
            self.drift(f"rings.{k}", v, cur.get(_RING_KEYS[k]))
        if diff:
            self.plan(["-G", self.ifname, *[x for k, v in diff.items() for x in (_RING_ARGS[k], v)]], None)

    def plan_pause(self):
        want = {k: v for k, v in (self.p["pause"] or {}).items() if v is not None}
        if not want:
            return
        try:
            cur = ethtool.parse_pause(self.eth("-a", self.ifname))
        except ethtool.EthtoolUnsupported as exc:
            self.unsupported("pause", f"driver {self.result['driver']}: {exc}")
            return
        self.before["pause"] = {k: cur.get(_PAUSE_KEYS[k]) for k in want}
        self.after["pause"] = dict(want)
        diff = {k: v for k, v in want.items() if cur.get(_PAUSE_KEYS[k]) != v}
        for k, v in diff.items():
            self.drift(f"pause.{k}", v, cur.get(_PAUSE_KEYS[k]))
        if diff:
            self.plan(["-A", self.ifname, *[x for k, v in diff.items() for x in (k, "on" if v else "off")]], None)

    def plan_private_flags(self):
        want = {k: self.as_bool(v) for k, v in (self.p["private_flags"] or {}).items()}
        if not want:
            return
        try:
            cur = ethtool.parse_priv_flags(self.eth("--show-priv-flags", self.ifname))
        except ethtool.EthtoolUnsupported as exc:
            self.unsupported("private_flags", f"driver {self.result['driver']}: {exc}")
            return
        if not cur:
            self.unsupported("private_flags", f"driver {self.result['driver']} has no private flags "
                                              f"(ethtool --show-priv-flags {self.ifname} lists none)")
            return
        unknown = sorted(set(want) - set(cur))
        if unknown:
            self.fail(f"{self.ifname}: unknown private flag(s) {unknown} for driver {self.result['driver']}; "
                      f"it has: {', '.join(cur)}")
        self.before["private_flags"] = {k: cur[k] for k in want}
        self.after["private_flags"] = dict(want)
        diff = {k: v for k, v in want.items() if cur[k] != v}
        for k, v in diff.items():
            self.drift(f"private_flags.{k}", v, cur[k])
        if diff:
            self.plan(["--set-priv-flags", self.ifname, *[x for k, v in diff.items() for x in (k, "on" if v else "off")]],
                      None)

    def plan_ntuple(self, rx_queues):
        want = self.p["ntuple_rules"] or []
        if not want and not self.p["ntuple_purge"]:
            return
        try:
            rules = ethtool.parse_ntuple(self.eth("-n", self.ifname))
        except ethtool.EthtoolUnsupported as exc:
            self.unsupported("ntuple_rules", f"driver {self.result['driver']}: {exc}")
            return
        if rx_queues is not None:
            bad = [r for r in want if r["queue"] >= rx_queues]
            if bad:
                self.fail(f"{self.ifname}: ntuple_rules steer to queue(s) {sorted({r['queue'] for r in bad})} but the "
                          f"port has {rx_queues} RX queue(s) (after channels); lower the queues or raise channels")
        feats = ethtool.parse_features(self.eth("-k", self.ifname))
        nt = feats.get("ntuple-filters", {"on": False, "fixed": True})
        if not nt["on"]:
            if nt["fixed"]:
                self.unsupported("ntuple_rules", f"driver {self.result['driver']}: ntuple-filters off [fixed]")
                return
            self.drift("features.ntuple-filters", True, False)
            self.plan(["-K", self.ifname, "ntuple", "on"], None)
        fmt = "{flow_type} dst-port {dst_port} -> queue {queue}"
        self.before["ntuple_rules"] = sorted(fmt.format(**r) for r in rules if r["dst_port"] is not None)
        self.after["ntuple_rules"] = sorted(fmt.format(**r) for r in want)
        keep = set()
        for r in want:
            hit = [x for x in rules if ethtool.ntuple_rule_matches(x, r["flow_type"], r["dst_port"], r["queue"])]
            if hit:
                keep.add(hit[0]["loc"])
                continue
            clash = [x for x in rules if x["flow_type"] == r["flow_type"] and x["dst_port"] == r["dst_port"]
                     and x["loc"] not in keep]
            item = f"ntuple.{r['flow_type']}.dst_port={r['dst_port']}"
            self.drift(item, f"queue {r['queue']}",
                       ", ".join(f"rule {x['loc']} -> queue {x['queue']}" for x in clash) or "absent")
            for x in clash:
                keep.add(x["loc"])  # handled here, not purged twice
                self.plan(["-N", self.ifname, "delete", x["loc"]], None)
            self.plan(["-N", self.ifname, "flow-type", r["flow_type"], "dst-port", r["dst_port"], "action", r["queue"]],
                      None)
        if self.p["ntuple_purge"]:
            for x in rules:
                if x["loc"] not in keep:
                    self.drift(f"ntuple.rule{x['loc']}", "absent", fmt.format(**x))
                    self.plan(["-N", self.ifname, "delete", x["loc"]], None)

    def parent_device(self):
        """The netdev's parent device name (/sys/class/net/IF/device): virtioN for virtio-net, the PCI address
        for a PCI NIC; empty when there is none (veth)."""
        link = os.path.join(self.SYSFS, "class/net", self.ifname, "device")
        return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else ""

    def plan_irqs(self):
        want = self.p["irq_affinity"] or []
        if not want:
            return
        driver = self.result["driver"]
        patterns = self.p["irq_name_patterns"] or ethtool.IRQ_NAME_PATTERNS.get(driver)
        extra = [] if self.p["irq_name_patterns"] else ethtool.IRQ_EXTRA_NAME_PATTERNS.get(driver, [])
        if not patterns:
            self.unsupported("irq_affinity", f"driver {driver} has no per-queue IRQs known to this module (virtual "
                                             f"device, or give irq_name_patterns)")
            return
        fields = {"interface": self.ifname, "pci": self.result["bus_info"], "device": self.parent_device()}
        interrupts = ethtool.parse_interrupts(self.read_text(os.path.join(self.PROCFS, "interrupts")))
        queues = max(e["queue"] for e in want) + 1
        irqs = ethtool.queue_irqs(interrupts, patterns, queues, **fields)
        extra_irqs = ethtool.queue_irqs(interrupts, extra, queues, **fields) if extra else {}
        missing = [e["queue"] for e in want if e["queue"] not in irqs]
        if missing:
            names = [pat.format(queue=missing[0], **fields) for pat in patterns]
            why = ""
            if driver == "virtio_net":
                shared = [e["name"] for e in interrupts if e["name"] in (fields["device"], fields["device"] + "-virtqueues")]
                why = ("; virtio-net has one IRQ per queue only when the device has an MSI-X vector per virtqueue "
                       "(qemu: -device virtio-net-pci,vectors= at least 2 x queues + 2)"
                       + (f": {fields['device']} has one for all its queues ({shared[0]})" if shared else ""))
            self.unsupported("irq_affinity", f"no IRQ in /proc/interrupts for queue(s) {missing} of {self.ifname} "
                                             f"(looked for names like {', '.join(names)}){why}")
            want = [e for e in want if e["queue"] in irqs]
        self.before["irq_affinity"], self.after["irq_affinity"] = {}, {}
        pins = [(e, f"queue{e['queue']}", irqs[e["queue"]]) for e in want]
        pins += [(e, f"queue{e['queue']}.tx", extra_irqs[e["queue"]]) for e in want if e["queue"] in extra_irqs]
        for e, label, irq in pins:
            path = os.path.join(self.PROCFS, "irq", str(irq), "smp_affinity_list")
            cur = parse_cpu_list(self.read_text(path))
            wanted = sorted(set(e["cpus"]))
            self.before["irq_affinity"][label] = f"irq {irq}: {format_cpu_list(cur)}"
            self.after["irq_affinity"][label] = f"irq {irq}: {format_cpu_list(wanted)}"
            if cur != wanted:
                self.drift(f"irq_affinity.{label}", format_cpu_list(wanted),
                           f"{format_cpu_list(cur)} (irq {irq})")
                text = format_cpu_list(wanted)
                self.plan(f"echo {text} > {path}", (path, text))

    # -- run ---------------------------------------------------------------------------------------------------
    def apply(self):
        for what, write in self.actions:
            if write is None:
                try:
                    self.eth(*what)
                except ethtool.EthtoolUnsupported as exc:
                    # the driver reads the setting but refuses to change it: say which setting, and why
                    item = _SET_ITEMS.get(what[0], what[0])
                    hint = ethtool.UNSUPPORTED_HINTS.get((self.result["driver"], item), "")
                    self.unsupported(item, f"driver {self.result['driver']} refuses to change it: {exc}"
                                           + (f" ({hint})" if hint else ""))
                    continue
                except ethtool.EthtoolError as exc:
                    self.result["changed"] = True
                    self.fail(f"{exc} (after {len(self.result['commands'])} earlier change(s): "
                              f"{self.result['commands']})")
                self.result["commands"].append(" ".join([self.bin, *map(str, what)]))
            else:
                path, text = write
                try:
                    self.write_text(path, text)
                except OSError as exc:
                    self.result["changed"] = True
                    self.fail(f"cannot write {text} to {path}: {exc} (a managed IRQ keeps the kernel's affinity)")
                self.result["commands"].append(what)
            self.result["changed"] = True

    def describe(self):
        for what, write in self.actions:
            self.result["commands"].append(what if write is not None else " ".join([self.bin, *map(str, what)]))

    def run(self):
        self.validate_input()
        if not self.module.get_bin_path(self.bin) and "/" not in self.bin:
            self.fail(f"{self.bin} not found on the target: install the Debian package ethtool")
        self.identify()
        current = self.plan_channels()
        if current is None and self.p["ntuple_rules"]:
            # not asked to change the channels: validate the rules' queues against the current ones
            try:
                current = ethtool.parse_channels(self.eth("-l", self.ifname)).get("current")
            except ethtool.EthtoolError:
                current = None
        rx_queues = None
        if current is not None:
            rx_queues = (current.get("combined") or 0) + (current.get("rx") or 0) or None
        self.plan_rings()
        self.plan_pause()
        self.plan_private_flags()
        self.plan_ntuple(rx_queues)
        self.plan_irqs()
        if self.p["verify"] or self.module.check_mode:
            self.describe()
            self.result["changed"] = bool(self.actions) and not self.p["verify"]
            self.result["state"] = self.before
        else:
            self.apply()
            self.result["state"] = self.after
        if self.module._diff and self.actions:
            self.result["diff"] = {"before": self.before, "after": self.after}
        return self.result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            pci=dict(type="str"),
            mac=dict(type="str"),
            channels=dict(type="dict", options=dict(combined=dict(type="int"), rx=dict(type="int"),
                                                    tx=dict(type="int"), other=dict(type="int"))),
            rings=dict(type="dict", options=dict(rx=dict(type="int"), tx=dict(type="int"),
                                                 rx_mini=dict(type="int"), rx_jumbo=dict(type="int"))),
            pause=dict(type="dict", options=dict(autoneg=dict(type="bool"), rx=dict(type="bool"),
                                                 tx=dict(type="bool"))),
            private_flags=dict(type="dict"),
            ntuple_rules=dict(type="list", elements="dict", options=dict(
                flow_type=dict(type="str", choices=["udp4", "tcp4", "udp6", "tcp6"], default="udp4"),
                dst_port=dict(type="int", required=True),
                queue=dict(type="int", required=True))),
            ntuple_udp_flows=dict(type="int", default=0),
            ntuple_port_base=dict(type="int", default=12),
            ntuple_purge=dict(type="bool", default=False),
            irq_affinity=dict(type="list", elements="dict", options=dict(
                queue=dict(type="int", required=True),
                cpus=dict(type="list", elements="int", required=True))),
            irq_cpus=dict(type="list", elements="int"),
            irq_name_patterns=dict(type="list", elements="str"),
            unsupported=dict(type="str", choices=["fail", "skip"], default="fail"),
            verify=dict(type="bool", default=False),
            ethtool=dict(type="str", default="ethtool"),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**NicSettings(module).run())


if __name__ == "__main__":
    main()
