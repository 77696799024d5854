#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: host_preflight
short_description: Check, read-only, that a lab host has what its inventory names, before anything changes
version_added: 0.1.0
description:
  - Reads a lab host (a DUT or a traffic generator) and checks it against its inventory settings, before any
    role changes the host. It changes nothing, and runs the same in check mode.
  - Every named interface exists (in O(netns) when given), or is a PCI address present in C(/sys/bus/pci/devices)
    and bound to the named driver; an interface the virtual lab will create (O(interfaces[].planned)) is
    accepted by name.
  - The driver of each interface and its XDP modes (from the kernel's netdev netlink family, C(xdp-features),
    on Linux 6.3 and newer; from a table of drivers otherwise) fit the XDP mode the experiment attaches in.
  - Every CPU named is online, and the CPUs of another host of the experiment (O(peers)) that turns out to be
    this same machine (same C(boot_id)) do not overlap this host's (the virtual lab, where both namespaces are one
    machine).
  - The generator backend fits the ports (V(xdp_live) needs veth ends, V(trex) needs PCI ports and T-Rex
    installed or installable) and the matrix fits the CPUs (its largest core count against the online CPUs
    listed, one more for DPDK's main lcore).
  - "Every problem is returned at once, each naming the host, the field, the value and what exists instead,
    for example C(dut: xdplab_dut_cpus: CPU 7 is not online on dut (online: 0-1))."
author:
  - xdplab.testbed developers (!UNKNOWN)
requirements:
  - Linux; iproute2 C(ip) when O(netns) is given; C(ethtool) for the driver of an interface without a device link.
attributes:
  check_mode:
    support: full
    description: Read-only; runs unchanged in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to diff.
options:
  host:
    description: Inventory name of the host, used in every message.
    type: str
    required: true
  role:
    description: What the host is in the experiment.
    type: str
    choices: [dut, generator]
    required: true
  netns:
    description:
      - Network namespace to look the interfaces up in (as C(ip netns list) shows it), for a host that is a
        namespace of the machine the module runs on (the virtual lab). A namespace that does not exist yet has
        no interfaces; only O(interfaces[].planned) ones pass.
      - Not set, the module looks where it runs.
    type: str
  interfaces:
    description: The host's interfaces and ports.
    type: list
    elements: dict
    default: []
    suboptions:
      field:
        description: Inventory variable that names it (used in messages), for example C(xdplab_dut_interface).
        type: str
        required: true
      name:
        description: An interface name, or a PCI address (C(0000:af:00.0) or C(af:00.0)).
        type: str
        required: true
      driver:
        description: Driver it must be bound to (an interface's or a PCI device's).
        type: str
      driver_field:
        description: Inventory variable that names O(interfaces[].driver); default O(interfaces[].field).
        type: str
      pci:
        description: PCI address the interface must sit on.
        type: str
      pci_field:
        description: Inventory variable that names O(interfaces[].pci); default O(interfaces[].field).
        type: str
      xdp_mode:
        description:
          - XDP attach mode the experiment uses on it (V(native), V(skb) or V(hw)); its driver must support it.
          - Empty or null - no XDP on it.
        type: str
      xdp_mode_field:
        description: Inventory variable that names O(interfaces[].xdp_mode).
        type: str
        default: xdplab_xdp_mode
      planned:
        description:
          - The testbed creates this interface (V(veth) - an end of the virtual lab's veth pair, built by role
            xdplab.testbed.vlab after this check), so it need not exist yet; its driver is then veth.
          - Empty or null - it must exist.
        type: str
  cpus:
    description: CPU lists of the host that must be online.
    type: list
    elements: dict
    default: []
    suboptions:
      field:
        description: Inventory variable (for example C(xdplab_dut_cpus)).
        type: str
        required: true
      cpus:
        description: The CPU numbers.
        type: list
        elements: raw
        required: true
  peers:
    description:
      - CPU lists of the other hosts of the experiment (the DUT's generator) with their O(peers[].identity) as
        this module returned it there. Where the identity is this host's, their CPUs must not overlap the
        O(cpus) of this host.
    type: list
    elements: dict
    default: []
    suboptions:
      host:
        description: Inventory name of the other host.
        type: str
        required: true
      field:
        description: Inventory variable of its CPUs.
        type: str
        required: true
      cpus:
        description: Its CPUs.
        type: list
        elements: raw
        required: true
      identity:
        description: RV(identity) of the other host (C(boot_id), C(machine_id), C(hostname)).
        type: dict
        required: true
  backend:
    description:
      - The generator backend (role V(generator)), checked against the ports in O(interfaces).
      - V(xdp_live) needs veth ends; V(trex) needs PCI ports and T-Rex in O(trex).
    type: str
  backend_field:
    description: Inventory variable of O(backend).
    type: str
    default: xdplab_generator_backend
  trex:
    description: Where T-Rex is (or would be installed), and whether role xdplab.testbed.trex could install it.
    type: dict
    suboptions:
      dir:
        description: T-Rex directory; installed means C(DIR/t-rex-64) exists.
        type: path
        required: true
      installable:
        description: Whether role xdplab.testbed.trex can install it (an archive and its sha256 are given).
        type: bool
        default: false
      why_not:
        description: Why it cannot be installed (shown when it is neither installed nor installable).
        type: str
        default: ""
      version:
        description:
          - The release (C(v3.04)); with O(trex.python) the interpreter is asked its version and refused when that
            release's client does not import on it (v2.88..v3.07 up to Python 3.11, v3.08 up to 3.12).
        type: str
      python:
        description: The interpreter the runner and the T-Rex client run on (backend option C(python), role C(trex_python)).
        type: path
  matrix:
    description:
      - The largest core count of each system in the experiment's matrix (role V(dut)), checked against the
        online CPUs of O(matrix.cpus); a DPDK system needs one more for its main lcore.
    type: dict
    suboptions:
      field:
        description: Inventory variable of the DUT CPUs.
        type: str
        default: xdplab_dut_cpus
      cpus:
        description: The DUT CPUs.
        type: list
        elements: raw
        required: true
      axes:
        description:
          - The experiment's matrix itself (a mapping of axes to lists, or a list of them); with O(matrix.impls)
            it gives the largest core count of each system, added to O(matrix.systems).
        type: raw
      impls:
        description: System name -> its implementation (C(impl) of each of C(experiment_systems)).
        type: dict
        default: {}
      systems:
        description: One entry per system of the matrix (the same system may come more than once; its largest counts).
        type: list
        elements: dict
        default: []
        suboptions:
          system:
            description: Name of the system (for example V(dpdk_vector)).
            type: str
            required: true
          impl:
            description: Its implementation (V(xdp), V(dpdk), V(af_xdp), V(linux)); V(dpdk) needs the main lcore.
            type: str
            required: true
          cores:
            description: Largest number of cores the matrix runs it on.
            type: int
            required: true
      dpdk_main_lcore:
        description: CPU of testpmd's main lcore (C(xdplab_dpdk_main_lcore)).
        type: int
        default: 0
  port_lists:
    description:
      - Lists of ports from the inventory, each item checked as O(interfaces) are and named C(FIELD[i]) in messages.
      - An item is a string (an interface name or a PCI address, as in C(xdplab_generator_ports)) or a mapping with
        C(name), C(pci) and C(driver) (as in C(xdplab_dut_ports)); a mapping with C(pci) is checked as that PCI device
        bound to C(driver), and when an entry of O(interfaces) has its C(name), that interface must sit on C(pci).
    type: list
    elements: dict
    default: []
    suboptions:
      field:
        description: Inventory variable of the list (for example C(xdplab_dut_ports)).
        type: str
        required: true
      ports:
        description: Its items.
        type: list
        elements: raw
        required: true
  kernel_features:
    description:
      - Kernel features the host must have, by name, on top of those its role implies. What O(backend)
        (V(xdp_live) needs C(live_frames) and C(global_data)) and O(matrix) (impl V(af_xdp) needs C(xskmap),
        C(xsk_need_wakeup) and C(global_data), XDP action V(redirect) C(global_data)) need is checked without being
        listed here.
      - "Names: C(btf), C(global_data) (5.2), C(live_frames) (5.18), C(xsk_need_wakeup) (5.3), C(devmap), C(cpumap),
        C(xskmap), C(redirect_map_broadcast) (5.14), C(bpf_stats) (5.8). Probed where a probe is cheap (a path, a
        4-instruction program, a map, one C(BPF_PROG_RUN)), else from the kernel release; docs/KERNEL.md has the
        table."
      - A kernel that lacks one is a problem naming the feature, the release it came in and what needs it.
    type: list
    elements: str
    default: []
  fail_on_problems:
    description:
      - V(true) fails the task when there is any problem (all of them in the message). V(false) returns them in
        RV(problems) and RV(errors) without failing, so a play can gather the problems of several hosts and
        fail once.
    type: bool
    default: true
notes:
  - "A veth end reports the netdev xdp-feature C(basic) (native XDP) on Linux 6.18; C(lo) reports none; generic
    (skb) XDP works on every device."
seealso:
  - module: xdplab.testbed.testbed_facts
  - module: xdplab.testbed.vlab_topology
"""

EXAMPLES = r"""
- name: The DUT has what its inventory names (read-only)
  xdplab.testbed.host_preflight:
    host: "{{ inventory_hostname }}"
    role: dut
    interfaces:
      - field: xdplab_dut_interface
        name: "{{ xdplab_dut_interface }}"
        xdp_mode: "{{ xdplab_xdp_mode }}"
    cpus:
      - field: xdplab_dut_cpus
        cpus: "{{ xdplab_dut_cpus }}"
    matrix:
      cpus: "{{ xdplab_dut_cpus }}"
      systems: [{system: xdp, impl: xdp, cores: 6}, {system: dpdk_vector, impl: dpdk, cores: 5}]
      dpdk_main_lcore: 0

- name: The virtual lab's generator, looked at from the controller before the lab exists
  xdplab.testbed.host_preflight:
    host: tg
    role: generator
    netns: xdplab-tg
    interfaces:
      - {field: xdplab_generator_interface, name: veth-tg0, planned: veth}
    cpus:
      - {field: xdplab_generator_cpus, cpus: [0]}
    backend: xdp_live
    fail_on_problems: false
  delegate_to: localhost
  register: generator_preflight
"""

RETURN = r"""
kernel:
  description: The kernel release and the features that were checked (true/false), with how each was detected.
  returned: always
  type: dict
  sample: {release: 4.17.0-rc7, features: {live_frames: false}, how: {live_frames: "probe: BPF_PROG_RUN ..."}}
problems:
  description: Every problem found, as data.
  returned: always
  type: list
  elements: dict
  contains:
    host:
      description: O(host).
      type: str
      returned: always
    field:
      description: The inventory variable that is wrong.
      type: str
      returned: always
    value:
      description: Its value, as text.
      type: str
      returned: always
    message:
      description: "The whole message, C(HOST: FIELD: what is wrong (what exists instead))."
      type: str
      returned: always
  sample: [{host: dut, field: xdplab_dut_cpus, value: "7",
            message: "dut: xdplab_dut_cpus: CPU 7 is not online on dut (online: 0-1)"}]
errors:
  description: The messages of RV(problems), in order.
  returned: always
  type: list
  elements: str
  sample: ["dut: xdplab_dut_interface: ens1f0 does not exist (interfaces: lo, veth-dut0)"]
identity:
  description: What tells this machine from another, to find hosts that are the same machine.
  returned: always
  type: dict
  contains:
    boot_id:
      description: C(/proc/sys/kernel/random/boot_id) (one per kernel boot, the same in every namespace).
      type: str
      returned: always
    machine_id:
      description: C(/etc/machine-id), empty when there is none.
      type: str
      returned: always
    hostname:
      description: The kernel's host name (of the UTS namespace the module runs in).
      type: str
      returned: always
  sample: {boot_id: 297bf591-8d52-42cf-8377-6095947d0609, machine_id: 3d1219c7c4c5404aaa1f6d2a48adfda4, hostname: lab1}
online_cpus:
  description: The online CPUs of the host.
  returned: always
  type: list
  elements: int
  sample: [0, 1]
interfaces:
  description: What was found for each entry of O(interfaces).
  returned: always
  type: list
  elements: dict
  contains:
    field:
      description: O(interfaces[].field).
      type: str
      returned: always
    name:
      description: O(interfaces[].name) (a PCI address normalised to C(DDDD:BB:DD.F)).
      type: str
      returned: always
    kind:
      description: V(netdev), V(pci) or V(planned).
      type: str
      returned: always
    exists:
      description: Whether it exists now.
      type: bool
      returned: always
    driver:
      description: Its driver, null when unknown or absent.
      type: str
      returned: always
    pci:
      description: PCI address of the device, null for a virtual interface.
      type: str
      returned: always
    xdp_modes:
      description: XDP modes its driver supports (V(native), V(skb), V(hw)); empty for a PCI port without an interface.
      type: list
      elements: str
      returned: always
    xdp_source:
      description: Where RV(interfaces[].xdp_modes) comes from, V(netlink) (the kernel's xdp-features), V(table) or null.
      type: str
      returned: always
  sample: [{field: xdplab_dut_interface, name: veth-dut0, kind: netdev, exists: true, driver: veth, pci: null,
            xdp_modes: [native, skb], xdp_source: netlink}]
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _kernel_features as kfeatures
from ansible_collections.xdplab.testbed.plugins.module_utils import _vlab_netlink as netlink
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, format_cpu_list, parse_cpu_list
from ansible_collections.xdplab.testbed.plugins.module_utils._trex import TrexError
from ansible_collections.xdplab.testbed.plugins.module_utils._trex import check_python as trex_check_python

PCI_RE = re.compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
# what an interpreter prints when asked its (major, minor)
PYTHON_VERSION_CODE = "import sys; print('%d.%d' % sys.version_info[:2])"
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")

# Drivers with native (driver-mode) XDP in mainline Linux, for kernels without the netdev family's
# xdp-features (before 6.3). Generic (skb) XDP works on every device; offload (hw) only on nfp (and netdevsim).
NATIVE_XDP_DRIVERS = frozenset(
    [
        "veth",
        "virtio_net",
        "tun",
        "mlx5_core",
        "mlx4_en",
        "i40e",
        "ice",
        "ixgbe",
        "ixgbevf",
        "igb",
        "igc",
        "bnxt_en",
        "nfp",
        "qede",
        "sfc",
        "sfc_ef100",
        "ena",
        "nicvf",
        "thunder-nicvf",
        "dpaa2-eth",
        "dpaa_eth",
        "enetc",
        "fec",
        "mvneta",
        "mvpp2",
        "stmmac",
        "netsec",
        "hv_netvsc",
        "bonding",
        "xen-netfront",
        "tsnep",
        "am65-cpsw-nuss",
        "cpsw",
        "lan966x-switch",
        "mtk_soc_eth",
        "octeontx2-nicpf",
        "gve",
        "funeth",
        "atlantic",
    ]
)
HW_XDP_DRIVERS = frozenset(["nfp", "netdevsim"])
MAX_LISTED = 8


def pci_address(value):
    """'af:00.0' or '0000:AF:00.0' -> '0000:af:00.0'; None for anything that is not a PCI address."""
    m = PCI_RE.match(str(value).strip())
    if not m:
        return None
    domain, bus, dev, fn = m.groups()
    return f"{(domain or '0000').lower()}:{bus.lower()}:{dev.lower()}.{fn}"


def cpu_words(cpus):
    """[7] -> 'CPU 7 is', [2..7] -> 'CPUs 2-7 are'."""
    return f"CPU {cpus[0]} is" if len(cpus) == 1 else f"CPUs {format_cpu_list(cpus)} are"


def listing(names, none="none"):
    """Up to MAX_LISTED names, then how many there are in all."""
    names = list(names)
    if not names:
        return none
    if len(names) <= MAX_LISTED:
        return ", ".join(names)
    return ", ".join(names[:MAX_LISTED]) + f", ... ({len(names)} in all)"


def same_machine(mine, theirs):
    """Two identities are one machine when their boot_id (else their machine-id) is the same."""
    for key in ("boot_id", "machine_id"):
        a, b = (mine or {}).get(key), (theirs or {}).get(key)
        if a and b:
            return a == b
    return False


def matrix_systems(matrix):
    """[{system, impl, cores}]: the largest core count of each system, from O(matrix.systems) and O(matrix.axes)."""
    largest = {}
    for entry in matrix.get("systems") or []:
        key = (entry["system"], entry["impl"])
        largest[key] = max(largest.get(key, 0), int(entry["cores"]))
    axes = matrix.get("axes")
    subs = axes if isinstance(axes, list) else [axes] if axes else []
    impls = matrix.get("impls") or {}
    for sub in subs:
        if not isinstance(sub, dict):
            continue
        cores = [int(c) for c in sub.get("cores") or [] if str(c).strip().isdigit()]
        for system in sub.get("system") or []:
            if cores:
                key = (str(system), str(impls.get(system, "")))
                largest[key] = max(largest.get(key, 0), *cores)
    return [{"system": s, "impl": i, "cores": c} for (s, i), c in largest.items()]


# the drivers xdp_live (bpf/xdp_trafficgen: BPF_PROG_RUN live frames redirected to the port) sends through: veth (the
# virtual lab) and virtio_net (the VM lab; xdplab-trafficgen 0.4.1 attaches a pass-through program to the port, which
# virtio_net's ndo_xdp_xmit needs)
XDP_LIVE_DRIVERS = ("veth", "virtio_net")


class HostPreflight:
    """Reads the host (sysfs, procfs, netlink, ip/ethtool) and collects every problem; changes nothing."""

    def __init__(self, params, run_command=None, root="/"):
        self.params = params
        self.host = params["host"]
        self.root = root
        self._run_command = run_command
        self.problems = []
        self.result_interfaces = []
        self._netdevs = None

    # ---- reading the host
    def path(self, *parts):
        return os.path.join(self.root, *(p.lstrip("/") for p in parts))

    def read(self, *parts, default=""):
        try:
            with open(self.path(*parts), encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return default

    def run(self, argv):
        """(rc, stdout) of a read-only command; (127, '') when it cannot run here."""
        if self._run_command is None:
            return 127, ""
        rc, out, _err = self._run_command(argv)
        return rc, out or ""

    def identity(self):
        return {
            "boot_id": self.read("/proc/sys/kernel/random/boot_id"),
            "machine_id": self.read("/etc/machine-id"),
            "hostname": self.read("/proc/sys/kernel/hostname"),
        }

    def online_cpus(self):
        try:
            return parse_cpu_list(self.read("/sys/devices/system/cpu/online"))
        except CpuListError:
            return []

    def netns_exists(self):
        ns = self.params.get("netns")
        return bool(ns) and os.path.exists(self.path(netlink.NETNS_RUN_DIR, ns))

    def netdevs(self):
        """{name: ifindex} of the interfaces where the host's interfaces live."""
        if self._netdevs is None:
            ns = self.params.get("netns")
            found = {}
            if ns:
                if self.netns_exists():
                    rc, out = self.run(["ip", "-n", ns, "-o", "link", "show"])
                    for m in re.finditer(r"^(\d+):\s+([^:@\s]+)[@:]", out if rc == 0 else "", re.M):
                        found[m.group(2)] = int(m.group(1))
            else:
                try:
                    names = os.listdir(self.path("/sys/class/net"))
                except OSError:
                    names = []
                for name in names:
                    text = self.read("/sys/class/net", name, "ifindex")
                    found[name] = int(text) if text.isdigit() else None
            self._netdevs = found
        return self._netdevs

    def ethtool_info(self, ifname):
        """{driver, bus-info} from ethtool -i (in O(netns) when given); {} without ethtool."""
        ns = self.params.get("netns")
        argv = ["ethtool", "-i", ifname]
        if ns:
            argv = ["ip", "netns", "exec", ns, *argv]
        rc, out = self.run(argv)
        if rc != 0:
            return {}
        return dict(re.findall(r"^([a-z-]+):[ \t]*(.*?)\s*$", out, re.M))

    def netdev_driver_and_pci(self, ifname):
        """(driver, pci address) of an interface: its sysfs device link, else ethtool -i."""
        if not self.params.get("netns"):
            device = self.path("/sys/class/net", ifname, "device")
            if os.path.exists(device):
                driver_link = os.path.join(device, "driver")
                driver = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None
                pci = None
                for part in reversed(os.path.realpath(device).split(os.sep)):
                    pci = pci_address(part)
                    if pci:
                        break
                if driver:
                    return driver, pci
        info = self.ethtool_info(ifname)
        return info.get("driver") or None, pci_address(info.get("bus-info", "")) if info.get("bus-info") else None

    def xdp_modes(self, ifname, ifindex, driver):
        """(modes, source): the XDP modes the interface supports and where that is known from."""
        features = None
        if ifindex and self.root == "/":
            try:
                features = netlink.xdp_features(ifindex, self.params.get("netns") if self.netns_exists() else None)
            except OSError:
                features = None
        return self.modes_from(features, driver)

    @staticmethod
    def modes_from(features, driver):
        if features is not None:
            modes = (["native"] if "basic" in features else []) + ["skb"] + (["hw"] if "hw-offload" in features else [])
            return modes, "netlink"
        if driver:
            modes = (["native"] if driver in NATIVE_XDP_DRIVERS else []) + ["skb"] + (["hw"] if driver in HW_XDP_DRIVERS else [])
            return modes, "table"
        return ["skb"], None

    def pci_child_drivers(self, address):
        """Drivers of the devices a PCI function carries on another bus: a virtio PCI device (driver virtio-pci) has a
        virtio device (virtioN) whose driver (virtio_net) names its network interface."""
        base = self.path("/sys/bus/pci/devices", address)
        try:
            names = sorted(n for n in os.listdir(base) if n.startswith("virtio"))
        except OSError:
            return []
        out = []
        for name in names:
            link = os.path.join(base, name, "driver")
            if os.path.exists(link):
                out.append(os.path.basename(os.path.realpath(link)))
        return out

    def pci_devices(self):
        """{address: (class, driver)} of /sys/bus/pci/devices."""
        base = self.path("/sys/bus/pci/devices")
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return {}
        devices = {}
        for name in names:
            link = os.path.join(base, name, "driver")
            driver = os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None
            devices[name] = (self.read("/sys/bus/pci/devices", name, "class"), driver)
        return devices

    # ---- problems
    def problem(self, field, value, text):
        message = f"{self.host}: {field}: {text}"
        if any(p["message"] == message for p in self.problems):
            return
        self.problems.append({"host": self.host, "field": field, "value": str(value), "message": message})

    def where(self):
        ns = self.params.get("netns")
        return f"in namespace {ns} on {self.host}" if ns else f"on {self.host}"

    def check_interface(self, entry):
        field, value = entry["field"], entry["name"]
        entry = dict(entry, planned=entry.get("planned") or None, xdp_mode=entry.get("xdp_mode") or None)
        if entry["planned"] not in (None, "veth"):
            self.problem(field, value, f"planned must be veth or empty, got {entry['planned']!r}")
            entry["planned"] = None
        if entry["xdp_mode"] not in (None, "native", "skb", "hw"):
            mode_field = entry.get("xdp_mode_field") or "xdplab_xdp_mode"
            self.problem(mode_field, entry["xdp_mode"], f"{entry['xdp_mode']!r} is not an XDP mode (native, skb or hw)")
            entry["xdp_mode"] = None
        pci = pci_address(value)
        if pci:
            return self.check_pci_port(entry, pci)
        found = {"field": field, "name": value, "kind": "netdev", "exists": False, "driver": None, "pci": None,
                 "xdp_modes": [], "xdp_source": None}  # fmt: skip
        self.result_interfaces.append(found)
        if not IFNAME_RE.match(str(value)):
            self.problem(field, value, f"{value!r} is neither an interface name (at most 15 characters) nor a PCI address")
            return
        netdevs = self.netdevs()
        if value not in netdevs:
            if entry.get("planned") == "veth":
                found.update(kind="planned", driver="veth")
                found["xdp_modes"], found["xdp_source"] = self.modes_from(None, "veth")
                self.check_xdp_mode(entry, found)
                return
            ns = self.params.get("netns")
            if ns and not self.netns_exists():
                self.problem(field, value, f"{value} does not exist: namespace {ns} does not exist on {self.host}")
            else:
                self.problem(field, value, f"{value} does not exist {self.where()} (interfaces: {listing(sorted(netdevs))})")
            return
        driver, dev_pci = self.netdev_driver_and_pci(value)
        modes, source = self.xdp_modes(value, netdevs[value], driver)
        found.update(exists=True, driver=driver, pci=dev_pci, xdp_modes=modes, xdp_source=source)
        if entry.get("planned") == "veth" and driver not in (None, "veth"):
            self.problem(
                field, value, f"{value} exists {self.where()} with driver {driver}, but the virtual lab makes it a veth end"
            )
        if entry.get("driver") and driver != entry["driver"]:
            self.problem(
                entry.get("driver_field") or field,
                entry["driver"],
                f"{value} has driver {driver or 'unknown'}, not {entry['driver']}",
            )
        if entry.get("pci"):
            want = pci_address(entry["pci"])
            if want is None:
                self.problem(
                    entry.get("pci_field") or field, entry["pci"], f"{entry['pci']!r} is not a PCI address (e.g. 0000:af:00.0)"
                )
            elif want != dev_pci:
                self.problem(
                    entry.get("pci_field") or field,
                    entry["pci"],
                    f"{value} is {'PCI device ' + dev_pci if dev_pci else 'not a PCI device'}, not {want}",
                )
        self.check_xdp_mode(entry, found)

    def check_xdp_mode(self, entry, found):
        mode = entry.get("xdp_mode")
        if mode and mode not in found["xdp_modes"]:
            self.problem(
                entry.get("xdp_mode_field") or "xdplab_xdp_mode",
                mode,
                f"{mode} XDP is not supported by driver {found['driver'] or 'unknown'} of {found['name']} on {self.host} "
                f"(XDP modes there: {', '.join(found['xdp_modes'])})",
            )

    def check_pci_port(self, entry, pci):
        field = entry["field"]
        found = {"field": field, "name": pci, "kind": "pci", "exists": False, "driver": None, "pci": pci,
                 "xdp_modes": [], "xdp_source": None}  # fmt: skip
        self.result_interfaces.append(found)
        devices = self.pci_devices()
        if pci not in devices:
            network = [f"{a} ({d or 'no driver'})" for a, (cls, d) in devices.items() if cls.startswith("0x02")]
            self.problem(
                field,
                entry["name"],
                f"PCI device {pci} is not present in /sys/bus/pci/devices on {self.host} (network devices: {listing(network)})",
            )
            return
        _cls, driver = devices[pci]
        children = self.pci_child_drivers(pci)
        found.update(exists=True, driver=driver)
        if entry.get("driver") and entry["driver"] != driver and entry["driver"] not in children:
            on = f" (its virtio device: {', '.join(children)})" if children else ""
            self.problem(
                entry.get("driver_field") or field,
                entry["driver"],
                f"PCI device {pci} is bound to {driver or 'no driver'}{on}, not {entry['driver']}",
            )

    def check_cpus(self, online):
        mine = []
        for entry in self.params.get("cpus") or []:
            numbers, bad = [], []
            for cpu in entry["cpus"]:
                text = str(cpu).strip()
                (numbers if text.isdigit() else bad).append(int(text) if text.isdigit() else cpu)
            if bad:
                words = "is not a CPU number" if len(bad) == 1 else "are not CPU numbers"
                self.problem(entry["field"], bad, f"{', '.join(repr(b) for b in bad)} {words} (whole numbers, e.g. [1, 2])")
            offline = sorted(set(c for c in numbers if c not in online))
            if offline:
                self.problem(
                    entry["field"],
                    format_cpu_list(offline),
                    f"{cpu_words(offline)} not online on {self.host} (online: {format_cpu_list(online) or 'none'})",
                )
            mine.append((entry["field"], set(numbers)))
        return mine

    def check_peers(self, identity, mine, online):
        for peer in self.params.get("peers") or []:
            if not same_machine(identity, peer["identity"]):
                continue
            theirs = {int(c) for c in peer["cpus"] if str(c).strip().isdigit()}
            for field, cpus in mine:
                shared = sorted(cpus & theirs)
                if shared:
                    self.problem(
                        field,
                        format_cpu_list(shared),
                        f"{cpu_words(shared)} also in {peer['host']}'s {peer['field']} ({format_cpu_list(theirs)}), and "
                        f"{self.host} and {peer['host']} are one machine (same boot_id); give them disjoint CPUs "
                        f"(online: {format_cpu_list(online)})",
                    )

    def check_backend(self):
        backend = self.params.get("backend")
        if self.params["role"] != "generator" or not backend:
            return
        field = self.params.get("backend_field") or "xdplab_generator_backend"
        ports = self.result_interfaces
        if backend == "xdp_live":
            for port in ports:
                if port["kind"] == "pci":
                    if not port["exists"] or set(self.pci_child_drivers(port["pci"])) & set(XDP_LIVE_DRIVERS):
                        continue
                    self.problem(
                        field,
                        backend,
                        f"xdp_live sends through a veth end or a virtio_net port, but {port['field']} is PCI device "
                        f"{port['name']} (a PCI port needs backend trex)",
                    )
                elif (port["exists"] or port["kind"] == "planned") and port["driver"] not in XDP_LIVE_DRIVERS:
                    self.problem(
                        field,
                        backend,
                        f"xdp_live sends through a veth end or a virtio_net port, but {port['field']} {port['name']} has "
                        f"driver {port['driver'] or 'unknown'} (a NIC port needs backend trex)",
                    )
        elif backend == "trex":
            for port in ports:
                if port["kind"] != "pci":
                    what = (
                        "a veth end of the virtual lab"
                        if port["kind"] == "planned" or port["driver"] == "veth"
                        else "an interface"
                    )
                    self.problem(
                        field,
                        backend,
                        f"trex drives PCI ports through DPDK, but {port['field']} {port['name']} is {what}, not a PCI address"
                        + ("; the virtual lab's generator is xdp_live" if "virtual lab" in what else ""),
                    )
            trex = self.params.get("trex") or {}
            if trex.get("dir"):
                binary = os.path.join(trex["dir"], "t-rex-64")
                if not os.path.exists(self.path(binary)) and not trex.get("installable"):
                    why = f": {trex['why_not']}" if trex.get("why_not") else ""
                    self.problem(
                        field, backend, f"T-Rex is not installed on {self.host} (no {binary}) and cannot be installed{why}"
                    )
            if trex.get("version") and trex.get("python"):
                self.check_trex_python(field, backend, trex["version"], trex["python"])

    def check_trex_python(self, field, backend, version, python):
        """The T-Rex client of `version` imports on `python` (asked its version here, before any trial)."""
        rc, out = self.run([python, "-c", PYTHON_VERSION_CODE])
        match = re.match(r"^(\d+)\.(\d+)$", out.strip())
        if rc != 0 or not match:
            self.problem(field, backend, f"the T-Rex runner's Python {python} does not run on {self.host} (rc {rc})")
            return
        try:
            trex_check_python(version, (int(match.group(1)), int(match.group(2))), python)
        except TrexError as exc:
            self.problem(field, backend, f"on {self.host}: {exc}")

    def check_matrix(self, online):
        matrix = self.params.get("matrix")
        if not matrix:
            return
        field = matrix.get("field") or "xdplab_dut_cpus"
        listed = [int(c) for c in matrix["cpus"] if str(c).strip().isdigit()]
        usable = [c for c in listed if c in online]
        main = matrix.get("dpdk_main_lcore")
        main = 0 if main is None else int(main)
        for entry in matrix_systems(matrix):
            cores, system = int(entry["cores"]), entry["system"]
            if entry["impl"] == "dpdk":
                if main not in online:
                    self.problem("xdplab_dpdk_main_lcore", main, f"CPU {main} (DPDK's main lcore) is not online on {self.host} "
                                 f"(online: {format_cpu_list(online)})")  # fmt: skip
                forwarding = [c for c in usable if c != main]
                if cores > len(forwarding):
                    main_is = "takes one of them" if main in usable else f"runs on CPU {main}"
                    self.problem(
                        "cores",
                        cores,
                        f"the matrix runs {system} on up to {cores} cores, but DPDK has only {len(forwarding)} online CPU(s) "
                        f"of {field} ({format_cpu_list(listed) or 'none'}) to forward on, on {self.host}: its main lcore "
                        f"(xdplab_dpdk_main_lcore: {main}) {main_is} (online: {format_cpu_list(online)})",
                    )
            elif cores > len(usable):
                self.problem(
                    "cores",
                    cores,
                    f"the matrix runs {system} on up to {cores} cores, but only {len(usable)} of {field} "
                    f"({format_cpu_list(listed) or 'none'}) are online on {self.host} (online: {format_cpu_list(online)})",
                )

    def matrix_actions(self):
        axes = (self.params.get("matrix") or {}).get("axes")
        subs = axes if isinstance(axes, list) else [axes] if axes else []
        return sorted({str(a) for sub in subs if isinstance(sub, dict) for a in sub.get("action") or []})

    def check_kernel(self, kernel=None):
        """Every feature the host's role, backend and matrix need (and O(kernel_features)), named when missing."""
        wanted = [(name, "the inventory (kernel_features)") for name in self.params.get("kernel_features") or []]
        if self.params["role"] == "generator":
            wanted += kfeatures.needed(backend=self.params.get("backend"))
        elif self.params.get("matrix"):
            impls = sorted({e["impl"] for e in matrix_systems(self.params["matrix"])})
            wanted += kfeatures.needed(impls=impls, actions=self.matrix_actions())
        kernel = kernel or kfeatures.KernelFeatures(release=self.read("/proc/sys/kernel/osrelease") or None, root=self.root)
        users = {}
        for name, by in wanted:
            if name not in kfeatures.FEATURES:
                self.problem("kernel_features", name, f"unknown kernel feature {name}; known: {', '.join(kfeatures.FEATURES)}")
                continue
            users.setdefault(name, []).append(by)
        for name, by in users.items():
            if not kernel.has(name):
                self.problem(
                    "kernel",
                    kernel.release,
                    f"{kernel.release} lacks {kfeatures.describe(name)} ({kernel.how[name]}), "
                    f"which {' and '.join(dict.fromkeys(by))} need(s): boot a newer kernel (role xdplab.testbed.kernel)",
                )
        return kernel.report()

    # ---- the work
    def port_entries(self):
        """O(interfaces), then O(port_lists) as entries of the same shape (field FIELD[i], FIELD[i].pci, ...)."""
        entries = [dict(e) for e in self.params.get("interfaces") or []]
        by_name = {e["name"]: e for e in entries}
        for plist in self.params.get("port_lists") or []:
            for i, item in enumerate(plist["ports"] or []):
                field = f"{plist['field']}[{i}]"
                if not isinstance(item, dict):
                    if str(item) not in by_name:
                        entries.append({"field": field, "name": str(item)})
                    continue
                name, pci, driver = item.get("name"), item.get("pci"), item.get("driver")
                if pci:
                    entries.append(
                        {"field": f"{field}.pci", "name": str(pci), "driver": driver, "driver_field": f"{field}.driver"}
                    )
                    if name in by_name and not by_name[name].get("pci"):
                        by_name[name].update(pci=str(pci), pci_field=f"{field}.pci")
                elif name and name not in by_name:
                    entries.append(
                        {"field": f"{field}.name", "name": str(name), "driver": driver, "driver_field": f"{field}.driver"}
                    )
        return entries

    def run_checks(self):
        identity = self.identity()
        online = self.online_cpus()
        for entry in self.port_entries():
            self.check_interface(entry)
        mine = self.check_cpus(online)
        self.check_peers(identity, mine, online)
        self.check_backend()
        self.check_matrix(online)
        kernel = self.check_kernel()
        return {
            "kernel": kernel,
            "changed": False,
            "problems": self.problems,
            "errors": [p["message"] for p in self.problems],
            "identity": identity,
            "online_cpus": online,
            "interfaces": self.result_interfaces,
        }


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "role": {"type": "str", "required": True, "choices": ["dut", "generator"]},
            "netns": {"type": "str"},
            "interfaces": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "field": {"type": "str", "required": True},
                    "name": {"type": "str", "required": True},
                    "driver": {"type": "str"},
                    "driver_field": {"type": "str"},
                    "pci": {"type": "str"},
                    "pci_field": {"type": "str"},
                    "xdp_mode": {"type": "str"},
                    "xdp_mode_field": {"type": "str", "default": "xdplab_xdp_mode"},
                    "planned": {"type": "str"},
                },
            },
            "cpus": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "field": {"type": "str", "required": True},
                    "cpus": {"type": "list", "elements": "raw", "required": True},
                },
            },
            "peers": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "host": {"type": "str", "required": True},
                    "field": {"type": "str", "required": True},
                    "cpus": {"type": "list", "elements": "raw", "required": True},
                    "identity": {"type": "dict", "required": True},
                },
            },
            "backend": {"type": "str"},
            "backend_field": {"type": "str", "default": "xdplab_generator_backend"},
            "trex": {
                "type": "dict",
                "options": {
                    "dir": {"type": "path", "required": True},
                    "installable": {"type": "bool", "default": False},
                    "why_not": {"type": "str", "default": ""},
                    "version": {"type": "str"},
                    "python": {"type": "path"},
                },
            },
            "matrix": {
                "type": "dict",
                "options": {
                    "field": {"type": "str", "default": "xdplab_dut_cpus"},
                    "cpus": {"type": "list", "elements": "raw", "required": True},
                    "axes": {"type": "raw"},
                    "impls": {"type": "dict", "default": {}},
                    "systems": {
                        "type": "list",
                        "elements": "dict",
                        "default": [],
                        "options": {
                            "system": {"type": "str", "required": True},
                            "impl": {"type": "str", "required": True},
                            "cores": {"type": "int", "required": True},
                        },
                    },
                    "dpdk_main_lcore": {"type": "int", "default": 0},
                },
            },
            "port_lists": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "field": {"type": "str", "required": True},
                    "ports": {"type": "list", "elements": "raw", "required": True},
                },
            },
            "kernel_features": {"type": "list", "elements": "str", "default": []},
            "fail_on_problems": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )

    def run_command(argv):
        binary = module.get_bin_path(argv[0])
        if binary is None:
            return 127, "", f"{argv[0]} not found"
        return module.run_command([binary, *argv[1:]])

    result = HostPreflight(module.params, run_command=run_command).run_checks()
    if result["errors"] and module.params["fail_on_problems"]:
        module.fail_json(msg=f"{len(result['errors'])} problem(s): " + " | ".join(result["errors"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
