#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pci_driver
short_description: Bind a PCI device to a user-space driver for DPDK and give it back to its kernel driver
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - V(bound) binds the device at O(address) to O(driver) (V(vfio-pci) or V(uio_pci_generic)) through sysfs, as
    C(dpdk-devbind.py) does (C(driver_override), unbind, C(drivers_probe)), after loading the driver's module. The
    driver the device had before (for example V(virtio-pci)) and its network interfaces are written to a record
    in O(record_dir), once, so a second bind keeps the first record.
  - V(restored) binds the device back to the driver of its record (or O(driver) when there is no record), waits
    up to O(timeout) seconds for the kernel's network interfaces of the record to come back, and removes the
    record. No record and O(driver) unset is no change.
  - Refuses, before any change, an address that is not a PCI address or not on the host, and a device whose
    interface carries the host's IPv4 default route (binding it would cut the connection Ansible uses).
  - Role M(xdplab.testbed.dpdk) runs it (entry points C(bind) and C(unbind), and its C(teardown)).
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Reports what it would bind and changes nothing.
  diff_mode:
    support: none
    description: No diff; the result names the drivers before and after.
options:
  address:
    description: PCI address of the device, C(domain:bus:slot.function) (for example C(0000:00:04.0)).
    type: str
    required: true
  state:
    description: V(bound) to O(driver), or V(restored) to the driver the record names.
    type: str
    choices: [bound, restored]
    default: bound
  driver:
    description:
      - With V(bound) the user-space driver (required). With V(restored) the kernel driver to bind when there
        is no record (for example V(virtio-pci)); unset, a device without a record is left as it is.
    type: str
  vfio_noiommu:
    description:
      - With O(driver=vfio-pci) on a host without an IOMMU (a VM without a virtual IOMMU), turn on vfio's
        C(enable_unsafe_noiommu_mode) first. Without it such a device is refused with a message naming this option
        and V(uio_pci_generic). A kernel built without C(CONFIG_VFIO_NOIOMMU) (Debian 12's) is refused before any
        change, naming V(uio_pci_generic). The mode gives the device's DMA access to all memory; meant for test VMs.
    type: bool
    default: false
  record_dir:
    description: Where the records of bound devices are kept (one C(ADDRESS.json) per device).
    type: path
    default: /run/xdplab/pci_driver
  timeout:
    description: Seconds V(restored) waits for the device's network interfaces to come back.
    type: int
    default: 30
notes:
  - Needs root. The record is under C(/run) by default, so it goes with a reboot, as the binding does.
seealso:
  - module: xdplab.testbed.testpmd
"""

EXAMPLES = r"""
- name: Give the DUT's ingress port to DPDK (vfio-pci, no IOMMU in the VM)
  xdplab.testbed.pci_driver:
    address: "0000:00:04.0"
    driver: vfio-pci
    vfio_noiommu: true

- name: Give it back to the kernel driver it had
  xdplab.testbed.pci_driver:
    address: "0000:00:04.0"
    state: restored
"""

RETURN = r"""
address:
  description: The device's PCI address (lower case).
  returned: always
  type: str
  sample: "0000:00:04.0"
driver:
  description: The driver bound at the end (null when none is).
  returned: always
  type: str
  sample: vfio-pci
previous:
  description: The driver bound before this call (null when none was).
  returned: always
  type: str
  sample: virtio-pci
record:
  description: The record of the kernel's driver and interfaces before the first bind (null when none is kept).
  returned: always
  type: dict
  sample: {"address": "0000:00:04.0", "driver": "virtio-pci", "interfaces": ["ens4"]}
interfaces:
  description: The device's kernel network interfaces at the end ([] while a user-space driver has it).
  returned: always
  type: list
  elements: str
  sample: [ens4]
noiommu:
  description: Whether vfio's unsafe no-IOMMU mode is on (null when vfio is not loaded).
  returned: always
  type: bool
  sample: true
iommu_group:
  description: The device's IOMMU group at the end (vfio's no-IOMMU group when bound that way), or null.
  returned: always
  type: str
  sample: "0"
