#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: testbed_facts
short_description: Provenance of a lab host as data (kernel, CPUs, tools, interfaces, attached XDP programs)
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Collects what a measured number depends on, so every trial record can carry it (Contract 4 of
    docs/ARCHITECTURE.md), namely kernel release, version string, kernel git commit (from a C(-gHASH) release
    suffix such as C(4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d)), kernel command line, CPU model,
    count and online list, versions of clang, bpftool, libbpf, iproute2 and ethtool.
  - For each interface in O(interfaces) also driver, driver version and firmware (C(ethtool -i)), channel
    counts (C(ethtool -l)), MTU, MAC address and the attached XDP program (id, tag, name, mode).
  - Missing tools are reported as null, not as failures. An interface that does not exist fails the task.
extends_documentation_fragment:
  - xdplab.testbed.attributes.read_only
options:
  interfaces:
    description: Interfaces to describe, by name, in the module's network namespace.
    type: list
    elements: str
    default: []
requirements:
  - libbpf.so.1 for the attached XDP program's name (id and tag come from C(ip -j -d link) otherwise)
"""

EXAMPLES = r"""
- name: Record the DUT's provenance
  xdplab.testbed.testbed_facts:
    interfaces: [dut0]
  register: dut_facts

- name: Show the kernel commit the numbers were taken on
  ansible.builtin.debug:
    msg: "{{ dut_facts.kernel.release }} ({{ dut_facts.kernel.commit }})"
"""

RETURN = r"""
kernel:
  description: Running kernel.
  returned: always
  type: dict
  contains:
    release:
      description: C(uname -r).
      type: str
    version:
      description: C(uname -v).
      type: str
    commit:
      description: Abbreviated git commit from a C(-gHASH) suffix of the release, null if there is none.
      type: str
    cmdline:
      description: Contents of /proc/cmdline.
      type: str
  sample: {release: 4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d, version: "#26 SMP PREEMPT",
           commit: 75d4e704fa8d, cmdline: "BOOT_IMAGE=/vmlinuz ro quiet"}
cpu:
  description: CPU model, count and the online list (as in /sys/devices/system/cpu/online).
  returned: always
  type: dict
  sample: {model: "Intel(R) Xeon(R) CPU E5-1650 v4 @ 3.60GHz", count: 6, online: "0-5", online_list: [0, 1, 2, 3, 4, 5]}
machine:
  description:
    - What the host is, from DMI (C(/sys/class/dmi/id)) and the CPU flags; a VM says so (vendor QEMU, the
      C(hypervisor) flag). Null values where the host does not tell.
  returned: always
  type: dict
  sample: {vendor: QEMU, product: Standard PC (i440FX + PIIX, 1996), hypervisor: true, virtualization: qemu}
tools:
  description: Tool versions (null when the tool is missing).
  returned: always
  type: dict
  sample: {clang: 14.0.6, bpftool: 7.1.0, libbpf: 1.1.2, iproute2: 6.1.0, ethtool: "6.1"}
interfaces:
  description: One entry per requested interface.
  returned: always
  type: list
  elements: dict
  sample:
    - name: dut0
      ifindex: 3
      driver: veth
      driver_version: "1.0"
      firmware_version: ""
      bus_info: ""
      channels: {max: {rx: 2, tx: 2, other: null, combined: null}, current: {rx: 2, tx: 2, other: null, combined: null}}
      mtu: 1500
      mac: 02:00:00:00:00:01
      xdp: {id: 139, tag: 78fa086e301da3eb, name: xdp_bench_drop, mode: native}
hostname:
  description: Host name (uname -n).
  returned: always
  type: str
  sample: broadwell
