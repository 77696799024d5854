# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _cpus
from ansible_collections.xdplab.testbed.plugins.modules import testbed_facts as tf


@pytest.mark.parametrize(
    "release,commit",
    [
        ("4.17.0-rc7-bpf-next-xdp-paper01-02308-g75d4e704fa8d", "75d4e704fa8d"),
        ("6.1.0-rc2-00012-gabcdef1-dirty", "abcdef1"),
        ("6.1.0-18-amd64", None),
        ("5.15.0-91-generic", None),
        ("6.18.44-fc-v657", None),
    ],
)
def test_kernel_commit(release, commit):
    assert tf.kernel_commit(release) == commit


def test_cpu_list_and_model():
    assert tf.parse_cpu_list is _cpus.parse_cpu_list  # the one CPU-list helper
    assert tf.parse_cpu_list("0-3,5") == [0, 1, 2, 3, 5]
    assert tf.cpu_model("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU E5-1650 v4 @ 3.60GHz\n") == (
        "Intel(R) Xeon(R) CPU E5-1650 v4 @ 3.60GHz"
    )


def test_tool_versions():
    assert tf.tool_version("Debian clang version 14.0.6\nTarget: x86_64", "clang version") == "14.0.6"
    assert tf.tool_version("bpftool v7.1.0\nusing libbpf v1.1\n", "bpftool") == "7.1.0"
    assert tf.tool_version("ip utility, iproute2-6.1.0, libbpf 1.1.2", "iproute2-") == "6.1.0"
    assert tf.tool_version("ethtool version 6.1", "ethtool version") == "6.1"
    assert tf.tool_version(None, "x") is None
