# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils/_pci (module pci_driver): reading and binding a PCI device's driver through sysfs.

The tree here is built by the test (symlinks and plain files laid out as /sys has them); binding writes to plain
files, so the test checks what was written where and in which order, not what a kernel would do with it. The real
bind and give-back ran on the VM lab's DUT (tests/integration/test_vm_lab.py, docs/VM_LAB.md)."""

import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _pci as pci

ADDR = "0000:00:04.0"


def read(path):
    with open(path) as f:
        return f.read()


def tree(tmp_path, driver="virtio-pci", ifaces=("ens4",), group=None):
    root = tmp_path / "sys"
    dev = root / "bus" / "pci" / "devices" / ADDR
    dev.mkdir(parents=True)
    (dev / "driver_override").write_text("(null)\n")
    (root / "bus" / "pci" / "drivers_probe").write_text("")
    if driver:
        drv = root / "bus" / "pci" / "drivers" / driver
        drv.mkdir(parents=True)
        (drv / "unbind").write_text("")
        os.symlink(drv, dev / "driver")
    if ifaces:
        for name in ifaces:
            (dev / "net" / name).mkdir(parents=True)
    if group is not None:
        g = root / "kernel" / "iommu_groups" / group
        g.mkdir(parents=True)
        os.symlink(g, dev / "iommu_group")
    return str(root)


@pytest.mark.parametrize("text", ["0000:00:04.0", "0000:3B:00.1", " 0000:00:1f.7 "])
def test_address_accepted_and_lowered(text):
    assert pci.normalize_address(text) == text.strip().lower()


@pytest.mark.parametrize("text", ["00:04.0", "0000:00:04", "0000:00:04.8", "eth0", "", None])
def test_address_refused_naming_the_form(text):
    with pytest.raises(ValueError, match=r"domain:bus:slot\.function"):
        pci.normalize_address(text)


def test_reads_driver_interfaces_and_group(tmp_path):
    root = tree(tmp_path, group="3")
    assert pci.current_driver(root, ADDR) == "virtio-pci"
    assert pci.interfaces(root, ADDR) == ["ens4"]
    assert pci.iommu_group(root, ADDR) == "3"


def test_unbound_device_without_net_or_group(tmp_path):
    root = tree(tmp_path, driver=None, ifaces=())
    assert pci.current_driver(root, ADDR) is None
    assert pci.interfaces(root, ADDR) == []
    assert pci.iommu_group(root, ADDR) is None


def test_bind_overrides_unbinds_probes_and_clears(tmp_path):
    root = tree(tmp_path)
    dev = os.path.join(root, "bus", "pci", "devices", ADDR)
    # the test's tree has no kernel: the driver link stays, so bind returns what the link says
    assert pci.bind(root, ADDR, "vfio-pci") == "virtio-pci"
    assert read(os.path.join(root, "bus", "pci", "drivers", "virtio-pci", "unbind")) == ADDR
    assert read(os.path.join(root, "bus", "pci", "drivers_probe")) == ADDR
    assert read(os.path.join(dev, "driver_override")) == "\n"


def test_bind_of_a_device_without_driver_only_probes(tmp_path):
    root = tree(tmp_path, driver=None, ifaces=())
    assert pci.bind(root, ADDR, "vfio-pci") is None
    assert read(os.path.join(root, "bus", "pci", "drivers_probe")) == ADDR


def test_default_route_interfaces_from_proc_net_route():
    # /proc/net/route of the VM lab's DUT (management NIC ens3 on qemu's user-mode network, two data NICs)
    route = (
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "ens3\t00000000\t0202000A\t0003\t0\t0\t1024\t00000000\t0\t0\t0\n"
        "ens3\t0002000A\t00000000\t0001\t0\t0\t1024\t00FFFFFF\t0\t0\t0\n"
        "ens4\t000012C6\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0\n"
        "ens5\t040012C6\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0\n"
    )
    assert pci.default_route_interfaces(route) == ["ens3"]


def test_kernel_config_option(tmp_path):
    # the lines of Debian 12's /boot/config-6.1.0-57-amd64 in the VM lab's DUT (CONFIG_VFIO_NOIOMMU not set)
    (tmp_path / "config-6.1.0-57-amd64").write_text("CONFIG_VFIO=m\n# CONFIG_VFIO_NOIOMMU is not set\nCONFIG_UIO_PCI_GENERIC=m\n")
    assert pci.kernel_config_option("6.1.0-57-amd64", "CONFIG_VFIO_NOIOMMU", boot=str(tmp_path)) == "not set"
    assert pci.kernel_config_option("6.1.0-57-amd64", "CONFIG_UIO_PCI_GENERIC", boot=str(tmp_path)) == "m"
    assert pci.kernel_config_option("6.1.0-57-amd64", "CONFIG_OTHER", boot=str(tmp_path)) == "not set"
    assert pci.kernel_config_option("5.10.0", "CONFIG_VFIO_NOIOMMU", boot=str(tmp_path)) is None


def test_interfaces_of_a_virtio_device(tmp_path):
    # the VM lab's DUT: /sys/bus/pci/devices/0000:00:04.0/virtio1/net/ens4 (virtio-pci carries virtio1 on virtio_net)
    root = tree(tmp_path, ifaces=())
    os.makedirs(os.path.join(root, "bus", "pci", "devices", ADDR, "virtio1", "net", "ens4"))
    assert pci.interfaces(root, ADDR) == ["ens4"]
