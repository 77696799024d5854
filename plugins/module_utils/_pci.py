# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A PCI device's kernel driver through sysfs (module pci_driver): read it, bind another, give it back.

The binding is the kernel's own mechanism (what dpdk-devbind.py does): ``driver_override`` names the driver, the
device is unbound from the current one and ``drivers_probe`` lets the named driver take it; the override is cleared
afterwards, so a later probe (a driver reload, a rescan) follows the driver's own ID table again. Every path is
under ``root`` (``/sys`` on a host), so tests drive the functions with a tree of their own.
"""

from __future__ import annotations

import os
import re

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# drivers that hand the device to user space (DPDK): a device on one of them has no kernel interface
USERSPACE_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")
# the kernel module that provides a driver, where the names differ
DRIVER_MODULES = {"vfio-pci": "vfio-pci", "uio_pci_generic": "uio_pci_generic", "igb_uio": "igb_uio", "virtio-pci": "virtio_pci"}


def normalize_address(address):
    """``0000:00:04.0`` in lower case, or ValueError naming the form it must have."""
    text = (address or "").strip().lower()
    if not PCI_ADDRESS.match(text):
        raise ValueError(
            f"{address!r} is not a PCI address in domain:bus:slot.function form (e.g. 0000:00:04.0; lspci -D lists them)"
        )
    return text


def device_dir(root, address):
    return os.path.join(root, "bus", "pci", "devices", address)


def current_driver(root, address):
    """Name of the driver bound to the device (the ``driver`` link's target), or None when none is."""
    link = os.path.join(device_dir(root, address), "driver")
    if not os.path.islink(link):
        return None
    return os.path.basename(os.readlink(link))


def interfaces(root, address):
    """The kernel's network interfaces of the device (``net/`` under it, or under the virtio device a virtio PCI
    device carries: ``virtioN/net/``): [] when a user-space driver has it."""
    dev = device_dir(root, address)
    try:
        children = sorted(n for n in os.listdir(dev) if n.startswith("virtio"))
    except OSError:
        return []
    out = []
    for net in [os.path.join(dev, "net")] + [os.path.join(dev, c, "net") for c in children]:
        if os.path.isdir(net):
            out.extend(os.listdir(net))
    return sorted(out)


def iommu_group(root, address):
    """The device's IOMMU group number, or None when it has none (no IOMMU, and no vfio no-IOMMU group yet)."""
    link = os.path.join(device_dir(root, address), "iommu_group")
    if not os.path.islink(link):
        return None
    return os.path.basename(os.readlink(link))


def default_route_interfaces(route_text):
    """Interfaces that carry an IPv4 default route, from the text of ``/proc/net/route``."""
    out = set()
    for line in route_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
            out.add(fields[0])
    return sorted(out)


def kernel_config_option(release, option, boot="/boot"):
    """The value of a kernel option in ``/boot/config-RELEASE`` (``y``, ``m``, ``not set``), or None when the file
    cannot be read."""
    try:
        with open(os.path.join(boot, "config-" + release)) as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(option + "="):
            return line.split("=", 1)[1].strip()
        if line.strip() == f"# {option} is not set":
            return "not set"
    return "not set"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def bind(root, address, driver):
    """Bind the device to ``driver`` (its module loaded already): override, unbind, probe, clear the override.

    Returns the driver bound afterwards (the caller checks it is ``driver``)."""
    dev = device_dir(root, address)
    _write(os.path.join(dev, "driver_override"), driver)
    try:
        if current_driver(root, address) is not None:
            _write(os.path.join(dev, "driver", "unbind"), address)
        _write(os.path.join(root, "bus", "pci", "drivers_probe"), address)
    finally:
        # an empty line clears it (the kernel strips the newline)
        _write(os.path.join(dev, "driver_override"), "\n")
    return current_driver(root, address)
