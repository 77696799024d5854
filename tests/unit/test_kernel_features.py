# SPDX-License-Identifier: GPL-3.0-or-later
"""Which experiment needs which kernel feature (_kernel_features), and host_preflight refusing a kernel that
lacks one, naming it, before anything changes. The detection against this machine's kernel is at the end."""

import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _kernel_features as kf
from ansible_collections.xdplab.testbed.plugins.modules import host_preflight as hp


class PaperKernel(kf.KernelFeatures):
    """The paper's 4.17 bpf-next, by release only (no probe runs): no BTF, no global data, no live frames."""

    def __init__(self):
        super().__init__(release="4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d")

    def _detect(self, name):
        if name == "btf":
            return False, "/sys/kernel/btf/vmlinux is missing"
        return self._by_release(name)


def preflight(role, **params):
    base = {"host": "dut", "role": role, "backend": None, "matrix": None, "kernel_features": []}
    check = hp.HostPreflight(dict(base, **params), root="/nonexistent")
    return check, check.check_kernel(PaperKernel())


@pytest.mark.parametrize(
    ("release", "expected"),
    [("6.1.0-18-amd64", (6, 1)), ("4.17.0-rc7-bpf-next", (4, 17)), ("5.18.19", (5, 18)), ("junk", (0, 0))],
)
def test_release_tuple(release, expected):
    assert kf.release_tuple(release) == expected


def test_the_xdp_generator_on_the_papers_kernel_names_live_frames_and_global_data():
    check, report = preflight("generator", backend="xdp_live")
    messages = [p["message"] for p in check.problems]
    assert messages == [
        "dut: kernel: 4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d lacks BPF_PROG_RUN live frames "
        "(BPF_F_TEST_XDP_LIVE_FRAMES), Linux 5.18+ (from the release: it came in 5.18), which generator backend "
        "xdp_live need(s): boot a newer kernel (role xdplab.testbed.kernel)",
        "dut: kernel: 4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d lacks global data (.rodata/.data maps "
        "addressed by programs), Linux 5.2+ (from the release: it came in 5.2), which generator backend xdp_live "
        "need(s): boot a newer kernel (role xdplab.testbed.kernel)",
    ]
    assert all(p["field"] == "kernel" for p in check.problems)
    assert report["features"] == {"live_frames": False, "global_data": False}


def test_af_xdp_and_redirect_need_what_the_dut_program_alone_does_not():
    matrix = {"cpus": [1], "axes": {"system": ["xdp", "af_xdp_copy"], "action": ["drop", "redirect"], "cores": [1]},
              "impls": {"xdp": "xdp", "af_xdp_copy": "af_xdp"}, "systems": []}  # fmt: skip
    check, report = preflight("dut", matrix=matrix)
    lacking = {p["message"].split(" lacks ")[1].split(",")[0]: p["message"] for p in check.problems}
    assert set(report["features"]) == {"xskmap", "xsk_need_wakeup", "global_data"}
    # by release 4.17 has no XSKMAP (4.18); on a real kernel it is probed (bpf-next of June 2018 may have it)
    assert report["features"]["xskmap"] is False
    assert "AF_XDP need-wakeup (XDP_USE_NEED_WAKEUP)" in lacking
    global_data = lacking["global data (.rodata/.data maps addressed by programs)"]
    assert "system impl af_xdp and XDP action redirect need(s)" in global_data


def test_drop_on_the_dut_needs_nothing_the_papers_kernel_lacks():
    matrix = {"cpus": [1], "axes": {"system": ["xdp"], "action": ["drop", "tx"], "cores": [1]}, "impls": {"xdp": "xdp"},
              "systems": []}  # fmt: skip
    check, report = preflight("dut", matrix=matrix)
    assert check.problems == [] and report["features"] == {}


def test_listed_and_unknown_features():
    check, _report = preflight("dut", kernel_features=["bpf_stats", "teleport"])
    assert [p["field"] for p in check.problems] == ["kernel_features", "kernel"]
    assert "unknown kernel feature teleport; known: btf, global_data" in check.problems[0]["message"]
    assert "lacks BPF run-time statistics (BPF_ENABLE_STATS), Linux 5.8+" in check.problems[1]["message"]
    assert "which the inventory (kernel_features) need(s)" in check.problems[1]["message"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the probes load programs and create maps (root)")
def test_this_kernel_has_every_feature_by_probe():
    kernel = kf.KernelFeatures()
    assert all(kernel.has(name) for name in kf.FEATURES), kernel.report()
    assert kernel.how["global_data"].startswith("probe:") and kernel.how["live_frames"].startswith("probe:")
    assert kernel.how["devmap"] == "probe: libbpf_probe_bpf_map_type"
