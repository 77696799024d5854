# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The kernel features the lab's experiments need, and how to tell whether the running kernel has them.

A feature is probed where a probe is cheap and certain (a path, loading a 4-instruction program, creating a
map, one BPF_PROG_RUN); otherwise the kernel release is compared with the release the feature came in.
docs/KERNEL.md ("Kernel features of the experiments") is the human-readable copy of FEATURES and NEEDS.
"""

from __future__ import annotations

import os
import re

from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

# name -> (what it is, the first Linux release that has it, how it is detected: probe or release)
FEATURES = {
    "btf": ("kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)", (5, 4), "probe"),
    "global_data": ("global data (.rodata/.data maps addressed by programs)", (5, 2), "probe"),
    "live_frames": ("BPF_PROG_RUN live frames (BPF_F_TEST_XDP_LIVE_FRAMES)", (5, 18), "probe"),
    "xsk_need_wakeup": ("AF_XDP need-wakeup (XDP_USE_NEED_WAKEUP)", (5, 3), "release"),
    "devmap": ("BPF_MAP_TYPE_DEVMAP (XDP_REDIRECT through a map)", (4, 14), "probe"),
    "cpumap": ("BPF_MAP_TYPE_CPUMAP (XDP_REDIRECT to another CPU)", (4, 15), "probe"),
    "xskmap": ("BPF_MAP_TYPE_XSKMAP (XDP_REDIRECT to AF_XDP sockets)", (4, 18), "probe"),
    "redirect_map_broadcast": ("bpf_redirect_map flags BPF_F_BROADCAST and BPF_F_EXCLUDE_INGRESS", (5, 14), "release"),
    "bpf_stats": ("BPF run-time statistics (BPF_ENABLE_STATS)", (5, 8), "release"),
}

# What needs which feature: the generator backends, the DUT's implementations (experiment_systems' impl)
# and the XDP actions that have no fallback. xdp_bench's drop/pass/tx have a non-CO-RE variant, so the
# DUT's "xdp" needs neither BTF nor global data; redirect does (redirect_ifindex is set at load time).
NEEDS = {
    "backend": {
        "xdp_live": ["live_frames", "global_data"],
    },
    "impl": {
        "af_xdp": ["xskmap", "xsk_need_wakeup", "global_data"],
    },
    "action": {
        "redirect": ["global_data"],
    },
}

BPF_MAP_TYPE_DEVMAP = 14
BPF_MAP_TYPE_CPUMAP = 16
BPF_MAP_TYPE_XSKMAP = 17
MAP_TYPES = {"devmap": BPF_MAP_TYPE_DEVMAP, "cpumap": BPF_MAP_TYPE_CPUMAP, "xskmap": BPF_MAP_TYPE_XSKMAP}


def release_tuple(release):
    """(major, minor) of a kernel release string such as 6.1.0-18-amd64 or 4.17.0-rc7-bpf-next."""
    found = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def since(name):
    return ".".join(str(n) for n in FEATURES[name][1])


def describe(name):
    return f"{FEATURES[name][0]}, Linux {since(name)}+"


class KernelFeatures:
    """Detects features of the running kernel once each; ``has(name)`` -> bool, ``how[name]`` says how."""

    def __init__(self, release=None, root="/"):
        self.release = release or os.uname().release
        self.root = root
        self.found = {}
        self.how = {}

    def has(self, name):
        if name not in self.found:
            self.found[name], self.how[name] = self._detect(name)
        return self.found[name]

    def _by_release(self, name):
        return release_tuple(self.release) >= FEATURES[name][1], f"from the release: it came in {since(name)}"

    def _detect(self, name):
        if name == "btf":
            path = os.path.join(self.root, libbpf.BTF_VMLINUX.lstrip("/"))
            return os.path.exists(path), f"{libbpf.BTF_VMLINUX} exists"
        if FEATURES[name][2] == "release":
            return self._by_release(name)
        try:
            if name == "global_data":
                return libbpf.probe_global_data(), "probe: a program storing into an array map's value"
            if name == "live_frames":
                return libbpf.probe_live_frames(), "probe: BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES"
            if name in MAP_TYPES:
                return libbpf.probe_map_type(MAP_TYPES[name]), "probe: libbpf_probe_bpf_map_type"
        except libbpf.LibbpfError as exc:
            found, how = self._by_release(name)
            return found, f"{how} (probe failed: {exc})"
        return self._by_release(name)

    def report(self):
        return {"release": self.release, "features": dict(self.found), "how": dict(self.how)}


def needed(backend=None, impls=(), actions=()):
    """[(feature, what needs it)] for a generator backend, DUT implementations and XDP actions."""
    out = []
    for kind, values in (("backend", [backend] if backend else []), ("impl", impls), ("action", actions)):
        for value in values:
            for feature in NEEDS[kind].get(value, []):
                label = {"backend": f"generator backend {value}", "impl": f"system impl {value}"}.get(kind)
                out.append((feature, label or f"XDP action {value}"))
    return out