"""

import json
import os
import re
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _ethtool as ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf
from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import parse_cpu_list

GIT_SUFFIX = re.compile(r"-g([0-9a-f]{7,40})(?:[-+].*|\+)?$")
VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def kernel_commit(release):
    """'4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d' -> '75d4e704fa8d' (None without -gHASH)."""
    m = GIT_SUFFIX.search(release or "")
    return m.group(1) if m else None


def cpu_model(cpuinfo):
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("model name", "Model", "cpu model", "Hardware"):
            return value.strip()
    return None


def tool_version(output, pattern=None):
    """First dotted version in ``output`` (after ``pattern`` if given)."""
    if not output:
        return None
    if pattern:
        m = re.search(pattern + r"\s*v?(\d+\.\d+(?:\.\d+)?)", output)
        return m.group(1) if m else None
    m = VERSION.search(output)
    return m.group(1) if m else None


def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


class TestbedFacts:
    def __init__(self, module):
        self.module = module
        self.result = {"changed": False}

    def run_tool(self, argv):
        binary = self.module.get_bin_path(argv[0])
        if not binary:
            return None
        rc, out, err = self.module.run_command([binary, *argv[1:]])
        return (out or "") + (err or "") if rc == 0 else None

    def kernel(self):
        uname = os.uname()
        self.result["hostname"] = uname.nodename
        return {
            "release": uname.release,
            "version": uname.version,
            "commit": kernel_commit(uname.release),
            "cmdline": _read("/proc/cmdline"),
        }

    def cpu(self):
        online = _read("/sys/devices/system/cpu/online")
        return {
            "model": cpu_model(_read("/proc/cpuinfo") or ""),
            "count": os.cpu_count(),
            "online": online,
            "online_list": parse_cpu_list(online) if online else None,
        }

    def machine(self):
        flags = ""
        for line in (_read("/proc/cpuinfo") or "").splitlines():
            if line.startswith("flags"):
                flags = line.partition(":")[2]
                break
        virt = self.run_tool(["systemd-detect-virt"])
        return {
            "vendor": _read("/sys/class/dmi/id/sys_vendor"),
            "product": _read("/sys/class/dmi/id/product_name"),
            "hypervisor": "hypervisor" in flags.split(),
            # systemd's guess of the hypervisor (it says kvm for a qemu TCG guest too); null on bare metal
            "virtualization": virt.strip() if virt else None,
        }

    def tools(self):
        libbpf_version = None
        try:
            fn = libbpf.load_library().libbpf_version_string
            fn.restype = libbpf.ctypes.c_char_p
            libbpf_version = tool_version(fn().decode())
        except (libbpf.LibbpfError, AttributeError):
            pass
        # libbpf_version_string() gives only major.minor; the soname target has the patch level
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
            path = os.path.realpath(os.path.join(d, "libbpf.so.1"))
            if os.path.exists(path):
                libbpf_version = tool_version(os.path.basename(path).replace("libbpf.so.", "")) or libbpf_version
                break
        return {
            "clang": tool_version(self.run_tool(["clang", "--version"]), "clang version"),
            "bpftool": tool_version(self.run_tool(["bpftool", "version"]), "bpftool"),
            "libbpf": libbpf_version,
            "iproute2": tool_version(self.run_tool(["ip", "-V"]), "iproute2-"),
            "ethtool": tool_version(self.run_tool(["ethtool", "--version"]), "ethtool version"),
        }

    def interface(self, name):
        try:
            ifindex = socket.if_nametoindex(name)
        except OSError:
            names = ", ".join(n for _i, n in socket.if_nameindex())
            self.module.fail_json(
                msg=f"interface {name} does not exist in this network namespace; interfaces here: {names}",
                **self.result,
            )
        entry = {"name": name, "ifindex": ifindex, "mtu": None, "mac": None, "xdp": None}
        out = self.run_tool(["ip", "-j", "-d", "link", "show", "dev", name])
        if out:
            try:
                link = json.loads(out)[0]
                entry["mtu"], entry["mac"] = link.get("mtu"), link.get("address")
                xdp = link.get("xdp") or {}
                if xdp.get("prog"):
                    entry["xdp"] = {"id": xdp["prog"].get("id"), "tag": xdp["prog"].get("tag"), "name": None}
            except (ValueError, IndexError, KeyError):
                pass
        if entry["mtu"] is None:
            mtu = _read(f"/sys/class/net/{name}/mtu")
            entry["mtu"] = int(mtu) if mtu and mtu.isdigit() else None
            entry["mac"] = _read(f"/sys/class/net/{name}/address")
        try:
            prog_id, mode = libbpf.attached_program(ifindex)
            if prog_id:
                info = libbpf.prog_info(prog_id)
                entry["xdp"] = {"id": prog_id, "tag": info["tag"], "name": info["name"], "mode": mode}
            else:
                entry["xdp"] = None
        except libbpf.LibbpfError as exc:
            self.module.warn(f"cannot read the XDP program of {name} through libbpf: {exc}")
        runner = self.module.run_command
        binary = self.module.get_bin_path("ethtool")
        entry.update({"driver": None, "driver_version": None, "firmware_version": None, "bus_info": None})
        entry["channels"] = None
        if binary:
            try:
                info = ethtool.driver_info(runner, name, ethtool=binary)
                entry.update(
                    {
                        "driver": info.get("driver"),
                        "driver_version": info.get("version"),
                        "firmware_version": info.get("firmware-version"),
                        "bus_info": info.get("bus-info"),
                    }
                )
            except ethtool.EthtoolError as exc:
                self.module.warn(str(exc))
            try:
                entry["channels"] = ethtool.channels(runner, name, ethtool=binary)
            except ethtool.EthtoolError:
                entry["channels"] = None  # many virtual drivers do not implement -l
        return entry

    def run(self):
        self.result["kernel"] = self.kernel()
        self.result["cpu"] = self.cpu()
        self.result["machine"] = self.machine()
        self.result["tools"] = self.tools()
        self.result["interfaces"] = [self.interface(n) for n in self.module.params["interfaces"]]
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={"interfaces": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True,
    )
    module.exit_json(**TestbedFacts(module).run())


if __name__ == "__main__":
    main()