seconds:
  description: Seconds the bind (or the give-back with its wait for the interfaces) took.
  returned: always
  type: float
  sample: 0.4
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _pci as pci

SYS = "/sys"
NOIOMMU_PARAM = "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode"


class PciDriver:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {
            "changed": False,
            "address": self.p["address"],
            "driver": None,
            "previous": None,
            "record": None,
            "interfaces": [],
            "noiommu": None,
            "iommu_group": None,
            "seconds": 0.0,
        }

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def record_path(self):
        return os.path.join(self.p["record_dir"], self.result["address"] + ".json")

    def read_record(self):
        try:
            with open(self.record_path()) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            self.fail(f"record {self.record_path()} is not JSON ({exc}); remove it and bind the device by hand")

    @staticmethod
    def noiommu():
        try:
            with open(NOIOMMU_PARAM) as f:
                return f.read().strip() in ("Y", "1")
        except OSError:
            return None

    def modprobe(self, name, *args):
        rc, out, err = self.module.run_command(["modprobe", name, *args])
        if rc != 0:
            self.fail(f"modprobe {name} {' '.join(args)}: {(err or out).strip()} (is the kernel's module package installed?)")

    def load(self, driver):
        if driver == "vfio-pci" and self.p["vfio_noiommu"]:
            # a parameter of module vfio: at load, or through sysfs when it is loaded already
            if os.path.exists(NOIOMMU_PARAM):
                if not self.noiommu():
                    with open(NOIOMMU_PARAM, "w") as f:
                        f.write("1")
            else:
                self.modprobe("vfio", "enable_unsafe_noiommu_mode=1")
            if not self.noiommu():
                self.fail(
                    "vfio's enable_unsafe_noiommu_mode did not turn on (this kernel has no CONFIG_VFIO_NOIOMMU?); "
                    "use uio_pci_generic"
                )
        self.modprobe(pci.DRIVER_MODULES.get(driver, driver))
        if not os.path.isdir(os.path.join(SYS, "bus", "pci", "drivers", driver)):
            self.fail(f"driver {driver} is not registered with the PCI bus after modprobe (/sys/bus/pci/drivers/{driver})")

    def run(self):
        try:
            address = pci.normalize_address(self.p["address"])
        except ValueError as exc:
            self.fail(str(exc))
        self.result["address"] = address
        if not os.path.isdir(pci.device_dir(SYS, address)):
            self.fail(f"PCI device {address} is not on this host (not in /sys/bus/pci/devices; lspci -D lists them)")
        before = pci.current_driver(SYS, address)
        self.result.update(previous=before, driver=before, interfaces=pci.interfaces(SYS, address))
        record = self.read_record()
        self.result["record"] = record
        t0 = time.monotonic()
        if self.p["state"] == "bound":
            self.bound(address, before, record)
        else:
            self.restored(address, before, record)
        self.result["seconds"] = round(time.monotonic() - t0, 3)
        self.result["interfaces"] = pci.interfaces(SYS, address)
        self.result["noiommu"] = self.noiommu()
        self.result["iommu_group"] = pci.iommu_group(SYS, address)
        return self.result

    def bound(self, address, before, record):
        driver = self.p["driver"]
        if not driver:
            self.fail("state=bound needs driver (vfio-pci or uio_pci_generic)")
        if driver not in pci.USERSPACE_DRIVERS:
            self.fail(f"driver {driver!r} is not a user-space driver for DPDK (one of {', '.join(pci.USERSPACE_DRIVERS)})")
        if before == driver:
            return
        ifaces = pci.interfaces(SYS, address)
        try:
            with open("/proc/net/route") as f:
                routed = set(pci.default_route_interfaces(f.read())) & set(ifaces)
        except OSError:
            routed = set()
        if routed:
            self.fail(
                f"PCI device {address} is {', '.join(sorted(routed))}, which carries this host's default route: "
                f"binding it to {driver} would cut the host off (name the data port, not the management port)"
            )
        if driver == "vfio-pci" and self.p["vfio_noiommu"] and not os.path.exists(NOIOMMU_PARAM):
            built = pci.kernel_config_option(os.uname().release, "CONFIG_VFIO_NOIOMMU")
            if built is not None and built not in ("y", "m"):
                self.fail(
                    f"vfio_noiommu: this kernel ({os.uname().release}) is built without CONFIG_VFIO_NOIOMMU (its "
                    f"/boot/config says {built}), so vfio-pci cannot take {address} without an IOMMU; use uio_pci_generic"
                )
        if driver == "vfio-pci" and not self.p["vfio_noiommu"] and pci.iommu_group(SYS, address) is None:
            self.fail(
                f"PCI device {address} has no IOMMU group (no IOMMU on this host, e.g. a VM without a virtual IOMMU): "
                f"vfio-pci takes it only in vfio's unsafe no-IOMMU mode (vfio_noiommu: true), or use uio_pci_generic"
            )
        self.result["changed"] = True
        if self.module.check_mode:
            self.result["driver"] = driver
            return
        self.load(driver)
        if record is None:
            record = {"address": address, "driver": before, "interfaces": ifaces, "bound": driver}
            os.makedirs(self.p["record_dir"], exist_ok=True)
            with open(self.record_path(), "w") as f:
                json.dump(record, f)
            self.result["record"] = record
        try:
            now = pci.bind(SYS, address, driver)
        except OSError as exc:
            self.fail(f"binding {address} to {driver} failed: {exc} (dmesg says why)")
        self.result["driver"] = now
        if now != driver:
            self.fail(f"PCI device {address} is on {now or 'no driver'} after binding it to {driver} (dmesg says why)")

    def restored(self, address, before, record):
        target = (record or {}).get("driver") or self.p["driver"]
        if not target:
            # nothing recorded and nothing asked: leave it
            return
        wanted = (record or {}).get("interfaces") or []
        if before == target:
            if record is not None and not self.module.check_mode:
                os.unlink(self.record_path())
                self.result["changed"] = True
            return
        self.result["changed"] = True
        if self.module.check_mode:
            self.result["driver"] = target
            return
        self.modprobe(pci.DRIVER_MODULES.get(target, target))
        try:
            now = pci.bind(SYS, address, target)
        except OSError as exc:
            self.fail(f"giving {address} back to {target} failed: {exc} (dmesg says why)")
        self.result["driver"] = now
        if now != target:
            self.fail(f"PCI device {address} is on {now or 'no driver'} after giving it back to {target} (dmesg says why)")
        deadline = time.monotonic() + self.p["timeout"]
        while set(wanted) - set(pci.interfaces(SYS, address)) and time.monotonic() < deadline:
            time.sleep(0.2)
        missing = sorted(set(wanted) - set(pci.interfaces(SYS, address)))
        if missing:
            self.fail(
                f"PCI device {address} is back on {target} but its interface(s) {', '.join(missing)} did not come back "
                f"within {self.p['timeout']} s (it has {pci.interfaces(SYS, address) or 'none'})"
            )
        if record is not None:
            os.unlink(self.record_path())


def main():
    module = AnsibleModule(
        argument_spec={
            "address": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["bound", "restored"], "default": "bound"},
            "driver": {"type": "str"},
            "vfio_noiommu": {"type": "bool", "default": False},
            "record_dir": {"type": "path", "default": "/run/xdplab/pci_driver"},
            "timeout": {"type": "int", "default": 30},
        },
        required_if=[("state", "bound", ["driver"])],
        supports_check_mode=True,
    )
    module.exit_json(**PciDriver(module).run())


if __name__ == "__main__":
    main()
